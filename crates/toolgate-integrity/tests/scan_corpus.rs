//! The scan over a corpus: poisoned descriptions written for these tests, clean ones as real
//! servers list them (`corpus/clean.json`, captured from the npm servers the suite installs)
//! and clean ones written to look risky (`corpus/clean_tricky.json`). A tool counts as flagged
//! when a finding of medium or high severity is about it. Prints precision and recall; asserts
//! recall >= 0.9 and precision >= 0.95.

use std::path::Path;

use serde_json::{Value, json};
use toolgate_integrity::scan::{Scanned, Severity, scan};
use toolgate_integrity::{Contract, Kind};

fn corpus(name: &str) -> Vec<Contract> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus").join(name);
    let text = std::fs::read_to_string(&path).expect("corpus file");
    let file: Value = serde_json::from_str(&text).expect("corpus JSON");
    file["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| {
            let name = tool["name"].as_str().expect("name");
            let mut value = json!({"name": name, "description": tool["description"]});
            if let Some(schema) = tool.get("inputSchema") {
                value["inputSchema"] = schema.clone();
            }
            Contract::new(Kind::Tool, name, value)
        })
        .collect()
}

/// The names of `items` the scan flags, each with the rules that fired.
fn flagged(items: &[Contract]) -> Vec<(String, Vec<&'static str>)> {
    let findings = scan(&[Scanned { server: "corpus", items }]);
    let mut out: Vec<(String, Vec<&'static str>)> = Vec::new();
    for finding in findings.iter().filter(|f| f.severity >= Severity::Medium) {
        match out.iter_mut().find(|(name, _)| *name == finding.item) {
            Some((_, rules)) => rules.push(finding.rule),
            None => out.push((finding.item.clone(), vec![finding.rule])),
        }
    }
    out
}

#[test]
fn precision_and_recall_on_the_corpus() {
    let poisoned = corpus("poisoned.json");
    let mut clean = corpus("clean.json");
    clean.extend(corpus("clean_tricky.json"));

    let caught = flagged(&poisoned);
    let false_alarms = flagged(&clean);
    let missed: Vec<&str> = poisoned
        .iter()
        .filter(|p| !caught.iter().any(|(name, _)| *name == p.key))
        .map(|p| p.key.as_str())
        .collect();
    let true_positives = caught.len() as f64;
    let recall = true_positives / poisoned.len() as f64;
    let precision = true_positives / (true_positives + false_alarms.len() as f64);
    println!(
        "scan corpus: {} poisoned, {} clean; recall {recall:.3}, precision {precision:.3}\n\
         missed: {missed:?}\nfalse alarms: {false_alarms:?}",
        poisoned.len(),
        clean.len()
    );
    assert!(recall >= 0.9, "recall {recall:.3}; missed: {missed:?}");
    assert!(precision >= 0.95, "precision {precision:.3}; false alarms: {false_alarms:?}");
}
