//! The tools one response offers the model: the MCP servers its `tools` name, each as the
//! gateway lists them to the caller (tenant, policy and integrity have had their say), cut to
//! `allowed_tools`, beside the application's own functions. Every name the model may call
//! leads back to one [`Entry`].

use std::collections::HashMap;

use serde_json::{Value, json};
use toolgate_core::{ResultFormat, mcp};
use toolgate_gateway::Gateway;
use toolgate_intercept::CallContext;
use toolgate_llm::chat::ToolSpec;
use toolgate_llm::provider::Dialect;
use toolgate_llm::tool_names::ToolNames;

use crate::error::ApiError;
use crate::request::{CreateResponse, McpTool};

/// What a name the model calls leads to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// A tool of an MCP server, called through the gateway.
    Mcp {
        /// The server's label (its configured name).
        server_label: String,
        /// The tool's name on the server.
        tool: String,
        /// The gateway's exposed name, which the call is made by.
        exposed: String,
        /// Whether the call waits for the application's approval.
        needs_approval: bool,
        /// The item its result becomes when the server's `response_format` names one of the
        /// Responses API's own (`web_search_call`, ...); `None`: an `mcp_call`.
        format: Option<ResultFormat>,
    },
    /// One of the application's functions: the call is returned to it.
    Function,
}

/// One server's tools, for its `mcp_list_tools` item.
#[derive(Debug, Clone)]
pub(crate) struct Listing {
    /// The server's label.
    pub(crate) server_label: String,
    /// `{name, description, input_schema, annotations}` per tool.
    pub(crate) tools: Vec<Value>,
    /// Why its tools could not be listed (it is down, or never connected).
    pub(crate) error: Option<String>,
}

/// The tools of one response.
#[derive(Debug, Clone, Default)]
pub(crate) struct Toolbox {
    /// What the model is offered.
    pub(crate) specs: Vec<ToolSpec>,
    /// By the name the model calls.
    pub(crate) entries: HashMap<String, Entry>,
    /// The servers, in the request's order.
    pub(crate) listings: Vec<Listing>,
}

impl Toolbox {
    /// Resolves the request's tools for `ctx`'s caller. A label that names no configured
    /// server, or a server named by URL, is refused: servers are connected by configuration
    /// only (servers named in requests are not served yet).
    pub(crate) async fn build(
        gateway: &Gateway,
        request: &CreateResponse,
        dialect: Dialect,
        ctx: &mut CallContext,
    ) -> Result<Toolbox, ApiError> {
        let inventory = gateway.inventory();
        let upstreams = gateway.upstreams();
        let tenants = gateway.tenants();
        // The servers this caller may reach: another tenant's are not named to it.
        let configured: Vec<String> = upstreams
            .iter()
            .map(|upstream| upstream.name().to_owned())
            .chain(gateway.failed().iter().map(|failed| failed.name.clone()))
            .chain(gateway.starting().iter().cloned())
            .filter(|name| tenants.reaches(&ctx.principal, name))
            .collect();
        // Why a configured server's tools cannot be listed now, if they cannot.
        let down = |label: &str| -> Option<String> {
            if let Some(failed) = gateway.failed().iter().find(|failed| failed.name == label) {
                return Some(format!("server {label} could not be connected: {}", failed.reason));
            }
            match upstreams.iter().find(|upstream| upstream.name() == label) {
                Some(upstream) if upstream.is_connected() => None,
                Some(_) => Some(format!("server {label} is not connected now (restarting)")),
                None => Some(format!("server {label} is still starting")),
            }
        };
        let format_of = |server: &str, tool: &str| {
            let upstream = upstreams.iter().find(|upstream| upstream.name() == server)?;
            upstream.config().response_format_for(tool).filter(|format| {
                matches!(
                    format,
                    ResultFormat::WebSearchCall
                        | ResultFormat::FileSearchCall
                        | ResultFormat::CodeInterpreterCall
                )
            })
        };
        for (i, tool) in request.mcp.iter().enumerate() {
            check_server(i, tool, &configured)?;
        }
        let listed = if request.mcp.is_empty() {
            Vec::new()
        } else {
            gateway.list_tools(ctx).await.map_err(|error| {
                ApiError::server(format!("listing the gateway's tools failed: {error}"))
            })?
        };
        // (exposed name, server label, tool name, the tool) of every tool offered.
        let mut chosen: Vec<(String, &McpTool, String, &mcp::Tool)> = Vec::new();
        let mut listings = Vec::new();
        for server in &request.mcp {
            let mut tools = Vec::new();
            for tool in &listed {
                let Some(route) = inventory.tool_route(&tool.name) else { continue };
                if *route.upstream != *server.server_label {
                    continue;
                }
                let read_only =
                    tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
                if !server.allowed.admits(&route.original, read_only) {
                    continue;
                }
                tools.push(listed_tool(&route.original, tool));
                chosen.push((tool.name.to_string(), server, route.original.clone(), tool));
            }
            let error = down(&server.server_label).filter(|_| tools.is_empty());
            listings.push(Listing { server_label: server.server_label.clone(), tools, error });
        }
        let names = ToolNames::new(
            dialect,
            chosen
                .iter()
                .map(|(exposed, ..)| exposed.as_str())
                .chain(request.functions.iter().map(|f| f.name.as_str())),
        );
        let mut specs = Vec::new();
        let mut entries = HashMap::new();
        for (exposed, server, original, tool) in chosen {
            let name = names.provider_name(&exposed).unwrap_or(&exposed).to_owned();
            let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
            specs.push(ToolSpec {
                name: name.clone(),
                description: tool.description.as_deref().unwrap_or_default().to_owned(),
                parameters: toolgate_llm::schema::adapt(
                    dialect,
                    &Value::Object((*tool.input_schema).clone()),
                ),
            });
            entries.insert(
                name,
                Entry::Mcp {
                    server_label: server.server_label.clone(),
                    needs_approval: server.approval.wants(&original, read_only),
                    format: format_of(&server.server_label, &original),
                    tool: original,
                    exposed,
                },
            );
        }
        for function in &request.functions {
            let name = names.provider_name(&function.name).unwrap_or(&function.name).to_owned();
            if entries.contains_key(&name) {
                return Err(ApiError::invalid(
                    Some("tools"),
                    format!("the function {:?} has the name of an MCP tool", function.name),
                ));
            }
            specs.push(ToolSpec {
                name: name.clone(),
                description: function.description.clone(),
                parameters: toolgate_llm::schema::adapt(dialect, &function.parameters),
            });
            entries.insert(name, Entry::Function);
        }
        Ok(Toolbox { specs, entries, listings })
    }

    /// The model name of the MCP tool `tool` of `server_label`, for a call approved in an
    /// earlier response.
    pub(crate) fn model_name_of(&self, server_label: &str, tool: &str) -> Option<(&str, &Entry)> {
        self.entries.iter().find_map(|(name, entry)| match entry {
            Entry::Mcp { server_label: label, tool: t, .. }
                if label == server_label && t == tool =>
            {
                Some((name.as_str(), entry))
            }
            _ => None,
        })
    }
}

fn check_server(index: usize, tool: &McpTool, configured: &[String]) -> Result<(), ApiError> {
    let at = format!("tools[{index}]");
    if let Some(url) = &tool.server_url {
        return Err(ApiError::invalid(
            Some(&format!("{at}.server_url")),
            format!(
                "servers named by URL ({url}) are not served by this gateway; name a configured \
                 server by its server_label alone"
            ),
        ));
    }
    if !configured.contains(&tool.server_label) {
        return Err(ApiError::invalid(
            Some(&format!("{at}.server_label")),
            format!(
                "no configured server is called {:?} (configured: {})",
                tool.server_label,
                if configured.is_empty() { "none".to_owned() } else { configured.join(", ") }
            ),
        ));
    }
    Ok(())
}

/// A tool as `mcp_list_tools` shows it: by its name on the server.
fn listed_tool(original: &str, tool: &mcp::Tool) -> Value {
    json!({
        "name": original,
        "description": tool.description,
        "input_schema": Value::Object((*tool.input_schema).clone()),
        "annotations": tool.annotations,
    })
}
