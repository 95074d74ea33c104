//! What an upstream offers: its [`Catalog`], and how it is listed (every page of every list
//! its capabilities announce).

use rmcp::{Peer, RoleClient, ServiceError};
use toolgate_core::mcp;

use crate::event::ChangedLists;

/// Everything an upstream lists, every page of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    /// `tools/list`.
    pub tools: Vec<mcp::Tool>,
    /// `resources/list`.
    pub resources: Vec<mcp::Resource>,
    /// `resources/templates/list`.
    pub resource_templates: Vec<mcp::ResourceTemplate>,
    /// `prompts/list`.
    pub prompts: Vec<mcp::Prompt>,
}

/// Lists what `lists` names and the server's capabilities say it offers. A list that fails is
/// logged and left empty: one broken list should not hide the rest of a server.
pub(crate) async fn list_catalog(
    upstream: &str,
    peer: &Peer<RoleClient>,
    lists: ChangedLists,
) -> Catalog {
    let capabilities = peer.peer_info().map(|i| i.capabilities.clone()).unwrap_or_default();
    let mut catalog = Catalog::default();
    if lists.tools && capabilities.tools.is_some() {
        catalog.tools = listed(upstream, "tools/list", peer.list_all_tools().await);
    }
    if lists.resources && capabilities.resources.is_some() {
        catalog.resources = listed(upstream, "resources/list", peer.list_all_resources().await);
        catalog.resource_templates =
            listed(upstream, "resources/templates/list", peer.list_all_resource_templates().await);
    }
    if lists.prompts && capabilities.prompts.is_some() {
        catalog.prompts = listed(upstream, "prompts/list", peer.list_all_prompts().await);
    }
    catalog
}

fn listed<T>(upstream: &str, what: &str, result: Result<Vec<T>, ServiceError>) -> Vec<T> {
    result.unwrap_or_else(|error| {
        // A closed transport is reported by the caller as a failed connection.
        if !matches!(error, ServiceError::TransportClosed) {
            tracing::warn!(upstream, %error, "{what} failed; treating it as empty");
        }
        Vec::new()
    })
}
