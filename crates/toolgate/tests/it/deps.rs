//! Where the test dependencies installed by `scripts/install-test-deps` are.
//!
//! `scripts/test` exports their paths; a bare `cargo test` finds them in `tests/deps/` of the
//! repository. When they are missing the tests fail and say how to install them: a test that
//! quietly skips proves nothing. The one exception is Chromium outside CI ([`chromium`]): a
//! system package that only root can install, so its tests skip there, saying so.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn require(path: PathBuf, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} not found at {}: run scripts/install-test-deps (scripts/test does)",
        path.display()
    );
    path
}

/// The npm install folder (holding `node_modules`).
pub fn npm_dir() -> PathBuf {
    let dir = std::env::var_os("TOOLGATE_TEST_NPM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("tests/deps/npm"));
    require(dir.join("node_modules"), "the npm test dependencies");
    dir
}

/// `node` for the npm servers and the TypeScript client.
pub fn node() -> PathBuf {
    std::env::var_os("TOOLGATE_TEST_NODE").map(PathBuf::from).unwrap_or_else(|| "node".into())
}

/// An npm package's bin script.
pub fn npm_bin(name: &str) -> PathBuf {
    require(npm_dir().join("node_modules/.bin").join(name), name)
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

/// The Python interpreter of the venv with the MCP Python SDK.
pub fn python() -> PathBuf {
    let python = std::env::var_os("TOOLGATE_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("tests/deps/python/venv/bin/python"));
    require(python, "the Python MCP SDK venv")
}

/// A console script of the venv with the official Python MCP servers (`mcp-server-time`, ...).
pub fn python_server_bin(name: &str) -> PathBuf {
    let venv = std::env::var_os("TOOLGATE_TEST_PYTHON_SERVERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("tests/deps/python-servers/venv"));
    require(venv.join("bin").join(name), name)
}

/// A test client script under `tests/clients`.
pub fn client_script(name: &str) -> PathBuf {
    require(repo_root().join("tests/clients").join(name), name)
}

/// Debian's headless-capable Chromium for the browser tests: `$TOOLGATE_TEST_CHROMIUM`, or
/// where the `chromium` package puts it. It is a system package, which `scripts/install-test-deps`
/// can install only as root with apt-get, so outside CI a machine without it skips those tests,
/// saying why (`None`); in CI (`$CI` set) it is missing only when the install step failed, and
/// the tests fail saying how to install it.
pub fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("TOOLGATE_TEST_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/usr/bin/chromium".into());
    if path.exists() {
        return Some(path);
    }
    let how = "scripts/install-test-deps installs it as root with `apt-get install \
               --no-install-recommends chromium`, or set TOOLGATE_TEST_CHROMIUM to a Chromium";
    let in_ci = std::env::var_os("CI").is_some_and(|ci| !ci.is_empty());
    assert!(!in_ci, "Chromium not found at {}: {how}", path.display());
    eprintln!("skipped: Chromium not found at {}: {how}", path.display());
    None
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
