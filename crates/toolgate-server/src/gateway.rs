//! The gateway: one per process. It owns the upstream connections and the merged inventory,
//! and turns a request in exposed names into a request to the right upstream.
//!
//! Every path to an upstream (the MCP server on stdio or HTTP, `toolgate call`) goes through
//! these methods; the interceptor pipeline will sit here.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use toolgate_config::ServerConfig;
use toolgate_core::mcp;
use toolgate_upstream::{Connected, Contribution, Inventory, Route, Upstream, UpstreamError};

/// Why the gateway could not serve a request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// No exposed tool has this name.
    #[error("unknown tool: {0}")]
    UnknownTool(String),
    /// No exposed prompt has this name.
    #[error("unknown prompt: {0}")]
    UnknownPrompt(String),
    /// No upstream offers this resource.
    #[error("resource not found: {0}")]
    UnknownResource(String),
    /// The upstream failed.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
}

/// A server that was configured but is not connected.
#[derive(Debug, Clone)]
pub struct FailedUpstream {
    /// Its name.
    pub name: String,
    /// Why, with its whole cause chain.
    pub reason: String,
}

/// Upstreams, inventory, and dispatch.
#[derive(Debug)]
pub struct Gateway {
    upstreams: HashMap<Arc<str>, Arc<Upstream>>,
    ordered: Vec<Arc<Upstream>>,
    failed: Vec<FailedUpstream>,
    inventory: RwLock<Arc<Inventory>>,
}

impl Gateway {
    /// Builds the gateway over what [`toolgate_upstream::connect_all`] connected.
    pub fn new(connected: Connected) -> Gateway {
        let failed = connected
            .failed
            .iter()
            .map(|error| FailedUpstream {
                name: error.upstream().to_owned(),
                reason: toolgate_core::ErrorChain(error).to_string(),
            })
            .collect();
        let inventory = Arc::new(merge(&connected.upstreams));
        Gateway {
            upstreams: connected
                .upstreams
                .iter()
                .map(|u| (Arc::<str>::from(u.name()), u.clone()))
                .collect(),
            ordered: connected.upstreams,
            failed,
            inventory: RwLock::new(inventory),
        }
    }

    /// Connects every enabled server in `servers` and builds the gateway.
    pub async fn connect(servers: &[ServerConfig]) -> Gateway {
        Gateway::new(toolgate_upstream::connect_all(servers).await)
    }

    /// The current inventory snapshot.
    pub fn inventory(&self) -> Arc<Inventory> {
        self.inventory.read().expect("inventory lock must not be poisoned").clone()
    }

    /// Connected upstreams, in config order.
    pub fn upstreams(&self) -> &[Arc<Upstream>] {
        &self.ordered
    }

    /// Configured servers that did not connect.
    pub fn failed(&self) -> &[FailedUpstream] {
        &self.failed
    }

    /// `tools/call` by exposed name.
    pub async fn call_tool(
        &self,
        mut params: mcp::CallToolRequestParams,
    ) -> Result<mcp::CallToolResult, GatewayError> {
        let (upstream, route) = {
            let inventory = self.inventory();
            let route = inventory
                .tool_route(&params.name)
                .ok_or_else(|| GatewayError::UnknownTool(params.name.to_string()))?;
            (self.upstream(route)?, route.clone())
        };
        params.name = route.original.into();
        Ok(upstream.call_tool(params).await?)
    }

    /// `prompts/get` by exposed name.
    pub async fn get_prompt(
        &self,
        mut params: mcp::GetPromptRequestParams,
    ) -> Result<mcp::GetPromptResult, GatewayError> {
        let inventory = self.inventory();
        let route = inventory
            .prompt_route(&params.name)
            .ok_or_else(|| GatewayError::UnknownPrompt(params.name.clone()))?;
        let upstream = self.upstream(route)?;
        params.name = route.original.clone();
        Ok(upstream.get_prompt(params).await?)
    }

    /// `resources/read` by exposed URI. The contents keep the URI the caller asked for.
    pub async fn read_resource(
        &self,
        mut params: mcp::ReadResourceRequestParams,
    ) -> Result<mcp::ReadResourceResult, GatewayError> {
        let asked = params.uri.clone();
        let route = self
            .inventory()
            .resource_route(&asked)
            .ok_or_else(|| GatewayError::UnknownResource(asked.clone()))?;
        let upstream = self.upstream(&route)?;
        params.uri = route.original.clone();
        let mut result = upstream.read_resource(params).await?;
        if asked != route.original {
            for contents in &mut result.contents {
                restore_uri(contents, &route.original, &asked);
            }
        }
        Ok(result)
    }

    /// `completion/complete`: routed by the prompt name or resource URI it refers to.
    pub async fn complete(
        &self,
        mut params: mcp::CompleteRequestParams,
    ) -> Result<mcp::CompleteResult, GatewayError> {
        let inventory = self.inventory();
        let route = match &mut params.r#ref {
            mcp::Reference::Prompt(prompt) => {
                let route = inventory
                    .prompt_route(&prompt.name)
                    .cloned()
                    .ok_or_else(|| GatewayError::UnknownPrompt(prompt.name.clone()))?;
                prompt.name = route.original.clone();
                route
            }
            mcp::Reference::Resource(resource) => {
                let route = inventory
                    .resource_route(&resource.uri)
                    .ok_or_else(|| GatewayError::UnknownResource(resource.uri.clone()))?;
                resource.uri = route.original.clone();
                route
            }
            _ => return Ok(mcp::CompleteResult::default()),
        };
        Ok(self.upstream(&route)?.complete(params).await?)
    }

    /// Ends every upstream connection and child process.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.ordered.iter().map(|u| u.shutdown())).await;
    }

    fn upstream(&self, route: &Route) -> Result<Arc<Upstream>, GatewayError> {
        self.upstreams.get(&route.upstream).cloned().ok_or_else(|| {
            GatewayError::Upstream(UpstreamError::Disconnected {
                upstream: route.upstream.to_string(),
            })
        })
    }
}

fn merge(upstreams: &[Arc<Upstream>]) -> Inventory {
    Inventory::build(upstreams.iter().map(|u| Contribution {
        upstream: u.name(),
        prefix: &u.config().prefix,
        filter: &u.config().tools,
        catalog: u.catalog(),
    }))
}

fn restore_uri(contents: &mut mcp::ResourceContents, original: &str, asked: &str) {
    let (mcp::ResourceContents::TextResourceContents { uri, .. }
    | mcp::ResourceContents::BlobResourceContents { uri, .. }) = contents
    else {
        return;
    };
    if uri == original {
        *uri = asked.to_owned();
    }
}
