//! What the configured servers and the scripts' own tools offer now, as contracts, for `pin`
//! and `scan`: the upstreams are connected on their own (no pipeline, no audit log, no
//! events), listed, and shut down.

use std::sync::Arc;

use toolgate_config::ServerConfig;
use toolgate_gateway::InProcess;
use toolgate_integrity::Contract;
use toolgate_upstream::{StartupWait, Upstream};

/// Each server that connected, with its contracts; each that did not, with why.
pub(crate) struct Offered {
    pub(crate) servers: Vec<(String, Vec<Contract>)>,
    pub(crate) unreachable: Vec<(String, String)>,
}

/// The names of the enabled servers (configured, then scripts'), or a usage error naming one
/// of `asked` that is not among them.
pub(crate) fn enabled_servers<'a>(
    servers: &'a [ServerConfig],
    scripts: &'a [InProcess],
    asked: &[String],
) -> anyhow::Result<Vec<&'a str>> {
    let known: Vec<&str> = servers
        .iter()
        .chain(scripts.iter().map(|(config, _)| config))
        .filter(|s| s.enabled)
        .map(|s| s.name.as_str())
        .collect();
    if let Some(unknown) = asked.iter().find(|name| !known.contains(&name.as_str())) {
        return Err(crate::setup::usage(format!(
            "no enabled server `{unknown}` in the config (servers: {})",
            known.join(", ")
        )));
    }
    Ok(known)
}

/// Connects `servers` (the enabled ones) and `scripts`, waits for every first attempt,
/// lists, disconnects.
pub(crate) async fn offered(servers: &[ServerConfig], scripts: Vec<InProcess>) -> Offered {
    let mut connected = toolgate_upstream::connect_all(servers, None, StartupWait::All).await;
    let scripts = toolgate_upstream::connect_in_process(scripts, None).await;
    connected.upstreams.extend(scripts.upstreams);
    let mut offered = Offered { servers: Vec::new(), unreachable: Vec::new() };
    for upstream in &connected.upstreams {
        if upstream.is_connected() {
            offered.servers.push((upstream.name().to_owned(), contracts_of(upstream)));
        } else {
            let why = upstream.last_error().unwrap_or_else(|| "not connected".to_owned());
            offered.unreachable.push((upstream.name().to_owned(), why));
        }
    }
    for upstream in &connected.upstreams {
        upstream.shutdown().await;
    }
    offered
}

/// Every contract `upstream` offers now.
fn contracts_of(upstream: &Arc<Upstream>) -> Vec<Contract> {
    let catalog = upstream.catalog();
    let tools = catalog.tools.iter().map(Contract::tool);
    let prompts = catalog.prompts.iter().map(Contract::prompt);
    let resources = catalog.resources.iter().map(Contract::resource);
    let templates = catalog.resource_templates.iter().map(Contract::resource_template);
    tools.chain(prompts).chain(resources).chain(templates).collect()
}
