//! The poisoning scan measured on a corpus it was not all tuned on.
//!
//! `tests/corpus/dev/` is the development half: the rules were tuned on it. `tests/corpus/heldout/`
//! is the held-out half: poisoned descriptions written by another author who saw neither the
//! rules nor the development half, and clean descriptions of other servers than the development
//! half's. Each half has `poisoned*.json` and `clean*.json` files of entries (see
//! `docs/scan.md` for the format and how the halves were made).
//!
//! An entry counts as flagged when the scan finds something of medium or high severity in it.
//! The targets are recall at least 0.9, at most 1 % of clean entries flagged and none high. The
//! scan does not reach them yet, on either half; the test holds each half to what it reaches
//! now (`DEV_NOW`, `HELD_OUT_NOW`). It also asserts that
//! `bench/results/latest/scan.txt`, the table the documentation quotes, is what the scan gives
//! now (`TOOLGATE_BLESS=1` rewrites it).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use toolgate_integrity::scan::{Finding, Scanned, Severity, scan};
use toolgate_integrity::{Contract, Kind};

#[derive(Deserialize)]
struct File {
    entries: Vec<Entry>,
}

#[derive(Deserialize, Clone)]
struct Entry {
    id: String,
    family: String,
    server: String,
    kind: String,
    item: Value,
    #[serde(default)]
    others: Vec<String>,
    /// The file it is in, without `.json`: one author's set of poisoned entries.
    #[serde(skip)]
    set: String,
}

impl Entry {
    fn contract(&self) -> Contract {
        let kind = match self.kind.as_str() {
            "tool" => Kind::Tool,
            "prompt" => Kind::Prompt,
            other => panic!("{}: kind {other:?} is not tool or prompt", self.id),
        };
        let name = self.item["name"].as_str().unwrap_or_else(|| panic!("{}: no name", self.id));
        Contract::new(kind, name, self.item.clone())
    }
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// The entries of every `<set>*.json` file of one half.
fn entries(half: &str, set: &str) -> Vec<Entry> {
    let dir = corpus_dir().join(half);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.starts_with(set) && name.ends_with(".json")
        })
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no {set}*.json in {}", dir.display());
    paths
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).expect("a corpus file");
            let file: File =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let set = path.file_stem().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
            file.entries.into_iter().map(move |entry| Entry { set: set.clone(), ..entry })
        })
        .collect()
}

fn flagging(findings: &[Finding]) -> impl Iterator<Item = &Finding> {
    findings.iter().filter(|f| f.severity >= Severity::Medium)
}

/// Each poisoned entry scanned on its own, beside a server with the tools it names as others'.
fn poisoned_findings(entry: &Entry) -> Vec<Finding> {
    let items = [entry.contract()];
    let others: Vec<Contract> = entry
        .others
        .iter()
        .map(|name| {
            Contract::new(Kind::Tool, name, serde_json::json!({"name": name, "description": ""}))
        })
        .collect();
    let mut servers = vec![Scanned { server: &entry.server, items: &items }];
    if !others.is_empty() {
        servers.push(Scanned { server: "another-server", items: &others });
    }
    scan(&servers).into_iter().filter(|f| f.server == entry.server).collect()
}

/// The clean entries of a half scanned together, server by server, as a gateway fronting all
/// of them would: the findings of each entry.
fn clean_findings(entries: &[Entry]) -> Vec<(Entry, Vec<Finding>)> {
    let mut by_server: BTreeMap<&str, Vec<Contract>> = BTreeMap::new();
    for entry in entries {
        by_server.entry(&entry.server).or_default().push(entry.contract());
    }
    let servers: Vec<Scanned<'_>> =
        by_server.iter().map(|(server, items)| Scanned { server, items }).collect();
    let findings = scan(&servers);
    entries
        .iter()
        .map(|entry| {
            let name = entry.item["name"].as_str().unwrap_or_default();
            let own = findings
                .iter()
                .filter(|f| f.server == entry.server && f.item == name)
                .cloned()
                .collect();
            (entry.clone(), own)
        })
        .collect()
}

/// One half's scores, and what went wrong, in words.
struct Scores {
    poisoned: usize,
    caught: usize,
    clean: usize,
    flagged: usize,
    high: usize,
    /// Family: (caught, total).
    families: BTreeMap<String, (usize, usize)>,
    /// File of poisoned entries: (caught, total).
    sets: BTreeMap<String, (usize, usize)>,
    missed: Vec<String>,
    false_alarms: Vec<String>,
}

impl Scores {
    fn recall(&self) -> f64 {
        self.caught as f64 / self.poisoned as f64
    }

    fn flagged_share(&self) -> f64 {
        self.flagged as f64 / self.clean as f64
    }
}

fn score(half: &str) -> Scores {
    let poisoned = entries(half, "poisoned");
    let clean = entries(half, "clean");
    let mut scores = Scores {
        poisoned: poisoned.len(),
        caught: 0,
        clean: clean.len(),
        flagged: 0,
        high: 0,
        families: BTreeMap::new(),
        sets: BTreeMap::new(),
        missed: Vec::new(),
        false_alarms: Vec::new(),
    };
    for entry in &poisoned {
        let findings = poisoned_findings(entry);
        let caught = flagging(&findings).next().is_some();
        let family = scores.families.entry(entry.family.clone()).or_default();
        family.1 += 1;
        let set = scores.sets.entry(entry.set.clone()).or_default();
        set.1 += 1;
        if caught {
            family.0 += 1;
            set.0 += 1;
            scores.caught += 1;
        } else {
            let low: Vec<&str> = findings.iter().map(|f| f.rule).collect();
            scores.missed.push(format!("{} ({}) {low:?}", entry.id, entry.family));
        }
    }
    for (entry, findings) in clean_findings(&clean) {
        let flags: Vec<&Finding> = flagging(&findings).collect();
        if flags.is_empty() {
            continue;
        }
        scores.flagged += 1;
        if flags.iter().any(|f| f.severity == Severity::High) {
            scores.high += 1;
        }
        for finding in flags {
            scores.false_alarms.push(format!("{}: {finding}", entry.id));
        }
    }
    scores
}

/// The table `bench/results/latest/scan.txt` holds.
fn table(dev: &Scores, heldout: &Scores) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "toolgate scan on its corpus (crates/toolgate-integrity/tests/corpus), by \
         `cargo test -p toolgate-integrity --test scan_corpus`.\nFlagged: a finding of medium \
         or high severity.\n"
    );
    let _ = writeln!(out, "| half | poisoned | caught | recall | clean | flagged | share | high |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for (half, s) in [("development", dev), ("held-out", heldout)] {
        let _ = writeln!(
            out,
            "| {half} | {} | {} | {:.3} | {} | {} | {:.1} % | {} |",
            s.poisoned,
            s.caught,
            s.recall(),
            s.clean,
            s.flagged,
            100.0 * s.flagged_share(),
            s.high
        );
    }
    let _ = writeln!(out, "\n| family | development | held-out |");
    let _ = writeln!(out, "|---|---:|---:|");
    let mut families: Vec<&String> = dev.families.keys().chain(heldout.families.keys()).collect();
    families.sort();
    families.dedup();
    let cell = |s: &Scores, family: &String| match s.families.get(family) {
        Some((caught, total)) => format!("{caught}/{total}"),
        None => "-".to_owned(),
    };
    for family in families {
        let _ = writeln!(out, "| {family} | {} | {} |", cell(dev, family), cell(heldout, family));
    }
    let _ = writeln!(out, "\n| development set | caught | recall |");
    let _ = writeln!(out, "|---|---:|---:|");
    for (set, (caught, total)) in &dev.sets {
        let recall = *caught as f64 / *total as f64;
        let _ = writeln!(out, "| {set} | {caught}/{total} | {recall:.3} |");
    }
    out
}

#[test]
fn the_scan_scores_on_both_halves() {
    let dev = score("dev");
    println!(
        "development: recall {:.3} ({}/{}), clean flagged {}/{} ({} high)\nmissed:\n  {}\nfalse \
         alarms:\n  {}",
        dev.recall(),
        dev.caught,
        dev.poisoned,
        dev.flagged,
        dev.clean,
        dev.high,
        dev.missed.join("\n  "),
        dev.false_alarms.join("\n  ")
    );
    // The held-out half's entries are named only when a target is missed, so that whoever
    // tunes the rules reads the development half's misses and not these.
    let heldout = score("heldout");
    let heldout_misses = format!(
        "missed:\n  {}\nfalse alarms:\n  {}",
        heldout.missed.join("\n  "),
        heldout.false_alarms.join("\n  ")
    );
    // The table has the held-out half's totals: it is written or compared, never printed, so
    // that a run while tuning shows only the development half.
    let table = table(&dev, &heldout);

    let recorded =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/results/latest/scan.txt");
    if std::env::var_os("TOOLGATE_BLESS").is_some() {
        std::fs::write(&recorded, &table).expect("writing bench/results/latest/scan.txt");
    } else {
        let committed = std::fs::read_to_string(&recorded).unwrap_or_default();
        assert!(
            committed == table,
            "bench/results/latest/scan.txt is not what the scan gives now: rerun with \
             TOOLGATE_BLESS=1 and update docs/scan.md"
        );
    }

    assert!(
        heldout.poisoned >= 100 && heldout.clean >= 100,
        "a held-out half this small says little"
    );
    hold(&dev, DEV_NOW, "development", "");
    hold(&heldout, HELD_OUT_NOW, "held-out", &heldout_misses);
}

/// Fails when `scores` fall below `floor`.
fn hold(scores: &Scores, floor: Held, half: &str, details: &str) {
    assert!(scores.recall() >= floor.recall, "{half} recall {:.3}; {details}", scores.recall());
    assert!(
        scores.flagged_share() <= floor.flagged,
        "{} of {} clean {half} entries flagged; {details}",
        scores.flagged,
        scores.clean
    );
    assert!(
        scores.high <= floor.high,
        "{} clean {half} entries flagged high; {details}",
        scores.high
    );
}

/// Scores a half is held to.
struct Held {
    recall: f64,
    /// The share of clean entries flagged.
    flagged: f64,
    /// Clean entries flagged high.
    high: usize,
}

/// The targets: recall at least 0.9, at most 1 % of clean entries flagged, none high.
#[allow(dead_code)]
const TARGET: Held = Held { recall: 0.9, flagged: 0.01, high: 0 };

/// What the scan reaches now, short of [`TARGET`] on both halves (docs/scan.md, "Scores"):
/// the test holds each half there, so that a change to the rules can only make it better.
/// When a change reaches the targets, these become `TARGET`.
const DEV_NOW: Held = Held { recall: 0.9, flagged: 0.012, high: 2 };
const HELD_OUT_NOW: Held = Held { recall: 0.82, flagged: 0.025, high: 4 };
