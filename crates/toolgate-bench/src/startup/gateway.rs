//! `toolgate serve` as a child process: its config (fixture upstreams on stdio, written to a
//! file), its start, the moment it says it serves, and its stop. Shared with `scale`.
//!
//! toolgate is not put in a process group of its own, so a Ctrl-C at the terminal reaches it
//! too; it is stopped with SIGTERM (also when its handle is dropped), which makes it stop
//! every upstream's process group, rather than SIGKILL, which would leave them behind.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use anyhow::{Context as _, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

/// What `toolgate serve` logs once it accepts connections, followed by the URL.
const SERVING: &str = "serving MCP at ";
/// toolgate's log filter: warnings, and the line that says it serves.
const LOG_FILTER: &str = "warn,toolgate::commands::serve=info";
/// How long toolgate has to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(15);
/// Log lines kept to explain a failure.
const TAIL_LINES: usize = 30;

/// One upstream: `toolgate-fixture` (the testkit fixture) on stdio.
#[derive(Debug, Clone)]
pub(crate) struct Upstream {
    /// The server name, which is also its tools' prefix.
    pub(crate) name: String,
    /// How long the fixture waits before it reads its handshake.
    pub(crate) startup_delay: Duration,
    /// Trivial tools `t0000`, ... listed besides the fixture's own.
    pub(crate) extra_tools: usize,
    /// Expose only the extra tools (`allow_tools = ["t[0-9]*"]`).
    pub(crate) only_extra_tools: bool,
}

impl Upstream {
    pub(crate) fn new(name: impl Into<String>) -> Upstream {
        Upstream {
            name: name.into(),
            startup_delay: Duration::ZERO,
            extra_tools: 0,
            only_extra_tools: false,
        }
    }

    fn to_toml(&self, fixture: &Path) -> toml::Table {
        let mut args = Vec::new();
        if !self.startup_delay.is_zero() {
            let delay = format!("{}ms", self.startup_delay.as_millis());
            args.extend(["--startup-delay".to_owned(), delay]);
        }
        if self.extra_tools > 0 {
            args.extend(["--extra-tools".to_owned(), self.extra_tools.to_string()]);
        }
        let mut server = toml::Table::new();
        server.insert("command".into(), fixture.to_string_lossy().into_owned().into());
        server.insert("args".into(), args.into());
        if self.only_extra_tools {
            server.insert("allow_tools".into(), vec!["t[0-9]*".to_owned()].into());
        }
        // A bench run must not go on with a server missing.
        server.insert("required".into(), true.into());
        server.insert("startup_timeout".into(), "2m".into());
        server
    }
}

/// The name of the fixture's extra tool `index` (see `FixtureOptions::extra_tools`).
pub(crate) fn extra_tool(index: usize) -> String {
    format!("t{index:04}")
}

/// Writes a `toolgate.toml` serving `upstreams` (each one `fixture`) into `dir` and returns
/// its path.
pub(crate) fn write_config(
    dir: &Path,
    fixture: &Path,
    upstreams: &[Upstream],
) -> anyhow::Result<PathBuf> {
    write_config_with(dir, fixture, upstreams, toml::Table::new())
}

/// [`write_config`] with a `[gateway]` table (left out when empty).
pub(crate) fn write_config_with(
    dir: &Path,
    fixture: &Path,
    upstreams: &[Upstream],
    gateway: toml::Table,
) -> anyhow::Result<PathBuf> {
    let servers: toml::Table = upstreams
        .iter()
        .map(|upstream| (upstream.name.clone(), upstream.to_toml(fixture).into()))
        .collect();
    let mut config = toml::Table::new();
    if !gateway.is_empty() {
        config.insert("gateway".into(), gateway.into());
    }
    config.insert("servers".into(), servers.into());
    let text = toml::to_string(&config).context("cannot write the config as TOML")?;
    let path = dir.join("toolgate.toml");
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// A running `toolgate serve --listen 127.0.0.1:0`.
#[derive(Debug)]
pub(crate) struct Gateway {
    child: Child,
    pid: u32,
    url: String,
    serving_after: Duration,
    log: Arc<Mutex<VecDeque<String>>>,
}

impl Gateway {
    /// Starts toolgate with `config` and returns once it logs that it serves (at most
    /// `patience` later).
    pub(crate) async fn start(
        toolgate: &Path,
        config: &Path,
        patience: Duration,
    ) -> anyhow::Result<Gateway> {
        let mut command = Command::new(toolgate);
        command
            .arg("serve")
            .arg("--config")
            .arg(config)
            .args(["--listen", "127.0.0.1:0", "--log", LOG_FILTER])
            // Nor do the upstreams inherit a log level: they log warnings only.
            .env_remove("TOOLGATE_LOG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {} serve", toolgate.display()))?;
        let pid = child.id().context("toolgate exited at once")?;
        let stderr = child.stderr.take().context("toolgate's stderr is not piped")?;
        let log = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_LINES)));
        let (serving_tx, serving_rx) = oneshot::channel();
        tokio::spawn(read_log(BufReader::new(stderr), log.clone(), serving_tx));
        let mut gateway =
            Gateway { child, pid, url: String::new(), serving_after: Duration::ZERO, log };
        match tokio::time::timeout(patience, serving_rx).await {
            Ok(Ok((at, url))) => {
                gateway.serving_after = at.duration_since(started);
                gateway.url = url;
                Ok(gateway)
            }
            Ok(Err(_)) => {
                let status = gateway.child.wait().await.ok();
                let status = status.map_or_else(|| "?".to_owned(), |s| s.to_string());
                bail!("toolgate exited ({status}) before serving:\n{}", gateway.log_tail())
            }
            Err(_) => bail!(
                "toolgate did not serve within {patience:?}; its last log lines:\n{}",
                gateway.log_tail()
            ),
        }
    }

    /// The MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// From just before the process was spawned to the moment it logged that it serves.
    pub(crate) fn serving_after(&self) -> Duration {
        self.serving_after
    }

    /// The last lines toolgate logged.
    pub(crate) fn log_tail(&self) -> String {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.iter().map(|line| format!("  {line}\n")).collect()
    }

    /// SIGTERM, then waits for the exit (killing it after a grace period). Returns how long
    /// the shutdown took.
    pub(crate) async fn stop(mut self) -> anyhow::Result<Duration> {
        let asked = Instant::now();
        self.terminate();
        match tokio::time::timeout(STOP_GRACE, self.child.wait()).await {
            Ok(status) => {
                status.context("cannot wait for toolgate")?;
                Ok(asked.elapsed())
            }
            Err(_) => {
                let _ = self.child.kill().await;
                bail!("toolgate did not exit within {STOP_GRACE:?} of SIGTERM (killed)")
            }
        }
    }

    fn terminate(&self) {
        if let Ok(pid) = i32::try_from(self.pid) {
            // Gone already is fine.
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.terminate();
        }
    }
}

/// The fixture served directly on streamable HTTP (`toolgate-fixture --transport http`):
/// the baseline to compare toolgate with.
#[derive(Debug)]
pub(crate) struct HttpFixture {
    child: Child,
    pid: u32,
    url: String,
}

impl HttpFixture {
    /// Starts it on a free port of 127.0.0.1 and returns once it printed its URL.
    pub(crate) async fn start(fixture: &Path, patience: Duration) -> anyhow::Result<HttpFixture> {
        let mut child = Command::new(fixture)
            .args(["--transport", "http", "--port", "0"])
            .env_remove("TOOLGATE_LOG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // It has no children, and dies of SIGTERM's default action; this is the fallback.
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start {}", fixture.display()))?;
        let pid = child.id().context("the fixture exited at once")?;
        let stdout = child.stdout.take().context("the fixture's stdout is not piped")?;
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(patience, lines.next_line())
            .await
            .context("the fixture did not print its URL in time")?
            .context("cannot read the fixture's stdout")?
            .context("the fixture exited before printing its URL")?;
        let url = line
            .strip_prefix("listening ")
            .with_context(|| format!("unexpected first line from the fixture: {line:?}"))?
            .trim()
            .to_owned();
        Ok(HttpFixture { child, pid, url })
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// SIGTERM, then waits for the exit (killing it after a grace period).
    pub(crate) async fn stop(mut self) -> anyhow::Result<()> {
        if let Ok(pid) = i32::try_from(self.pid) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        if tokio::time::timeout(STOP_GRACE, self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
            bail!("the fixture did not exit within {STOP_GRACE:?} of SIGTERM (killed)");
        }
        Ok(())
    }
}

/// Reads toolgate's log to its end, keeping the last lines, and reports when and where it
/// serves.
async fn read_log(
    stderr: BufReader<tokio::process::ChildStderr>,
    log: Arc<Mutex<VecDeque<String>>>,
    serving: oneshot::Sender<(Instant, String)>,
) {
    let mut serving = Some(serving);
    let mut lines = stderr.lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let at = Instant::now();
        if let Some(start) = line.find(SERVING) {
            let url = line[start + SERVING.len()..].split_whitespace().next().unwrap_or_default();
            if let Some(serving) = serving.take() {
                let _ = serving.send((at, url.to_owned()));
            }
        }
        let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
        if log.len() == TAIL_LINES {
            log.pop_front();
        }
        log.push_back(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_names_every_upstream() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut slow = Upstream::new("s001");
        slow.startup_delay = Duration::from_millis(120);
        slow.extra_tools = 100;
        slow.only_extra_tools = true;
        let path = write_config(
            dir.path(),
            Path::new("/bin/toolgate-fixture \"x\""),
            &[Upstream::new("s000"), slow],
        )
        .expect("written");
        let config: toml::Table =
            std::fs::read_to_string(path).expect("read").parse().expect("valid TOML");
        let servers = config["servers"].as_table().expect("servers");
        assert_eq!(servers["s000"]["command"].as_str(), Some("/bin/toolgate-fixture \"x\""));
        assert_eq!(servers["s000"]["args"].as_array().map(Vec::len), Some(0));
        let args: Vec<&str> = servers["s001"]["args"]
            .as_array()
            .expect("args")
            .iter()
            .filter_map(|arg| arg.as_str())
            .collect();
        assert_eq!(args, ["--startup-delay", "120ms", "--extra-tools", "100"]);
        assert_eq!(servers["s001"]["allow_tools"][0].as_str(), Some("t[0-9]*"));
        assert!(config.get("gateway").is_none(), "no [gateway] unless asked");

        let mut gateway = toml::Table::new();
        gateway.insert("max_sessions".into(), 11_000.into());
        let path = write_config_with(dir.path(), Path::new("fx"), &[Upstream::new("s")], gateway)
            .expect("written");
        let config: toml::Table =
            std::fs::read_to_string(path).expect("read").parse().expect("valid TOML");
        assert_eq!(config["gateway"]["max_sessions"].as_integer(), Some(11_000));
    }

    #[test]
    fn extra_tool_names() {
        assert_eq!(extra_tool(7), "t0007");
        assert_eq!(extra_tool(12345), "t12345");
    }
}
