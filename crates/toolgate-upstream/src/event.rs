//! What upstreams tell the rest of toolgate, as it happens.

#![allow(deprecated)] // sampling, roots and logging are deprecated in 2026-07-28 (SEP-2577)

use toolgate_core::mcp;

/// Something happened to an upstream or was said by it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum UpstreamEvent {
    /// It connected (or reconnected) and its catalog is listed; `startup` is how long that
    /// connection took (the process or request, the handshake and the first listing).
    Connected { upstream: String, startup: std::time::Duration },
    /// It could not connect, lost its connection (its catalog is kept while it reconnects),
    /// or could not reconnect (its catalog is now empty).
    Disconnected { upstream: String, reason: String },
    /// Its catalog changed (after a `list_changed` notification and a re-list).
    CatalogChanged { upstream: String, lists: ChangedLists },
    /// `notifications/resources/updated` for one of its (original) URIs.
    ResourceUpdated { upstream: String, uri: String },
    /// `notifications/message` about none of the calls in flight (those go to their callers),
    /// its logger already prefixed with the upstream's name.
    Log { upstream: String, params: mcp::LoggingMessageNotificationParam },
}

/// Which lists changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChangedLists {
    /// `tools/list`.
    pub tools: bool,
    /// `prompts/list`.
    pub prompts: bool,
    /// `resources/list` and `resources/templates/list`.
    pub resources: bool,
}

impl ChangedLists {
    /// Every list.
    pub const ALL: ChangedLists = ChangedLists { tools: true, prompts: true, resources: true };
}

/// Where upstream events go. Sending never waits; a closed receiver drops them.
pub type EventSender = tokio::sync::mpsc::UnboundedSender<UpstreamEvent>;
