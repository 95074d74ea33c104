//! `toolgate tools`: what a client of this gateway would see in `tools/list`.

use std::io::Write as _;
use std::process::ExitCode;

use clap::Args;
use toolgate_gateway::StartupWait;

use crate::GlobalArgs;
use crate::setup;

#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    /// Print JSON (an array of {name, server, original, description, inputSchema}).
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(global: &GlobalArgs, args: ToolsArgs) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    let (config, source) = setup::load_config(global)?;
    let gateway = setup::connect(&config, &source, StartupWait::All).await?;
    let inventory = gateway.inventory();
    // The servers' tools, then those the gateway serves itself (`toolgate__read_result`).
    let own = gateway.pipeline().own_tools();
    let rows: Vec<(&toolgate_core::mcp::Tool, Option<String>, Option<String>)> = inventory
        .tools()
        .iter()
        .filter(|tool| !own.iter().any(|o| o.tool.name == tool.name))
        .map(|tool| {
            let route = inventory.tool_route(&tool.name);
            (tool, route.map(|r| r.upstream.to_string()), route.map(|r| r.original.clone()))
        })
        .chain(own.iter().map(|o| {
            (
                o.tool.as_ref(),
                Some(toolgate_intercept::OWN_SERVER.to_owned()),
                Some(o.original.clone()),
            )
        }))
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        let tools: Vec<_> = rows
            .iter()
            .map(|(tool, server, original)| {
                serde_json::json!({
                    "name": tool.name,
                    "server": server,
                    "original": original,
                    "description": tool.description,
                    "inputSchema": tool.input_schema,
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &tools)?;
        writeln!(out)?;
    } else {
        let width = rows.iter().map(|(t, _, _)| t.name.len()).max().unwrap_or(4).max(4);
        writeln!(out, "{:width$}  {:12}  DESCRIPTION", "TOOL", "SERVER")?;
        for (tool, server, _) in &rows {
            let description =
                tool.description.as_deref().unwrap_or("").lines().next().unwrap_or("");
            writeln!(
                out,
                "{:width$}  {:12}  {}",
                tool.name,
                server.as_deref().unwrap_or_default(),
                shorten(description, 70)
            )?;
        }
    }
    for failed in gateway.failed() {
        eprintln!("warning: server `{}` is not connected: {}", failed.name, failed.reason);
    }
    for collision in inventory.collisions() {
        eprintln!(
            "warning: {} name `{}` is offered by `{}` and `{}`; the latter's is exposed as {}",
            collision.kind,
            collision.exposed,
            collision.kept.upstream,
            collision.other.upstream,
            collision.renamed_to.as_deref().unwrap_or("(nothing)"),
        );
    }
    gateway.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// `text` cut to at most `max` characters, with an ellipsis when cut.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}
