//! `toolgate tools`: what a client of this gateway would see in `tools/list`.

use std::io::Write as _;
use std::process::ExitCode;

use clap::Args;
use toolgate_server::StartupWait;

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
    let mut out = std::io::stdout().lock();
    if args.json {
        let tools: Vec<_> = inventory
            .tools()
            .iter()
            .map(|tool| {
                let route = inventory.tool_route(&tool.name);
                serde_json::json!({
                    "name": tool.name,
                    "server": route.map(|r| r.upstream.to_string()),
                    "original": route.map(|r| r.original.clone()),
                    "description": tool.description,
                    "inputSchema": tool.input_schema,
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &tools)?;
        writeln!(out)?;
    } else {
        let width = inventory.tools().iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
        writeln!(out, "{:width$}  {:12}  DESCRIPTION", "TOOL", "SERVER")?;
        for tool in inventory.tools() {
            let server = inventory.tool_route(&tool.name).map(|r| r.upstream.to_string());
            let description =
                tool.description.as_deref().unwrap_or("").lines().next().unwrap_or("");
            writeln!(
                out,
                "{:width$}  {:12}  {}",
                tool.name,
                server.unwrap_or_default(),
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
