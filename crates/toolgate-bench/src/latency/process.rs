//! The server processes a run starts: each in a process group of its own, ready when it says
//! so, and ended with everything it started, on success, on error and on Ctrl-C alike.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

use crate::latency::pin::Pinning;

/// How long a server may take to say it is ready.
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a server has to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// Lines of a server's output kept to explain a failure.
const TAIL_LINES: usize = 20;

/// How a server says it is ready, and where it serves.
#[derive(Debug, Clone)]
pub(crate) enum Ready {
    /// A stdout line starting with this prefix; the rest of the line is the URL
    /// (`toolgate-fixture --transport http`: `listening <url>`).
    StdoutPrefix(&'static str),
    /// A stderr line containing this; the next word is the URL
    /// (`toolgate serve`: `serving MCP at <url>`).
    StderrMarker(&'static str),
    /// The server prints nothing when ready (the peers at their quietest log levels): it is
    /// ready once it accepts TCP connections on `port`, and serves `url`.
    Accepting { port: u16, url: String },
}

/// Sends SIGKILL to a process group when dropped, unless disarmed: the last line of defence
/// against leaving servers behind when a run fails.
#[derive(Debug)]
pub(crate) struct GroupGuard {
    pgid: Option<Pid>,
}

impl GroupGuard {
    /// Guards the group led by `pid` (a child started with `process_group(0)`).
    pub(crate) fn new(pid: u32) -> Self {
        GroupGuard { pgid: i32::try_from(pid).ok().map(Pid::from_raw) }
    }

    /// Sends `signal` to the group; a group that is gone already is not an error.
    pub(crate) fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(pgid, signal);
        }
    }

    /// Kills what is left of the group and stands down.
    pub(crate) fn finish(&mut self) {
        self.signal(Signal::SIGKILL);
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
    }
}

/// The last lines a process wrote, shared with the tasks that read its output; once `quiet`,
/// nothing more is forwarded (what servers say while their sessions close is noise).
#[derive(Debug, Clone, Default)]
pub(crate) struct Tail(Arc<Mutex<VecDeque<String>>>, Arc<AtomicBool>);

impl Tail {
    /// Stops forwarding: the server is being shut down.
    pub(crate) fn quiet(&self) {
        self.1.store(true, Ordering::Relaxed);
    }

    fn is_quiet(&self) -> bool {
        self.1.load(Ordering::Relaxed)
    }

    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The kept lines, indented, for an error message; empty when there are none.
    pub(crate) fn render(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.is_empty() {
            return String::new();
        }
        let mut out = String::from("; its last output:");
        for line in lines.iter() {
            out.push_str("\n    ");
            out.push_str(line);
        }
        out
    }
}

/// Forwards a child's output to our stderr, prefixed with `label`, and keeps its tail. When
/// `marker` is given, the first line it matches is sent on `ready` (and not forwarded).
pub(crate) fn forward_lines(
    label: String,
    output: impl AsyncRead + Unpin + Send + 'static,
    tail: Tail,
    mut ready: Option<(Marker, oneshot::Sender<String>)>,
) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(output).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some((marker, _)) = &ready
                && let Some(url) = marker.find(&line)
                && let Some((_, sender)) = ready.take()
            {
                let _ = sender.send(url);
                continue;
            }
            // Servers run at warning level; the few info lines (`toolgate serve` says which
            // config it read, and that it is shutting down) are kept for errors only.
            if !line.contains(" INFO ") && !tail.is_quiet() {
                eprintln!("[{label}] {line}");
            }
            tail.push(line);
        }
    });
}

/// A readiness line to look for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Marker {
    Prefix(&'static str),
    Contains(&'static str),
}

impl Marker {
    /// The URL a ready line announces, or `None` for any other line.
    fn find(self, line: &str) -> Option<String> {
        let rest = match self {
            Marker::Prefix(prefix) => line.strip_prefix(prefix)?,
            Marker::Contains(marker) => &line[line.find(marker)? + marker.len()..],
        };
        rest.split_whitespace().next().map(str::to_owned)
    }
}

/// A server process started by the harness.
#[derive(Debug)]
pub(crate) struct Server {
    label: String,
    child: Child,
    pid: u32,
    guard: GroupGuard,
    tail: Tail,
}

impl Server {
    /// Starts `command` in a process group of its own (on the servers' CPUs when `pin` says
    /// so) and waits until it is ready; returns the server and the URL it serves.
    pub(crate) async fn start(
        label: &str,
        mut command: Command,
        ready: Ready,
        pin: Option<&Pinning>,
    ) -> anyhow::Result<(Server, String)> {
        command
            .process_group(0)
            .kill_on_drop(true)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let program = command.as_std().get_program().to_string_lossy().into_owned();
        let spawned = match pin {
            Some(pin) => pin.spawn_on_servers(|| command.spawn())?,
            None => command.spawn(),
        };
        let mut child = spawned.with_context(|| format!("{label}: cannot run {program}"))?;
        let pid = child.id().with_context(|| format!("{label}: exited at once"))?;
        let guard = GroupGuard::new(pid);
        let tail = Tail::default();
        let stdout = child.stdout.take().context("stdout is piped")?;
        let stderr = child.stderr.take().context("stderr is piped")?;
        let (sender, announced) = oneshot::channel();
        let (mut out_ready, mut err_ready) = (None, None);
        match &ready {
            Ready::StdoutPrefix(prefix) => out_ready = Some((Marker::Prefix(prefix), sender)),
            Ready::StderrMarker(marker) => err_ready = Some((Marker::Contains(marker), sender)),
            Ready::Accepting { .. } => drop(sender),
        }
        forward_lines(label.to_owned(), stdout, tail.clone(), out_ready);
        forward_lines(label.to_owned(), stderr, tail.clone(), err_ready);
        let mut server = Server { label: label.to_owned(), child, pid, guard, tail };
        let url = tokio::time::timeout(READY_TIMEOUT, server.ready(ready, announced))
            .await
            .map_err(|_| {
                anyhow::anyhow!(
                    "{label}: not ready after {}s{}",
                    READY_TIMEOUT.as_secs(),
                    server.tail.render()
                )
            })??;
        Ok((server, url))
    }

    async fn ready(
        &mut self,
        ready: Ready,
        announced: oneshot::Receiver<String>,
    ) -> anyhow::Result<String> {
        let label = self.label.clone();
        let exited = |status: std::io::Result<std::process::ExitStatus>, tail: &Tail| {
            let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
            anyhow::anyhow!("{label}: exited before it was ready ({status}){}", tail.render())
        };
        match ready {
            Ready::StdoutPrefix(_) | Ready::StderrMarker(_) => {
                tokio::select! {
                    url = announced => url.map_err(|_| anyhow::anyhow!(
                        "{}: closed its output before it was ready{}", self.label, self.tail.render()
                    )),
                    status = self.child.wait() => Err(exited(status, &self.tail)),
                }
            }
            Ready::Accepting { port, url } => loop {
                // Nothing to await: poll for the listening socket, and for an early exit.
                tokio::select! {
                    connected = tokio::net::TcpStream::connect(("127.0.0.1", port)) => {
                        if connected.is_ok() {
                            return Ok(url);
                        }
                    }
                    status = self.child.wait() => return Err(exited(status, &self.tail)),
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            },
        }
    }

    /// The process id (also its process group).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The last lines it wrote, for error messages.
    pub(crate) fn tail(&self) -> String {
        self.tail.render()
    }

    /// Stops forwarding its output (before its sessions are closed).
    pub(crate) fn quiet(&self) {
        self.tail.quiet();
    }

    /// SIGTERM to its process group, then SIGKILL to whatever is left after a grace period.
    pub(crate) async fn stop(mut self) {
        self.guard.signal(Signal::SIGTERM);
        if tokio::time::timeout(STOP_GRACE, self.child.wait()).await.is_err() {
            eprintln!(
                "[{}] still running {}s after SIGTERM: killed",
                self.label,
                STOP_GRACE.as_secs()
            );
        }
        self.guard.finish();
        let _ = self.child.wait().await;
    }
}

/// A free TCP port on 127.0.0.1 for a server that wants one on its command line. Another
/// process could take it before the server binds it; the server then fails to start, loudly.
pub(crate) fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
        .context("cannot bind 127.0.0.1:0 to find a free port")?;
    Ok(listener.local_addr().context("cannot read a bound address")?.port())
}
