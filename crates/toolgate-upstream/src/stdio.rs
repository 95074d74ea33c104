//! Upstreams that are child processes speaking MCP on stdin/stdout.
//!
//! Each child leads its own process group, so stopping it ends everything it started (`npx`
//! and shell wrappers leave grandchildren behind otherwise). Its stderr is read as bytes in
//! lines of bounded length and forwarded to toolgate's log, tagged with the server name, never
//! to toolgate's own stdout (`stderr.rs`). Its environment is built from nothing: a short list
//! of harmless variables, what `env_pass` names, minus `env_remove`, plus `env`
//! (`environment.rs`), so that no server reads toolgate's own secrets.

use std::process::Stdio;
use std::sync::Arc;

use process_wrap::tokio::{CommandWrap, ProcessGroup};
use tokio::process::Command;
use toolgate_config::StdioConfig;

use crate::error::ConnectError;
use crate::shared::Shared;

mod environment;
mod stderr;
mod wire;

pub use environment::{child_environment, child_environment_names};
pub(crate) use stderr::StderrLog;
pub(crate) use wire::{ChildWire, EXIT_NOTICE, ExitNote};

/// A spawned child: the MCP transport over its pipes, its process group, and where how it
/// ended is noted.
pub(crate) struct SpawnedChild {
    pub(crate) transport: ChildWire,
    pub(crate) group: ProcessGroupHandle,
    pub(crate) exit: ExitNote,
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
    command.env_clear();
    command.envs(child_environment(config, std::env::vars_os()));
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
        let upstream = shared.name.clone();
        tokio::spawn(stderr::drain(stderr, log, move |line| {
            tracing::info!(target: "toolgate::upstream::stderr", upstream = %upstream, "{line}");
        }));
    }
    let transport = ChildWire::new(child, shared.clone()).map_err(spawn_error)?;
    let exit = transport.exit_note();
    Ok(SpawnedChild { transport, group: ProcessGroupHandle { pgid: pid }, exit })
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
