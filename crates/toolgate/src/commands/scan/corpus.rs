//! `toolgate scan --judge --corpus FILE` (hidden; `scripts/scan-judge-corpus` runs it): the
//! judge measured on the scan's corpus (`crates/toolgate-integrity/tests/corpus`, its format in
//! `docs/scan.md`), with the same code as `scan --judge`.
//!
//! A file whose name starts with `clean` holds clean entries: what is flagged there is a false
//! alarm; any other file holds poisoned ones: what is flagged there is caught. Each is scored
//! for the rules alone (as `tests/scan_corpus.rs` scans: a poisoned entry beside a server with
//! the tools it names as others', clean entries grouped by server), the judge alone, and
//! either. `--tokens-only` asks no model and prints what the prompt costs in tokens.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use serde::Deserialize;
use serde_json::Value;
use toolgate_config::Config;
use toolgate_integrity::judge::{self, Subject};
use toolgate_integrity::scan::{Scanned, Severity, scan};
use toolgate_integrity::{Contract, Kind};

use super::judge::{ENCODING, Judge};
use crate::commands::agent::ModelArgs;

#[derive(Deserialize)]
struct File {
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    id: String,
    server: String,
    kind: String,
    item: Value,
    #[serde(default)]
    others: Vec<String>,
}

impl Entry {
    fn contract(&self) -> anyhow::Result<Contract> {
        let kind = match self.kind.as_str() {
            "tool" => Kind::Tool,
            "prompt" => Kind::Prompt,
            other => anyhow::bail!("{}: kind {other:?} is neither tool nor prompt", self.id),
        };
        let name = self.item["name"].as_str().with_context(|| format!("{}: no name", self.id))?;
        Ok(Contract::new(kind, name, self.item.clone()))
    }
}

pub(super) async fn run(
    config: &Config,
    flags: &ModelArgs,
    files: &[PathBuf],
    tokens_only: bool,
) -> anyhow::Result<ExitCode> {
    let judge = if tokens_only { None } else { Some(Judge::new(&config.agent, flags)?) };
    let mut out = std::io::stdout().lock();
    let (mut all_subjects, mut all_tokens, mut all_requests) = (0usize, 0usize, 0usize);
    let mut all_answers = 0usize;
    if tokens_only {
        writeln!(
            out,
            "tokens in {ENCODING}; the system prompt: {}",
            ENCODING.count(judge::SYSTEM_PROMPT)
        )?;
    }
    let mut failed = false;
    for path in files {
        let (entries, contracts) = read(path)?;
        let clean = path
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with("clean"));
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // Each entry's subject (none when it has no text), and the entry it is of.
        let mut subjects: Vec<Subject> = Vec::new();
        let mut owner: Vec<usize> = Vec::new();
        for (at, (entry, contract)) in entries.iter().zip(&contracts).enumerate() {
            let items = std::slice::from_ref(contract);
            for subject in judge::subjects(&[Scanned { server: &entry.server, items }]) {
                subjects.push(subject);
                owner.push(at);
            }
        }
        let Some(judge) = &judge else {
            let batches = Judge::batches(&subjects);
            let tokens: usize = batches.iter().map(|b| b.tokens).sum();
            let answers: usize = batches.iter().map(|b| clean_answer_tokens(b.items.len())).sum();
            let per_item = tokens as f64 / subjects.len().max(1) as f64;
            writeln!(
                out,
                "{name}: {} entries, {} with text, {} requests, {tokens} input tokens \
                 ({per_item:.0} per item, system prompt included), {answers} output tokens \
                 if all are clean",
                entries.len(),
                subjects.len(),
                batches.len(),
            )?;
            all_subjects += subjects.len();
            all_tokens += tokens;
            all_answers += answers;
            all_requests += batches.len();
            continue;
        };
        let rules = rules_flagged(&entries, &contracts, clean);
        let report = judge.judge(&subjects).await;
        let mut judged = vec![false; entries.len()];
        for &at in &owner {
            judged[at] = true;
        }
        for (at, _) in &report.not_judged {
            judged[owner[*at]] = false;
        }
        let mut by_judge = vec![false; entries.len()];
        for (at, finding) in &report.findings {
            if finding.severity >= Severity::Medium {
                by_judge[owner[*at]] = true;
            }
        }
        let count =
            |flags: &dyn Fn(usize) -> bool| (0..entries.len()).filter(|&i| flags(i)).count();
        let total = entries.len();
        let rate = |n: usize| n as f64 / total.max(1) as f64;
        let (rules_n, judge_n, either_n) =
            (count(&|i| rules[i]), count(&|i| by_judge[i]), count(&|i| rules[i] || by_judge[i]));
        let what = if clean { "flagged (false alarms)" } else { "caught (recall)" };
        writeln!(
            out,
            "{name}: {total} {} entries, {} judged\n  rules  {rules_n} {what}: {:.3}\n  judge  \
             {judge_n}: {:.3}\n  either {either_n}: {:.3}",
            if clean { "clean" } else { "poisoned" },
            count(&|i| judged[i]),
            rate(rules_n),
            rate(judge_n),
            rate(either_n),
        )?;
        // The held-out half is read for its totals only: its entries are not for tuning on.
        let heldout = path.components().any(|part| part.as_os_str() == "heldout");
        if clean && !heldout {
            for (at, finding) in &report.findings {
                writeln!(out, "  judge flagged {}: {finding}", entries[owner[*at]].id)?;
            }
        }
        if !clean && !heldout {
            for at in (0..total).filter(|&i| !by_judge[i] && judged[i]) {
                writeln!(out, "  judge missed {}", entries[at].id)?;
            }
        }
        for failure in &report.errors {
            failed = true;
            writeln!(out, "  request {} failed: {}", failure.request, failure.error)?;
        }
        writeln!(out, "  {}", report.summary())?;
    }
    if judge.is_none() {
        let per_100 = |tokens: usize| tokens as f64 * 100.0 / all_subjects.max(1) as f64;
        writeln!(
            out,
            "all: {all_subjects} items, {all_requests} requests, {all_tokens} input tokens \
             ({:.0} per 100 items), {all_answers} output tokens if all are clean ({:.0} per 100 \
             items)",
            per_100(all_tokens),
            per_100(all_answers),
        )?;
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// The tokens of the shortest answer for `items` items: every one clean, compact JSON.
fn clean_answer_tokens(items: usize) -> usize {
    let verdicts: Vec<Value> =
        (0..items).map(|index| serde_json::json!({"index": index, "poisoned": false})).collect();
    ENCODING.count(&serde_json::json!({ "verdicts": verdicts }).to_string())
}

fn read(path: &Path) -> anyhow::Result<(Vec<Entry>, Vec<Contract>)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let file: File = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a corpus file", path.display()))?;
    let contracts = file.entries.iter().map(Entry::contract).collect::<anyhow::Result<_>>()?;
    Ok((file.entries, contracts))
}

/// Which entries the rules flag (medium or high), scanned as `tests/scan_corpus.rs` does.
fn rules_flagged(entries: &[Entry], contracts: &[Contract], clean: bool) -> Vec<bool> {
    let flagged = |findings: &[toolgate_integrity::scan::Finding], server: &str, item: &str| {
        findings
            .iter()
            .any(|f| f.server == server && f.item == item && f.severity >= Severity::Medium)
    };
    if clean {
        let mut by_server: BTreeMap<&str, Vec<Contract>> = BTreeMap::new();
        for (entry, contract) in entries.iter().zip(contracts) {
            by_server.entry(&entry.server).or_default().push(contract.clone());
        }
        let servers: Vec<Scanned<'_>> =
            by_server.iter().map(|(server, items)| Scanned { server, items }).collect();
        let findings = scan(&servers);
        return entries
            .iter()
            .zip(contracts)
            .map(|(entry, contract)| flagged(&findings, &entry.server, &contract.key))
            .collect();
    }
    entries
        .iter()
        .zip(contracts)
        .map(|(entry, contract)| {
            let items = std::slice::from_ref(contract);
            let others: Vec<Contract> = entry
                .others
                .iter()
                .map(|name| {
                    Contract::new(
                        Kind::Tool,
                        name,
                        serde_json::json!({"name": name, "description": ""}),
                    )
                })
                .collect();
            let mut servers = vec![Scanned { server: &entry.server, items }];
            if !others.is_empty() {
                servers.push(Scanned { server: "another-server", items: &others });
            }
            flagged(&scan(&servers), &entry.server, &contract.key)
        })
        .collect()
}
