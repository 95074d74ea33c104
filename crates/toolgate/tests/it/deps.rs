//! The test dependencies installed by `scripts/install-test-deps`, as these tests use them.
//!
//! Where each is, and the failure that names it when it is missing, are
//! `toolgate_testkit::deps`'s (re-exported here), shared with the other crates' tests.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
pub use toolgate_testkit::deps::*;

/// A test client script under `tests/clients` (tracked in the repository).
pub fn client_script(name: &str) -> PathBuf {
    let path = repo_root().join("tests/clients").join(name);
    assert!(path.is_file(), "{} is missing from the repository", path.display());
    path
}

/// A `[servers.NAME]` table running npm package bin `bin` with `args` and `env` under
/// [`node`]; `required`, so that `serve` waits for it however slowly Node starts (see
/// `support::fixture_server`).
pub fn npm_stdio_server(name: &str, bin: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut all_args = vec![npm_bin(bin).to_string_lossy().into_owned()];
    all_args.extend(args.iter().map(|a| a.to_string()));
    let env: Vec<String> = env.iter().map(|(k, v)| format!("{k} = {v:?}")).collect();
    format!(
        "[servers.{name}]\ncommand = {:?}\nargs = {}\nenv = {{ {} }}\nrequired = true\n",
        node().to_string_lossy(),
        serde_json::to_string(&all_args).expect("json"),
        env.join(", ")
    )
}

/// A port that was free a moment ago, for servers that only take a port number.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// `server-everything` (streamableHttp or sse) on a free port; it binds every interface, so
/// only its 127.0.0.1 address is used.
pub struct EverythingServer {
    child: Child,
    pub url: String,
    pub port: u16,
}

impl EverythingServer {
    pub async fn start(mode: &str) -> Self {
        Self::start_on(mode, free_port()).await
    }

    pub async fn start_on(mode: &str, port: u16) -> Self {
        let mut child = Command::new(node())
            .arg(npm_bin("mcp-server-everything"))
            .arg(mode)
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn server-everything");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let ready = format!("port {port}");
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let line = tokio::select! {
                    line = stdout.next_line() => line,
                    line = stderr.next_line() => line,
                };
                match line.expect("read server output") {
                    Some(line) if line.contains(&ready) => break,
                    Some(_) => continue,
                    None => panic!("server-everything exited before listening"),
                }
            }
        })
        .await
        .expect("server-everything listening in time");
        // Keep reading: node dies of EPIPE when it logs into a closed pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = stdout.next_line().await {} });
        tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
        let path = if mode == "sse" { "sse" } else { "mcp" };
        EverythingServer { child, url: format!("http://127.0.0.1:{port}/{path}"), port }
    }

    /// Stops it (SIGKILL) and waits until it is gone.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}
