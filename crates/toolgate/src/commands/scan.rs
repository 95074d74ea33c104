//! `toolgate scan`: the poisoning scan over what every configured server offers now, offline.

use std::io::Write as _;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use toolgate_integrity::scan::{Scanned, Severity, scan};

use crate::GlobalArgs;
use crate::commands::offered::{enabled_servers, offered};
use crate::setup;

#[derive(Debug, Args)]
pub(crate) struct ScanArgs {
    /// Only this server (repeatable); the others are still read, to find shadowing.
    #[arg(long, value_name = "NAME")]
    server: Vec<String>,
    /// Print JSON (the findings, each with rule, severity, server, kind, item, field, span and
    /// excerpt; and the servers that could not be scanned).
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(global: &GlobalArgs, args: ScanArgs) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    let (config, source) = setup::load_config(global)?;
    let scripts = setup::script_servers(&config, source.dir().as_deref());
    enabled_servers(&config.servers, &scripts, &args.server)?;
    let offered = offered(&config.servers, scripts).await;
    let scanned: Vec<Scanned<'_>> =
        offered.servers.iter().map(|(server, items)| Scanned { server, items }).collect();
    let findings: Vec<_> = scan(&scanned)
        .into_iter()
        .filter(|f| args.server.is_empty() || args.server.contains(&f.server))
        .collect();
    let serious = findings.iter().any(|f| f.severity >= Severity::Medium);
    let unreachable: Vec<_> = offered
        .unreachable
        .iter()
        .filter(|(server, _)| args.server.is_empty() || args.server.contains(server))
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        let report = json!({
            "findings": findings,
            "unreachable": unreachable.iter().map(|(s, why)| json!({"server": s, "error": why})).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        for finding in &findings {
            writeln!(
                out,
                "{:6}  {} `{}` of `{}`, {}\n        [{}] {}\n        {}",
                finding.severity,
                finding.kind,
                finding.item,
                finding.server,
                finding.field,
                finding.rule,
                finding.message,
                finding.highlighted()
            )?;
        }
        for (server, why) in &unreachable {
            writeln!(out, "{server}: not scanned: {why}")?;
        }
        let items: usize = offered
            .servers
            .iter()
            .filter(|(s, _)| args.server.is_empty() || args.server.contains(s))
            .map(|(_, items)| items.len())
            .sum();
        writeln!(out, "{} findings in {items} items", findings.len())?;
    }
    Ok(if serious || !unreachable.is_empty() { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
