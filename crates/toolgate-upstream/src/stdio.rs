//! Upstreams that are child processes speaking MCP on stdin/stdout.
//!
//! Each child leads its own process group, so stopping it ends everything it started (`npx`
//! and shell wrappers leave grandchildren behind otherwise). Its stderr is forwarded to
//! toolgate's log, tagged with the server name, never to toolgate's own stdout. Its
//! environment is toolgate's, minus `env_remove`, plus `env`.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use globset::{Glob, GlobSetBuilder};
use process_wrap::tokio::{CommandWrap, ProcessGroup};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStderr, Command};
use toolgate_config::StdioConfig;

use crate::error::{ConnectError, StderrTail};
use crate::shared::Shared;

mod wire;

pub(crate) use wire::ChildWire;

/// Lines of stderr kept for error messages.
const STDERR_TAIL_LINES: usize = 12;

/// A spawned child: the MCP transport over its pipes, its process group, its stderr tail.
pub(crate) struct SpawnedChild {
    pub(crate) transport: ChildWire,
    pub(crate) group: ProcessGroupHandle,
}

/// Spawns the server described by `config`.
/// Its stderr lines are logged and kept in `log`.
pub(crate) fn spawn(
    config: &StdioConfig,
    log: StderrLog,
    shared: &Arc<Shared>,
) -> Result<SpawnedChild, ConnectError> {
    let mut command = Command::new(&config.command);
    command.args(&config.args);
    if let Some(cwd) = &config.cwd {
        command.current_dir(cwd);
    }
    for name in removed_variables(&config.env_remove, std::env::vars_os().map(|(k, _)| k)) {
        command.env_remove(name);
    }
    for (name, value) in &config.env {
        command.env(name, value.expose());
    }
    let mut wrapped = CommandWrap::from(command);
    wrapped.wrap(ProcessGroup::leader());
    let spawn_error = |source: std::io::Error| ConnectError::Spawn {
        command: config.command.clone(),
        cause: crate::cause::describe(&source, None),
    };
    wrapped.command_mut().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = wrapped.spawn().map_err(spawn_error)?;
    let pid = child.id().ok_or_else(|| {
        spawn_error(std::io::Error::other("the child exited before its pid could be read"))
    })?;
    if let Some(stderr) = child.stderr().take() {
        tokio::spawn(forward_stderr(shared.name.clone(), stderr, log));
    }
    let transport = ChildWire::new(child, shared.clone()).map_err(spawn_error)?;
    Ok(SpawnedChild { transport, group: ProcessGroupHandle { pgid: pid } })
}

/// The inherited variables that `patterns` (names or globs) remove.
fn removed_variables(
    patterns: &[String],
    inherited: impl Iterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    if patterns.is_empty() {
        return Vec::new();
    }
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        // Patterns were checked by the config loader; a bad one removes nothing.
        if let Ok(glob) = Glob::new(pattern) {
            builder.add(glob);
        }
    }
    let Ok(set) = builder.build() else { return Vec::new() };
    // A name that is not Unicode is matched as its lossy form: removing too much is safe, and
    // `*` must remove every variable.
    inherited.filter(|name| set.is_match(&*name.to_string_lossy())).collect()
}

async fn forward_stderr(upstream: String, stderr: ChildStderr, log: StderrLog) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(target: "toolgate::upstream::stderr", upstream = %upstream, "{line}");
        log.push(line);
    }
    log.closed.send_replace(true);
}

/// The last lines of a child's stderr.
#[derive(Clone, Default)]
pub(crate) struct StderrLog {
    lines: Arc<Mutex<VecDeque<String>>>,
    /// Set once the child's stderr has closed (it exited, or closed it).
    closed: Arc<tokio::sync::watch::Sender<bool>>,
}

impl StderrLog {
    /// Waits until the child's stderr has closed, so that its last words are all read.
    pub(crate) async fn closed(&self) {
        let _ = self.closed.subscribe().wait_for(|closed| *closed).await;
    }

    fn push(&self, line: String) {
        let mut lines = self.lines.lock().expect("stderr log lock must not be poisoned");
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    pub(crate) fn tail(&self) -> StderrTail {
        StderrTail(
            self.lines
                .lock()
                .expect("stderr log lock must not be poisoned")
                .iter()
                .cloned()
                .collect(),
        )
    }
}

/// The process group a child leads. Ending it ends every process the child started.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProcessGroupHandle {
    pgid: u32,
}

impl ProcessGroupHandle {
    /// Sends SIGKILL to every process left in the group. Harmless when none is left.
    pub(crate) fn kill(&self) {
        use nix::sys::signal::{Signal, killpg};
        use nix::unistd::Pid;
        let Ok(pgid) = i32::try_from(self.pgid) else { return };
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_remove_matches_names_and_globs() {
        let inherited = ["AWS_KEY", "AWS_SECRET", "HOME", "PATH", "GITHUB_TOKEN"].map(Into::into);
        let removed = removed_variables(
            &["AWS_*".to_owned(), "GITHUB_TOKEN".to_owned()],
            inherited.into_iter(),
        );
        let removed: Vec<_> = removed.iter().map(|n| n.to_str().expect("ascii")).collect();
        assert_eq!(removed, ["AWS_KEY", "AWS_SECRET", "GITHUB_TOKEN"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_star_removes_every_variable_even_one_not_unicode() {
        use std::os::unix::ffi::OsStringExt as _;
        let odd = std::ffi::OsString::from_vec(b"KEY_\xff".to_vec());
        let inherited = vec!["HOME".into(), odd.clone(), "PATH".into()];
        let removed = removed_variables(&["*".to_owned()], inherited.clone().into_iter());
        assert_eq!(removed, inherited);
        let removed = removed_variables(&["KEY_*".to_owned()], inherited.into_iter());
        assert_eq!(removed, [odd]);
    }

    #[test]
    fn no_patterns_remove_nothing() {
        let inherited = ["HOME".into()];
        assert!(removed_variables(&[], inherited.into_iter()).is_empty());
    }
}
