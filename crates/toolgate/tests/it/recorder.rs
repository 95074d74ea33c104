//! An MCP client that records what the server tells it: notifications and progress.

#![allow(dead_code, unreachable_pub, deprecated)]

use std::path::Path;
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, LoggingMessageNotificationParam,
    ProgressNotificationParam, ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::sync::mpsc;

use crate::support::toolgate_bin;

/// Something the server sent.
#[derive(Debug, Clone)]
pub enum Note {
    ToolsChanged,
    PromptsChanged,
    ResourcesChanged,
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
    Updated(String),
}

#[derive(Clone)]
pub struct Recorder {
    notes: mpsc::UnboundedSender<Note>,
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("recorder", "0"))
            .with_protocol_version(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.notes.send(Note::ToolsChanged);
    }

    async fn on_prompt_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.notes.send(Note::PromptsChanged);
    }

    async fn on_resource_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.notes.send(Note::ResourcesChanged);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.notes.send(Note::Progress(params));
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.notes.send(Note::Log(params));
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.notes.send(Note::Updated(params.uri));
    }
}

pub type RecordingClient = RunningService<RoleClient, Recorder>;

/// The notes a client received, in order.
pub struct Notes(mpsc::UnboundedReceiver<Note>);

impl Notes {
    /// The next note that `pick` accepts, within 30 seconds.
    pub async fn next_matching<T>(&mut self, mut pick: impl FnMut(&Note) -> Option<T>) -> T {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let note = self.0.recv().await.expect("client still running");
                if let Some(found) = pick(&note) {
                    return found;
                }
            }
        })
        .await
        .expect("the expected notification arrived in time")
    }

    /// Everything received so far.
    pub fn drain(&mut self) -> Vec<Note> {
        let mut notes = Vec::new();
        while let Ok(note) = self.0.try_recv() {
            notes.push(note);
        }
        notes
    }
}

/// A recording client of `toolgate serve --stdio --config <config>`, and the toolgate pid.
pub async fn recording_stdio_client(config: &Path) -> (RecordingClient, Notes, u32) {
    let (notes, receiver) = mpsc::unbounded_channel();
    let mut command = tokio::process::Command::new(toolgate_bin());
    command.args(["serve", "--stdio", "--config"]).arg(config);
    let transport = TokioChildProcess::new(command).expect("spawn toolgate --stdio");
    let pid = transport.id().expect("toolgate pid");
    let client = Recorder { notes }.serve(transport).await.expect("client connects over stdio");
    (client, Notes(receiver), pid)
}

/// A recording client of an HTTP gateway.
pub async fn recording_http_client(url: &str) -> (RecordingClient, Notes) {
    let (notes, receiver) = mpsc::unbounded_channel();
    let client = Recorder { notes }
        .serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .expect("client connects over HTTP");
    (client, Notes(receiver))
}

/// Pids of the live processes whose parent is `parent`.
pub fn children_of(parent: u32) -> Vec<u32> {
    let mut children = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return children };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // The command name is in parentheses and may contain spaces: parse after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[1].parse() == Ok(parent) {
            children.push(pid);
        }
    }
    children
}

/// Whether `pid` is a live (not zombie) process.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
        }
        Err(_) => false,
    }
}

/// Waits until process `pid` has ended, at most `limit`; whether it did. A pidfd becomes
/// readable when its process ends, which works for processes that are not our children.
pub async fn ended(pid: u32, limit: Duration) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid as i32) else { return true };
    let fd = match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
        Ok(fd) => fd,
        // No such process (any more).
        Err(rustix::io::Errno::SRCH) => return true,
        Err(error) => panic!("pidfd_open({pid:?}): {error}"),
    };
    let fd = tokio::io::unix::AsyncFd::with_interest(fd, tokio::io::Interest::READABLE)
        .expect("watch a pidfd");
    tokio::time::timeout(limit, fd.readable()).await.is_ok()
}

/// Waits (at most 10 s) until none of `pids` is alive; panics naming the survivors.
pub async fn all_gone(pids: &[u32]) {
    let waits = pids.iter().map(|pid| ended(*pid, Duration::from_secs(10)));
    futures::future::join_all(waits).await;
    let survivors: Vec<_> = pids.iter().filter(|p| alive(**p)).collect();
    assert!(survivors.is_empty(), "processes outlived toolgate: {survivors:?}");
}
