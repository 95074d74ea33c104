//! The command an `emit` entry starts per event: the event's JSON on its stdin, at most
//! `concurrency` at once (more are not started, and counted), each in a process group of its
//! own that is killed when it runs past its timeout. Never waited for by the call.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::Semaphore;
use tokio_util::task::TaskTracker;
use toolgate_audit::Event;

/// How much of a command's stderr is kept for the log.
const STDERR_KEPT: usize = 2048;

/// Starts the command for events.
#[derive(Debug)]
pub(crate) struct Hook {
    name: String,
    command: Arc<[String]>,
    permits: Arc<Semaphore>,
    timeout: Duration,
    tracker: TaskTracker,
    counts: Arc<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    started: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
    timed_out: AtomicU64,
}

/// What a command runner counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HookStats {
    /// Commands started.
    pub started: u64,
    /// Events not given to a command because `concurrency` were running.
    pub dropped: u64,
    /// Commands that could not start, or exited with a failure.
    pub failed: u64,
    /// Commands killed at their timeout.
    pub timed_out: u64,
}

impl Hook {
    pub(crate) fn new(
        name: String,
        command: Vec<String>,
        concurrency: usize,
        timeout: Duration,
        tracker: TaskTracker,
    ) -> Hook {
        Hook {
            name,
            command: command.into(),
            permits: Arc::new(Semaphore::new(concurrency)),
            timeout,
            tracker,
            counts: Arc::default(),
        }
    }

    pub(crate) fn stats(&self) -> HookStats {
        let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
        HookStats {
            started: load(&self.counts.started),
            dropped: load(&self.counts.dropped),
            failed: load(&self.counts.failed),
            timed_out: load(&self.counts.timed_out),
        }
    }

    /// Starts the command for `event` in a task of its own, or counts the event as dropped
    /// when `concurrency` commands are running. Returns at once.
    pub(crate) fn run(&self, event: &Event) {
        let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() else {
            let dropped = self.counts.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(
                    interceptor = %self.name,
                    dropped,
                    "every emit command slot is busy: an event was not given to the command \
                     (raise `concurrency`, or make the command quicker)"
                );
            }
            return;
        };
        let input = match serde_json::to_vec(event) {
            Ok(input) => input,
            Err(error) => {
                tracing::warn!(interceptor = %self.name, %error, "an emit event did not serialize");
                return;
            }
        };
        self.counts.started.fetch_add(1, Ordering::Relaxed);
        let (name, command, timeout, counts) =
            (self.name.clone(), Arc::clone(&self.command), self.timeout, Arc::clone(&self.counts));
        self.tracker.spawn(async move {
            let ended = run_one(&command, input, timeout).await;
            drop(permit);
            match ended {
                Ended::Succeeded => {}
                Ended::Failed(why) => {
                    counts.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(interceptor = %name, program = %command[0], "emit command failed: {why}");
                }
                Ended::TimedOut => {
                    counts.timed_out.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        interceptor = %name,
                        program = %command[0],
                        timeout = %toolgate_core::duration::format(timeout),
                        "emit command ran past its timeout: its process group was killed"
                    );
                }
            }
        });
    }
}

/// How one command ended.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    Succeeded,
    Failed(String),
    TimedOut,
}

/// Runs `command` with `input` on its stdin until it exits and closes its stderr, or kills
/// its process group at `timeout`.
async fn run_one(command: &[String], input: Vec<u8>, timeout: Duration) -> Ended {
    let mut child = match tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(error) => return Ended::Failed(format!("could not start: {error}")),
    };
    let pgid = child.id();
    let mut stdin = child.stdin.take();
    let mut stderr = child.stderr.take();
    let ran = tokio::time::timeout(timeout, async {
        let write = async {
            if let Some(mut stdin) = stdin.take() {
                // A command that does not read its input is its own business.
                let _ = stdin.write_all(&input).await;
                let _ = stdin.shutdown().await;
            }
        };
        let read = async {
            let mut kept = Vec::new();
            if let Some(stderr) = stderr.as_mut() {
                let mut chunk = [0u8; 1024];
                while let Ok(n) = stderr.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    kept.extend_from_slice(&chunk[..n]);
                    if kept.len() > STDERR_KEPT {
                        kept.drain(..kept.len() - STDERR_KEPT);
                    }
                }
            }
            kept
        };
        let ((), kept, status) = tokio::join!(write, read, child.wait());
        (kept, status)
    })
    .await;
    match ran {
        Ok((_, Ok(status))) if status.success() => Ended::Succeeded,
        Ok((kept, Ok(status))) => {
            let stderr = String::from_utf8_lossy(&kept);
            let stderr = stderr.trim();
            if stderr.is_empty() {
                Ended::Failed(format!("{status}"))
            } else {
                Ended::Failed(format!("{status}; its stderr ended with: {stderr}"))
            }
        }
        Ok((_, Err(error))) => Ended::Failed(format!("could not be waited for: {error}")),
        Err(_) => {
            if let Some(pgid) = pgid.and_then(|p| i32::try_from(p).ok()) {
                use nix::sys::signal::{Signal, killpg};
                let _ = killpg(nix::unistd::Pid::from_raw(pgid), Signal::SIGKILL);
            }
            let _ = child.wait().await;
            Ended::TimedOut
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    #[tokio::test]
    async fn the_input_reaches_the_command_and_a_success_is_a_success() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("got");
        let script = format!("cat > '{}'", file.display());
        let ended = run_one(&sh(&script), b"{\"a\":1}".to_vec(), Duration::from_secs(30)).await;
        assert_eq!(ended, Ended::Succeeded);
        assert_eq!(std::fs::read(&file).expect("written"), b"{\"a\":1}");
    }

    #[tokio::test]
    async fn a_failure_says_how_and_keeps_the_end_of_stderr() {
        let ended = run_one(
            &sh("echo first >&2; echo last words >&2; exit 3"),
            Vec::new(),
            Duration::from_secs(30),
        )
        .await;
        let Ended::Failed(why) = ended else { panic!("{ended:?}") };
        assert!(why.contains("exit status: 3"), "{why}");
        assert!(why.contains("first\nlast words"), "{why}");
        let ended =
            run_one(&["/nonexistent/program".into()], Vec::new(), Duration::from_secs(1)).await;
        let Ended::Failed(why) = ended else { panic!("{ended:?}") };
        assert!(why.starts_with("could not start"), "{why}");
    }

    #[tokio::test]
    async fn a_command_past_its_timeout_is_killed_with_its_group() {
        let dir = tempfile::tempdir().expect("temp dir");
        let pid_file = dir.path().join("pid");
        // The grandchild keeps stderr open: the command is not over until it is gone.
        let script = format!("sleep 300 & echo $! > '{}'; wait", pid_file.display());
        let started = tokio::time::Instant::now();
        // Long enough for the shell to start its grandchild and write its pid first, even on
        // a loaded machine.
        let ended = run_one(&sh(&script), Vec::new(), Duration::from_secs(2)).await;
        assert_eq!(ended, Ended::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(30));
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .expect("the grandchild's pid")
            .trim()
            .parse()
            .expect("a pid");
        // Killed with its group: the grandchild ends too (a pidfd becomes readable when its
        // process ends, child of ours or not).
        let gone = match rustix::process::Pid::from_raw(pid)
            .map(|pid| rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()))
        {
            None | Some(Err(rustix::io::Errno::SRCH)) => true,
            Some(Err(error)) => panic!("pidfd_open({pid}): {error}"),
            Some(Ok(fd)) => {
                // Deprecated for types that do not own their descriptor; an `OwnedFd` does, and
                // the replacement is `unsafe`, which the workspace forbids.
                #[allow(deprecated)]
                let fd = tokio::io::unix::AsyncFd::with_interest(fd, tokio::io::Interest::READABLE)
                    .expect("watch a pidfd");
                tokio::time::timeout(Duration::from_secs(20), fd.readable()).await.is_ok()
            }
        };
        assert!(gone, "the grandchild {pid} outlived the timeout");
    }
}
