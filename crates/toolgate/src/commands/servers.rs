//! `toolgate servers`: each configured server, connected or not, and how it is doing; then
//! each script that serves tools of its own.

use std::io::Write as _;
use std::process::ExitCode;

use clap::Args;
use toolgate_config::{ServerConfig, TransportConfig};
use toolgate_gateway::StartupWait;

use crate::GlobalArgs;
use crate::setup;

#[derive(Debug, Args)]
pub(crate) struct ServersArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(global: &GlobalArgs, args: ServersArgs) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "error");
    let (config, source) = setup::load_config(global)?;
    // Unlike other commands, show failed required servers instead of refusing to go on.
    let gateway = setup::start(&config, &source, StartupWait::All).await?;
    let vault = crate::logins::vault().ok();
    let mut rows = Vec::new();
    for server in &config.servers {
        let row = if !server.enabled {
            serde_json::json!({"name": server.name, "state": "disabled",
                "transport": server.transport.kind()})
        } else if let Some((up, info)) = gateway
            .upstreams()
            .iter()
            .find(|u| u.name() == server.name)
            .and_then(|u| Some((u, u.info()?)))
        {
            serde_json::json!({
                "name": server.name,
                "state": "connected",
                "transport": info.transport,
                "protocol": info.protocol_version,
                "server": info.server.as_ref().map(|s| format!("{} {}", s.name, s.version)),
                "tools": up.catalog().tools.len(),
                "prompts": up.catalog().prompts.len(),
                "resources": up.catalog().resources.len(),
                "startup_ms": info.startup.as_millis() as u64,
            })
        } else {
            let reason = gateway.failed().iter().find(|f| f.name == server.name).map(|f| &f.reason);
            serde_json::json!({"name": server.name, "state": "failed",
                "transport": server.transport.kind(), "error": reason})
        };
        let needs_login =
            gateway.upstreams().iter().any(|u| u.name() == server.name && u.needs_login());
        let mut row = with_environment(row, server);
        row["sign_in"] = crate::logins::sign_in_state(server, needs_login, vault.as_deref());
        rows.push(row);
    }
    // The scripts' own tools, each an upstream inside toolgate named after its file.
    for up in gateway.upstreams().iter().filter(|u| u.is_in_process()) {
        let script = match &up.config().transport {
            toolgate_config::TransportConfig::InProcess(i) => i.origin.display().to_string(),
            _ => String::new(),
        };
        rows.push(serde_json::json!({
            "name": up.name(),
            "state": if up.is_connected() { "connected" } else { "failed" },
            "transport": "script",
            "protocol": up.info().map(|i| i.protocol_version),
            "server": script,
            "tools": up.catalog().tools.len(),
            "prompts": 0,
            "resources": 0,
            "startup_ms": up.info().map(|i| i.startup.as_millis() as u64),
            "error": up.last_error(),
        }));
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{:16} {:10} {:16} {:11} {:>5} {:>9}  {:24} SERVER",
            "NAME", "STATE", "TRANSPORT", "PROTOCOL", "TOOLS", "STARTUP", "SIGN-IN"
        )?;
        for row in &rows {
            let text = |key: &str| row[key].as_str().unwrap_or("-").to_owned();
            let startup = row["startup_ms"].as_u64().map(|ms| format!("{ms}ms"));
            let detail = match row["state"].as_str() {
                Some("failed") => text("error"),
                _ => text("server"),
            };
            writeln!(
                out,
                "{:16} {:10} {:16} {:11} {:>5} {:>9}  {:24} {}",
                text("name"),
                text("state"),
                text("transport"),
                text("protocol"),
                row["tools"].as_u64().map(|n| n.to_string()).unwrap_or_else(|| "-".into()),
                startup.unwrap_or_else(|| "-".into()),
                crate::logins::sign_in_words(&row["sign_in"]),
                detail
            )?;
        }
    }
    gateway.shutdown().await;
    let any_failed = rows.iter().any(|r| r["state"] == "failed");
    Ok(if any_failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// `row` with `env`: for a stdio server, the names of the variables its child gets (as
/// `toolgate_upstream::child_environment` builds them from toolgate's environment now), never
/// their values.
fn with_environment(mut row: serde_json::Value, server: &ServerConfig) -> serde_json::Value {
    if let TransportConfig::Stdio(stdio) = &server.transport {
        row["env"] = serde_json::json!(toolgate_upstream::child_environment_names(
            stdio,
            std::env::vars_os()
        ));
    }
    row
}
