//! The `toolgate-fixture` binary as a child process, for integration tests that need the
//! server out of process (`crash`, `spawn_child`, process-group kills, start-up timing).

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use tokio::io::AsyncBufReadExt as _;
use tokio::process::{Child, ChildStdout, Command};

use crate::FixtureTransport;

/// The binary's file name.
const BIN_NAME: &str = "toolgate-fixture";
/// Overrides where [`fixture_bin`] looks.
const BIN_ENV: &str = "TOOLGATE_FIXTURE_BIN";
/// How long a spawned fixture may take to print its `listening` line.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(30);

/// The path of the built `toolgate-fixture` binary: `$TOOLGATE_FIXTURE_BIN` if set, else the
/// first `toolgate-fixture` in a directory above the running executable (for a test binary in
/// `target/debug/deps/`, that is `target/debug/toolgate-fixture`).
///
/// Cargo builds the binary for this crate's own tests only; other crates' tests need a
/// `cargo build -p toolgate-testkit --bin toolgate-fixture` first (or the env var).
///
/// # Panics
///
/// If neither finds the binary; the message says how to build it.
pub fn fixture_bin() -> PathBuf {
    if let Some(path) = std::env::var_os(BIN_ENV) {
        return PathBuf::from(path);
    }
    let file_name = format!("{BIN_NAME}{}", std::env::consts::EXE_SUFFIX);
    let exe = std::env::current_exe().expect("the current executable's path must be readable");
    exe.ancestors()
        .skip(1)
        .map(|dir| dir.join(&file_name))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "no {file_name} above {}: run `cargo build -p toolgate-testkit --bin {BIN_NAME}` \
                 or set {BIN_ENV}",
                exe.display()
            )
        })
}

/// A running `toolgate-fixture` serving HTTP or SSE on 127.0.0.1, killed on drop.
#[derive(Debug)]
pub struct FixtureProcess {
    child: Child,
    url: String,
    /// Held so the child never writes to a closed pipe.
    _stdout: ChildStdout,
}

// === impl FixtureProcess ===

impl FixtureProcess {
    /// Starts the fixture on `transport` with an OS-chosen port and waits for its URL.
    pub async fn spawn(transport: FixtureTransport) -> anyhow::Result<Self> {
        Self::spawn_with_args(transport, std::iter::empty::<&OsStr>()).await
    }

    /// Like [`spawn`](Self::spawn), passing `args` too (e.g. `--startup-delay 500ms`).
    ///
    /// The child inherits this process's environment and stderr.
    pub async fn spawn_with_args<I, S>(transport: FixtureTransport, args: I) -> anyhow::Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        if transport == FixtureTransport::Stdio {
            anyhow::bail!("a stdio fixture has no URL: run fixture_bin() with `--transport stdio`");
        }
        let bin = fixture_bin();
        let mut child = Command::new(&bin)
            .args(["--transport", transport.as_str(), "--host", "127.0.0.1", "--port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("failed to spawn {}", bin.display()))?;
        let stdout = child.stdout.take().context("the child's stdout must be piped")?;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let line = tokio::time::timeout(LISTEN_TIMEOUT, lines.next_line())
            .await
            .context("the fixture did not print its URL in time")?
            .context("failed to read the fixture's stdout")?
            .context("the fixture exited before printing its URL")?;
        let url = line
            .strip_prefix("listening ")
            .with_context(|| format!("unexpected first line from the fixture: {line:?}"))?
            .to_owned();
        Ok(Self { child, url, _stdout: lines.into_inner().into_inner() })
    }

    /// Where the fixture listens: `http://127.0.0.1:<port>/mcp` or `…/sse`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The child's pid, while it has not been reaped.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Kills the fixture and waits for it to exit.
    pub async fn kill(&mut self) -> std::io::Result<()> {
        self.child.kill().await
    }

    /// Waits for the fixture to exit on its own (e.g. after `crash`).
    pub async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.child.wait().await
    }
}
