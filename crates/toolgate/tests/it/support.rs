//! Starting toolgate and its upstreams as real processes, and talking to them.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long a process may take to say it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

pub type Client = RunningService<RoleClient, ()>;

/// The `toolgate` binary under test.
pub fn toolgate_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolgate"))
}

/// The `toolgate-fixture` binary (toolgate-testkit's full fixture server), the upstream of
/// these tests. `cargo build --workspace --bins` builds it next to `toolgate` (scripts/test
/// does); `$TOOLGATE_FIXTURE_BIN` overrides where it is looked for.
pub fn fixture_bin() -> PathBuf {
    toolgate_testkit::fixture_bin()
}

/// A temporary folder holding a config file.
pub struct ConfigDir {
    dir: tempfile::TempDir,
}

impl ConfigDir {
    /// Writes `toolgate.toml` with `text`.
    pub fn new(text: &str) -> Self {
        Self::with_file("toolgate.toml", text)
    }

    /// Writes `name` with `text`.
    pub fn with_file(name: &str, text: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join(name), text).expect("write config");
        ConfigDir { dir }
    }

    /// The config file's path.
    pub fn path(&self) -> PathBuf {
        let mut entries = std::fs::read_dir(self.dir.path()).expect("read dir");
        entries.next().expect("one file").expect("entry").path()
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// A TOML string literal.
pub fn toml_str(text: &str) -> String {
    format!("{text:?}")
}

/// A `[servers.NAME]` table for the fixture upstream over `transport`. It is `required`, so
/// that `serve` waits for it however slowly the machine starts it: a test that calls its
/// tools must not depend on it being up within `startup_wait` (2 s), which a loaded machine
/// does not promise. Over stdio it inherits `RUST_LOG` (`env_pass`), so that its `info`
/// lines (`slow: cancelled`) reach toolgate's log when a test sets it.
pub fn fixture_server(name: &str, transport: &str, url: Option<&str>) -> String {
    match transport {
        "stdio" => format!(
            "[servers.{name}]\ncommand = {}\nenv_pass = [\"RUST_LOG\"]\nrequired = true\n",
            toml_str(&fixture_bin().to_string_lossy())
        ),
        "http" => format!(
            "[servers.{name}]\nurl = {}\ntransport = \"streamable-http\"\nrequired = true\n",
            toml_str(url.expect("url"))
        ),
        "sse" => {
            format!(
                "[servers.{name}]\nurl = {}\ntransport = \"sse\"\nrequired = true\n",
                toml_str(url.expect("url"))
            )
        }
        other => panic!("unknown transport {other}"),
    }
}

/// A config folder: `toolgate.toml` serving the fixture as `fx` (then `extra`), and its
/// script folder, `.toolgate/scripts`.
pub struct ScriptFolder {
    dir: tempfile::TempDir,
}

impl ScriptFolder {
    pub fn new(extra: &str) -> ScriptFolder {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = format!("{}\n{extra}", fixture_server("fx", "stdio", None));
        std::fs::write(dir.path().join("toolgate.toml"), config).expect("write config");
        std::fs::create_dir_all(dir.path().join(".toolgate/scripts")).expect("script folder");
        ScriptFolder { dir }
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn config(&self) -> PathBuf {
        self.dir.path().join("toolgate.toml")
    }

    pub fn script(&self, name: &str) -> PathBuf {
        self.dir.path().join(".toolgate/scripts").join(name)
    }

    /// Writes a script the way editors save: a temporary file renamed over the old one.
    pub fn save(&self, name: &str, text: &str) {
        let path = self.script(name);
        let temporary = path.with_extension("rn.tmp");
        std::fs::write(&temporary, text).expect("write");
        std::fs::rename(&temporary, &path).expect("rename");
    }
}

/// The fixture served by `toolgate-fixture` on HTTP or legacy SSE.
pub struct FixtureUpstream {
    child: Child,
    pub url: String,
}

impl FixtureUpstream {
    pub async fn start(transport: &str) -> Self {
        let mut child = Command::new(fixture_bin())
            .args(["--transport", transport, "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn fixture");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(READY_TIMEOUT, lines.next_line())
            .await
            .expect("fixture ready in time")
            .expect("read stdout")
            .expect("fixture printed its url");
        let url = line.strip_prefix("listening ").expect("listening line").trim().to_owned();
        FixtureUpstream { child, url }
    }
}

/// `toolgate serve` on HTTP, on a free port.
pub struct HttpGateway {
    child: Child,
    pub url: String,
    /// Every line toolgate wrote to stderr so far.
    log: std::sync::Arc<tokio::sync::watch::Sender<Vec<String>>>,
}

impl HttpGateway {
    pub async fn start(config: &Path) -> Self {
        Self::start_with(config, &[]).await
    }

    pub async fn start_with(config: &Path, extra: &[&str]) -> Self {
        Self::start_with_env(config, extra, &[]).await
    }

    /// [`HttpGateway::start_with`] with variables `env` set for toolgate.
    pub async fn start_with_env(config: &Path, extra: &[&str], env: &[(&str, &Path)]) -> Self {
        let mut child = Command::new(toolgate_bin())
            .envs(env.iter().map(|(name, value)| (*name, *value)))
            .arg("serve")
            .arg("--config")
            .arg(config)
            // A free port, unless the caller names the address.
            .args(if extra.contains(&"--listen") {
                &[][..]
            } else {
                &["--listen", "127.0.0.1:0"][..]
            })
            .args(extra)
            .env("TOOLGATE_LOG", "info")
            // Read by toolgate-fixture upstreams that inherit it (`fixture_server` passes it;
            // toolgate reads TOOLGATE_LOG): their info lines (`slow: cancelled`) reach
            // toolgate's log.
            .env("RUST_LOG", "info,rmcp=error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn toolgate serve");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let log = std::sync::Arc::new(tokio::sync::watch::Sender::new(Vec::new()));
        let url = tokio::time::timeout(READY_TIMEOUT, async {
            while let Some(line) = lines.next_line().await.expect("read stderr") {
                eprintln!("[toolgate] {line}");
                log.send_modify(|log| log.push(line.clone()));
                if let Some(at) = line.find("serving MCP at ") {
                    let rest = &line[at + "serving MCP at ".len()..];
                    return rest.split_whitespace().next().expect("url").to_owned();
                }
            }
            panic!("toolgate exited before serving");
        })
        .await
        .expect("toolgate ready in time");
        let sink = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("[toolgate] {line}");
                sink.send_modify(|log| log.push(line));
            }
        });
        HttpGateway { child, url, log }
    }

    /// Waits (at most 20 s) for a log line containing every one of `parts`.
    pub async fn wait_for_log(&self, parts: &[&str]) -> String {
        let matches = |line: &String| parts.iter().all(|p| line.contains(p));
        let mut log = self.log.subscribe();
        let found =
            tokio::time::timeout(Duration::from_secs(20), log.wait_for(|l| l.iter().any(matches)))
                .await
                .unwrap_or_else(|_| panic!("no log line with {parts:?}"))
                .expect("the log is kept while the gateway lives");
        found.iter().find(|line| matches(line)).cloned().expect("a matching line")
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// The address it listens on.
    pub fn address(&self) -> std::net::SocketAddr {
        let rest = self.url.strip_prefix("http://").expect("an http URL");
        rest.split('/').next().expect("host:port").parse().expect("an address")
    }

    /// Every line toolgate wrote to stderr so far.
    pub fn log_lines(&self) -> Vec<String> {
        self.log.borrow().clone()
    }

    /// Its log as it grows (every line so far, and a change for each new one).
    pub fn log_watch(&self) -> tokio::sync::watch::Receiver<Vec<String>> {
        self.log.subscribe()
    }

    /// SIGKILL (nothing is finished, nothing said), then the exit status.
    pub async fn kill(mut self) -> std::process::ExitStatus {
        self.child.start_kill().expect("SIGKILL");
        tokio::time::timeout(READY_TIMEOUT, self.child.wait())
            .await
            .expect("dies after SIGKILL")
            .expect("wait")
    }

    /// SIGTERM, then the exit status.
    pub async fn terminate(mut self) -> std::process::ExitStatus {
        let pid = nix::unistd::Pid::from_raw(self.pid() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("signal");
        tokio::time::timeout(READY_TIMEOUT, self.child.wait())
            .await
            .expect("exits after SIGTERM")
            .expect("wait")
    }
}

/// An MCP client of an HTTP gateway.
pub async fn http_client(url: &str) -> Client {
    ().serve(StreamableHttpClientTransport::from_uri(url)).await.expect("client connects over HTTP")
}

/// An MCP client of `toolgate serve --stdio --config <config>`.
pub async fn stdio_client(config: &Path) -> Client {
    let mut command = Command::new(toolgate_bin());
    command.args(["serve", "--stdio", "--config"]).arg(config);
    let transport = TokioChildProcess::new(command).expect("spawn toolgate --stdio");
    ().serve(transport).await.expect("client connects over stdio")
}

/// Runs `toolgate ARGS` to completion.
pub async fn run_toolgate(args: &[&str]) -> std::process::Output {
    run_toolgate_in(args, None).await
}

/// Runs `toolgate ARGS` in `cwd` to completion.
pub async fn run_toolgate_in(args: &[&str], cwd: Option<&Path>) -> std::process::Output {
    let mut command = Command::new(toolgate_bin());
    command.args(args).stdin(Stdio::null()).env_remove("TOOLGATE_CONFIG");
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("toolgate finishes in time")
        .expect("run toolgate")
}

/// The text of a tool result's first content block.
pub fn first_text(result: &rmcp::model::CallToolResult) -> String {
    let json = serde_json::to_value(&result.content[0]).expect("serializes");
    json["text"].as_str().unwrap_or_default().to_owned()
}

/// Arguments object from JSON.
pub fn object(value: serde_json::Value) -> rmcp::model::JsonObject {
    value.as_object().cloned().expect("a JSON object")
}

/// A normal call of the fixture's `fx__echo` over HTTP, which must succeed.
pub async fn assert_http_healthy(url: &str) {
    let client = http_client(url).await;
    let echo = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("fx__echo")
                .with_arguments(object(serde_json::json!({"text": "still here"}))),
        )
        .await
        .expect("a normal call still works");
    assert_eq!(first_text(&echo), "still here");
    client.cancel().await.expect("close");
}
