//! Upstreams' lists kept fresh on the gateway's side of `ServerConfig::refresh`: before a list
//! is answered, the upstreams whose lists are older than their `tool_ttl` list them again
//! ([`Gateway::freshen`]); a call of a tool nobody offers has the servers that may offer it
//! (`refresh_on_error`, and the name under their prefix) list their tools again, and is looked
//! up once more ([`Gateway::refresh_for_unknown`]). Either waits for the new inventory, so the
//! answer is built from it.

use std::time::Duration;

use crate::session::Changed;

use super::Gateway;

/// The longest a list request waits for stale upstreams to list again; past it, the lists
/// they had are answered (the listing goes on and lands later).
const FRESHEN_WAIT: Duration = Duration::from_secs(5);

impl Gateway {
    /// Lists again, at once, every upstream whose lists are older than its `tool_ttl`, and
    /// rebuilds the inventory when they changed.
    pub(super) async fn freshen(&self) {
        let upstreams = self.upstream_set();
        let stale: Vec<_> = upstreams
            .ordered
            .iter()
            .filter(|upstream| upstream.config().refresh.ttl().is_some() && upstream.is_stale())
            .cloned()
            .collect();
        if stale.is_empty() {
            return;
        }
        let listings = stale
            .iter()
            .map(|upstream| tokio::time::timeout(FRESHEN_WAIT, upstream.refresh_if_stale()));
        let mut changed = Changed::default();
        for lists in futures::future::join_all(listings).await.into_iter().flatten() {
            changed.tools |= lists.tools;
            changed.prompts |= lists.prompts;
            changed.resources |= lists.resources;
        }
        if changed.any() {
            self.rebuild(changed).await;
        }
    }

    /// A call named `name`, which no tool in the inventory has: the upstreams with
    /// `refresh_on_error` that may offer it (its name is under their prefix, or they have
    /// none) list their tools again. Whether the tools changed (look again).
    pub(super) async fn refresh_for_unknown(&self, name: &str) -> bool {
        let upstreams = self.upstream_set();
        let candidates = upstreams.ordered.iter().filter(|upstream| {
            let config = upstream.config();
            let prefix = &config.prefix;
            config.refresh.on_unknown_tool()
                && (prefix.is_empty()
                    || name
                        .strip_prefix(prefix.as_str())
                        .is_some_and(|rest| rest.starts_with(toolgate_core::name::SEPARATOR)))
        });
        let listings = candidates.map(|upstream| {
            tokio::time::timeout(FRESHEN_WAIT, upstream.refresh_for_unknown_tool())
        });
        let changed = futures::future::join_all(listings).await.into_iter().any(|c| c == Ok(true));
        if changed {
            self.rebuild(Changed { tools: true, ..Changed::default() }).await;
        }
        changed
    }
}

/// After a call's answer: when the upstream said it does not have the tool (listed here,
/// unknown there: a server that dropped a tool without saying so), it lists its tools again in
/// the background (with `refresh_on_error`), so that the lists stop offering it.
pub(super) fn after_answer(
    sent: &Result<toolgate_upstream::ToolAnswer, crate::GatewayError>,
    upstream: std::sync::Arc<toolgate_upstream::Upstream>,
) {
    if says_unknown_tool(sent) && upstream.config().refresh.on_unknown_tool() {
        tokio::spawn(async move {
            upstream.refresh_for_unknown_tool().await;
        });
    }
}

/// Whether the upstream answered a call with the JSON-RPC error of a tool it does not have
/// (`-32602` or `-32601` naming an unknown or missing tool, as the SDKs answer it).
fn says_unknown_tool(sent: &Result<toolgate_upstream::ToolAnswer, crate::GatewayError>) -> bool {
    use toolgate_core::mcp;
    let Err(crate::GatewayError::Upstream(toolgate_upstream::UpstreamError::Request {
        source,
        ..
    })) = sent
    else {
        return false;
    };
    let rmcp::ServiceError::McpError(error) = source.as_ref() else { return false };
    let message = error.message.to_ascii_lowercase();
    matches!(error.code, mcp::ErrorCode::INVALID_PARAMS | mcp::ErrorCode::METHOD_NOT_FOUND)
        && message.contains("tool")
        && (message.contains("unknown") || message.contains("not found"))
}

#[cfg(test)]
mod tests;
