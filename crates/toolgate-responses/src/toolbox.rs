//! The tools one response offers the model: the MCP servers its `tools` name, each as the
//! gateway lists them to the caller (tenant, policy and integrity have had their say), cut to
//! `allowed_tools`, beside the application's own functions. Every name the model may call
//! leads back to one [`Entry`].

use std::collections::HashMap;

use serde_json::{Value, json};
use toolgate_core::{ResultFormat, mcp};
use toolgate_gateway::{DynamicHandle, DynamicServer, Gateway};
use toolgate_intercept::CallContext;
use toolgate_llm::chat::ToolSpec;
use toolgate_llm::provider::Dialect;
use toolgate_llm::tool_names::ToolNames;

use crate::error::ApiError;
use crate::request::{CreateResponse, McpTool};

/// What a name the model calls leads to.
#[derive(Clone)]
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
        /// The pooled connection of a server the request named by URL; `None`: a configured
        /// server, reached through the gateway's inventory.
        dynamic: Option<DynamicHandle>,
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
#[derive(Clone, Default)]
pub(crate) struct Toolbox {
    /// What the model is offered.
    pub(crate) specs: Vec<ToolSpec>,
    /// By the name the model calls.
    pub(crate) entries: HashMap<String, Entry>,
    /// The servers, in the request's order.
    pub(crate) listings: Vec<Listing>,
}

impl Toolbox {
    /// Resolves the request's tools for `ctx`'s caller. A label without a URL must name a
    /// configured server the caller reaches; a URL must be one `access` allows, and is reached
    /// over the gateway's pool (its connection is the caller's tenant's, with the request's
    /// credentials). A server that cannot be reached is listed with its error.
    pub(crate) async fn build(
        gateway: &Gateway,
        access: &Access,
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
            match &tool.server_url {
                Some(url) => access.check(i, url)?,
                None => check_server(i, tool, &configured)?,
            }
        }
        let listed = if request.mcp.iter().all(|tool| tool.server_url.is_some()) {
            Vec::new()
        } else {
            gateway.list_tools(ctx).await.map_err(|error| {
                ApiError::server(format!("listing the gateway's tools failed: {error}"))
            })?
        };
        // Every tool offered: (exposed name, its server, its name there, the tool, the pooled
        // connection of a server named by URL).
        let mut chosen: Vec<Chosen<'_>> = Vec::new();
        let mut listings = Vec::new();
        for (i, server) in request.mcp.iter().enumerate() {
            let mut tools = Vec::new();
            let mut error = None;
            let offered: Vec<(String, mcp::Tool, Option<DynamicHandle>)> = match &server.server_url
            {
                None => listed
                    .iter()
                    .filter_map(|tool| {
                        let route = inventory.tool_route(&tool.name)?;
                        (*route.upstream == *server.server_label)
                            .then(|| (route.original.clone(), tool.clone(), None))
                    })
                    .collect(),
                Some(url) => match connect(gateway, i, server, url, ctx).await? {
                    Ok((handle, listed)) => {
                        let prefix = format!("{}__", server.server_label);
                        listed
                            .into_iter()
                            .map(|tool| {
                                let original = tool
                                    .name
                                    .strip_prefix(&prefix)
                                    .unwrap_or(&tool.name)
                                    .to_owned();
                                (original, tool, Some(handle.clone()))
                            })
                            .collect()
                    }
                    Err(why) => {
                        error = Some(why);
                        Vec::new()
                    }
                },
            };
            for (original, tool, dynamic) in offered {
                let read_only =
                    tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
                if !server.allowed.admits(&original, read_only) {
                    continue;
                }
                tools.push(listed_tool(&original, &tool));
                chosen.push(Chosen {
                    exposed: tool.name.to_string(),
                    server,
                    original,
                    tool,
                    dynamic,
                });
            }
            if server.server_url.is_none() {
                error = down(&server.server_label).filter(|_| tools.is_empty());
            }
            listings.push(Listing { server_label: server.server_label.clone(), tools, error });
        }
        let names = ToolNames::new(
            dialect,
            chosen
                .iter()
                .map(|chosen| chosen.exposed.as_str())
                .chain(request.functions.iter().map(|f| f.name.as_str())),
        );
        let mut specs = Vec::new();
        let mut entries = HashMap::new();
        for Chosen { exposed, server, original, tool, dynamic } in chosen {
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
                    dynamic,
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

/// One tool offered to the model, while the toolbox is built.
struct Chosen<'a> {
    exposed: String,
    server: &'a McpTool,
    original: String,
    tool: mcp::Tool,
    dynamic: Option<DynamicHandle>,
}

/// The pooled connection to a server the request names by URL, and its tools as the pipeline
/// lets the caller see them; `Ok(Err(why))` when it cannot be reached or listed (listed with
/// the error), `Err` when the request itself is wrong (its headers, its label).
async fn connect(
    gateway: &Gateway,
    index: usize,
    tool: &McpTool,
    url: &str,
    ctx: &mut CallContext,
) -> Result<Result<(DynamicHandle, Vec<mcp::Tool>), String>, ApiError> {
    let at = format!("tools[{index}]");
    let url = url::Url::parse(url)
        .map_err(|e| ApiError::invalid(Some(&format!("{at}.server_url")), e.to_string()))?;
    let server = DynamicServer {
        url,
        label: tool.server_label.clone(),
        headers: tool.headers.clone(),
        authorization: tool.authorization.clone(),
    };
    let handle = match gateway.dynamic(&server, ctx).await {
        Ok(handle) => handle,
        Err(toolgate_gateway::GatewayError::DynamicServer { reason, .. }) => {
            return Err(ApiError::invalid(Some(&at), reason));
        }
        Err(error) => {
            return Ok(Err(format!("server {} cannot be reached: {error}", tool.server_label)));
        }
    };
    Ok(match handle.list_tools(ctx).await {
        Ok(tools) => Ok((handle, tools)),
        Err(error) => Err(format!("listing the tools of {} failed: {error}", tool.server_label)),
    })
}

/// Which servers a request may name by URL: those `[llm] allowed_server_urls` allows, never
/// the gateway's own listeners (its `/mcp`, its admin API).
#[derive(Debug, Clone, Default)]
pub struct Access {
    allowed: Option<globset::GlobSet>,
    own: Vec<std::net::SocketAddr>,
}

impl Access {
    /// The URLs matching one of `globs` (`*` also matches `/`), but none at `own` addresses.
    pub fn new(globs: &[String], own: Vec<std::net::SocketAddr>) -> Result<Access, globset::Error> {
        if globs.is_empty() {
            return Ok(Access { allowed: None, own });
        }
        let mut set = globset::GlobSetBuilder::new();
        for glob in globs {
            set.add(
                globset::GlobBuilder::new(glob)
                    .literal_separator(false)
                    .backslash_escape(true)
                    .build()?,
            );
        }
        Ok(Access { allowed: Some(set.build()?), own })
    }

    fn check(&self, index: usize, url: &str) -> Result<(), ApiError> {
        let at = format!("tools[{index}].server_url");
        let refused = |why: &str| Err(ApiError::invalid(Some(&at), why.to_owned()));
        let Some(allowed) = &self.allowed else {
            return refused(
                "servers named by URL are not allowed here ([llm] allowed_server_urls names none); \
                 name a configured server by its server_label alone",
            );
        };
        let Ok(parsed) = url::Url::parse(url) else { return refused("not a URL") };
        if !matches!(parsed.scheme(), "http" | "https") {
            return refused("only http and https servers can be named");
        }
        if !allowed.is_match(url) {
            return refused("not among [llm] allowed_server_urls");
        }
        if self.is_own(&parsed) {
            return refused("that is this gateway itself");
        }
        Ok(())
    }

    /// Whether `url` points at one of the gateway's own listeners: its port, on a loopback or
    /// unspecified address, or on the address it listens on.
    fn is_own(&self, url: &url::Url) -> bool {
        let Some(port) = url.port_or_known_default() else { return false };
        let host = match url.host() {
            Some(url::Host::Ipv4(ip)) => Some(std::net::IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(std::net::IpAddr::V6(ip)),
            Some(url::Host::Domain(name)) if name.eq_ignore_ascii_case("localhost") => {
                Some(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
            }
            _ => None,
        };
        self.own.iter().any(|own| {
            own.port() == port
                && host.is_some_and(|ip| {
                    ip.is_loopback()
                        || ip.is_unspecified()
                        || ip == own.ip()
                        || own.ip().is_unspecified()
                })
        })
    }
}

fn check_server(index: usize, tool: &McpTool, configured: &[String]) -> Result<(), ApiError> {
    let at = format!("tools[{index}]");
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
