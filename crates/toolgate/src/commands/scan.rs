//! `toolgate scan`: the poisoning scan over what every configured server offers now, offline;
//! with `--judge`, the agent's model reads the same texts as a second opinion ([`judge`]),
//! whose findings are added to the rules' (never in their place).

mod corpus;
mod judge;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use toolgate_integrity::judge::{JudgeFinding, subjects};
use toolgate_integrity::scan::{Finding, Scanned, Severity, scan};

use crate::GlobalArgs;
use crate::commands::agent::ModelArgs;
use crate::commands::offered::{enabled_servers, offered};
use crate::setup;

#[derive(Debug, Args)]
#[command(after_help = "Exit status: 0 nothing of medium or high severity; 1 a finding of medium \
    or high severity, a server that could not be scanned, or (--judge) a request to the model \
    that failed; 64 usage or config error.\n\n\
    --judge sends every tool's and prompt's texts (descriptions, parameter and argument \
    descriptions) to the model of [agent] in toolgate.toml, or the one --provider, --model and \
    --base-url name, in requests of about 8,000 tokens, 4 at a time, at most --judge-limit \
    input tokens in all. Its findings (rule `judge`) \
    are added to the rules'; it never removes or lowers one. See docs/scan.md.")]
pub(crate) struct ScanArgs {
    /// Only this server (repeatable); the others are still read, to find shadowing.
    #[arg(long, value_name = "NAME")]
    server: Vec<String>,
    /// Print JSON (the findings, each with rule, severity, server, kind, item, field, span and
    /// excerpt; and the servers that could not be scanned; with --judge, `judge`: the model,
    /// requests, tokens, cost, items not judged and failed requests).
    #[arg(long)]
    json: bool,
    /// Also ask the agent's model (a second opinion; costs tokens): each tool's and prompt's
    /// texts go to it as data, and what it judges poisoned is added as a finding of rule
    /// `judge`.
    #[arg(long)]
    judge: bool,
    /// The most input tokens --judge may send in one scan; a scan that would send more is
    /// refused before anything is sent (narrow it with --server, or raise this).
    #[arg(long, value_name = "TOKENS", default_value_t = judge::DEFAULT_LIMIT, requires = "judge")]
    judge_limit: usize,
    #[command(flatten, next_help_heading = "The judge's model (with --judge)")]
    model: ModelArgs,
    /// Judge the entries of a corpus file (crates/toolgate-integrity/tests/corpus) instead of
    /// the configured servers, and print recall or false alarms (scripts/scan-judge-corpus).
    #[arg(long, value_name = "FILE", hide = true, requires = "judge")]
    corpus: Vec<PathBuf>,
    /// With --corpus: count the prompt's tokens only; ask no model.
    #[arg(long, hide = true, requires = "corpus")]
    tokens_only: bool,
}

pub(crate) async fn run(global: &GlobalArgs, args: ScanArgs) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    if args.model.any() && !args.judge {
        return Err(setup::usage(
            "--provider, --model and --base-url choose the judge's model: add --judge",
        ));
    }
    let (config, source) = setup::load_config(global)?;
    if !args.corpus.is_empty() {
        return corpus::run(&config, &args.model, &args.corpus, args.tokens_only).await;
    }
    // The model first: a judge that cannot be asked fails before any server starts.
    let judge =
        if args.judge { Some(judge::Judge::new(&config.agent, &args.model)?) } else { None };
    let scripts = setup::script_servers(&config, source.dir().as_deref());
    enabled_servers(&config.servers, &scripts, &args.server)?;
    let offered = offered(&config.servers, scripts).await;
    let chosen = |server: &str| args.server.is_empty() || args.server.iter().any(|s| s == server);
    let scanned: Vec<Scanned<'_>> =
        offered.servers.iter().map(|(server, items)| Scanned { server, items }).collect();
    let findings: Vec<Finding> = scan(&scanned).into_iter().filter(|f| chosen(&f.server)).collect();
    let unreachable: Vec<_> =
        offered.unreachable.iter().filter(|(server, _)| chosen(server)).collect();
    let report = match &judge {
        Some(judge) => {
            let mine: Vec<Scanned<'_>> = scanned
                .iter()
                .filter(|s| chosen(s.server))
                .map(|s| Scanned { server: s.server, items: s.items })
                .collect();
            let subjects = subjects(&mine);
            judge::within_limit(&subjects, args.judge_limit)?;
            Some(judge.judge(&subjects).await)
        }
        None => None,
    };
    let judged: Vec<&JudgeFinding> =
        report.iter().flat_map(|r| r.findings.iter().map(|(_, f)| f)).collect();
    let serious = findings.iter().any(|f| f.severity >= Severity::Medium)
        || judged.iter().any(|f| f.severity >= Severity::Medium);
    let failed = report.as_ref().is_some_and(|r| !r.errors.is_empty());
    let mut out = std::io::stdout().lock();
    if args.json {
        let mut all: Vec<serde_json::Value> =
            findings.iter().map(serde_json::to_value).collect::<Result<_, _>>()?;
        for finding in &judged {
            all.push(serde_json::to_value(finding)?);
        }
        let mut json = json!({
            "findings": all,
            "unreachable": unreachable.iter().map(|(s, why)| json!({"server": s, "error": why})).collect::<Vec<_>>(),
        });
        if let Some(report) = &report {
            json["judge"] = report.json();
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&json)?)?;
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
        for finding in &judged {
            writeln!(
                out,
                "{:6}  {} `{}` of `{}`, {}\n        [{}: {}] {}\n        {}",
                finding.severity,
                finding.kind,
                finding.item,
                finding.server,
                finding.field.as_deref().unwrap_or("(the model's quote is not in its texts)"),
                finding.rule,
                finding.family,
                finding.message,
                finding.excerpt
            )?;
        }
        for (server, why) in &unreachable {
            writeln!(out, "{server}: not scanned: {why}")?;
        }
        if let Some(report) = &report {
            for failure in &report.errors {
                writeln!(
                    out,
                    "judge: request {} failed ({} items: {}): {}",
                    failure.request,
                    failure.items.len(),
                    failure.items.join(", "),
                    failure.error
                )?;
            }
            for cut in &report.cut {
                writeln!(
                    out,
                    "judge: shown in part (too long): {} `{}` of `{}`, {} ({} of {} bytes)",
                    cut.kind, cut.item, cut.server, cut.field, cut.shown, cut.bytes
                )?;
            }
            let unanswered: Vec<String> = report
                .not_judged
                .iter()
                .filter(|(_, n)| !n.why.starts_with("request "))
                .map(|(_, n)| format!("{}/{}", n.server, n.item))
                .collect();
            if !unanswered.is_empty() {
                writeln!(out, "judge: no verdict for {}", unanswered.join(", "))?;
            }
            writeln!(out, "{}", report.summary())?;
        }
        let items: usize =
            offered.servers.iter().filter(|(s, _)| chosen(s)).map(|(_, items)| items.len()).sum();
        writeln!(out, "{} findings in {items} items", findings.len() + judged.len())?;
    }
    Ok(if serious || failed || !unreachable.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
