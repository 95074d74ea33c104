//! Counts checked against OpenAI's own tokenizer as tiktoken-rs carries it.

use super::*;

fn samples() -> Vec<String> {
    let mut json = String::from("[");
    for i in 0..400 {
        json.push_str(&format!(
            "{{\"id\":{i},\"path\":\"/srv/data/file_{i}.txt\",\"size\":{},\"ok\":true}},",
            i * 37
        ));
    }
    json.push(']');
    vec![
        String::new(),
        "hello".into(),
        "  leading and trailing spaces  \n\n\n".into(),
        "Grüße aus Köln — naïve café, 東京 and emoji 🦀🚀 mixed\twith\ttabs\r\n".into(),
        "fn main() {\n    println!(\"{}\", 1 + 2);\n}\n".repeat(20),
        "error[E0308]: mismatched types\n  --> src/lib.rs:3:5\n   |\n3  |     x\n".repeat(30),
        "x".repeat(5000),
        format!("start {} end", "9".repeat(3000)),
        json,
    ]
}

#[test]
fn counts_are_tiktokens_counts() {
    let o200k = tiktoken_rs::o200k_base().unwrap();
    let cl100k = tiktoken_rs::cl100k_base().unwrap();
    for text in samples() {
        assert_eq!(
            Encoding::O200kBase.count(&text),
            o200k.encode_ordinary(&text).len(),
            "{text:?}"
        );
        assert_eq!(
            Encoding::Cl100kBase.count(&text),
            cl100k.encode_ordinary(&text).len(),
            "{text:?}"
        );
    }
}

#[test]
fn count_up_to_stops_past_the_limit_and_agrees_below_it() {
    for text in samples() {
        let n = Encoding::O200kBase.count(&text);
        assert_eq!(Encoding::O200kBase.count_up_to(&text, n), Some(n));
        if n > 0 {
            assert_eq!(Encoding::O200kBase.count_up_to(&text, n - 1), None);
            assert!(!Encoding::O200kBase.fits(&text, n - 1));
        }
        assert!(Encoding::O200kBase.fits(&text, n));
    }
}

#[test]
fn a_prefix_within_a_budget_counts_what_it_says_and_is_the_longest() {
    for text in samples() {
        let total = Encoding::O200kBase.count(&text);
        for budget in [0, 1, 5, 37, total.saturating_sub(1), total, total + 10] {
            let (end, count) = Encoding::O200kBase.prefix_within(&text, budget);
            assert!(count <= budget);
            assert_eq!(Encoding::O200kBase.count(&text[..end]), count, "{budget} in {text:?}");
            if budget >= total {
                assert_eq!(end, text.len());
            } else {
                assert!(end < text.len());
            }
            // A text of one huge word still gives as much of it as fits.
            if text.starts_with("xxxx") && budget > 0 {
                assert!(count > 0 && count <= budget, "{budget}: {count}");
            }
        }
    }
}

#[test]
fn encodings_are_named_as_openai_names_them() {
    for encoding in Encoding::ALL {
        assert_eq!(encoding.name().parse::<Encoding>(), Ok(encoding));
    }
    assert_eq!(Encoding::default(), Encoding::O200kBase);
    let err = "p50k_base".parse::<Encoding>().unwrap_err();
    assert!(err.to_string().contains("o200k_base, cl100k_base"), "{err}");
}

/// The process's peak resident memory in KiB (Linux: `VmHWM` in /proc/self/status).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// What the first use of each encoding costs: the time to build its tables and what that adds
/// to the peak memory (docs/benchmarks.md, "Binary size"), with bounds that catch a gross
/// regression: each encoding's tables built within [`FIRST_USE_LIMIT`], and only once (a
/// second warm-up finds them built), both adding at most [`FIRST_USE_MEMORY_MIB`] to the peak.
/// A measurement, so ignored: the peak is the whole process's and the time is wall-clock, so
/// run it alone, in a release build:
/// `cargo test --release -p toolgate-llm --lib first_use -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement: run it alone, with --release"]
fn first_use_cost() {
    let peak_at_start = peak_rss_kib().expect("VmHWM in /proc/self/status");
    for encoding in Encoding::ALL {
        let peak_before = peak_rss_kib().expect("VmHWM");
        let started = tokio::time::Instant::now();
        encoding.warm_up();
        let took = started.elapsed();
        let peak_after = peak_rss_kib().expect("VmHWM");
        let again = tokio::time::Instant::now();
        encoding.warm_up();
        let again = again.elapsed();
        eprintln!(
            "{encoding}: tables built in {:.0} ms; peak memory {} MiB higher ({} MiB in all)",
            took.as_secs_f64() * 1000.0,
            (peak_after - peak_before) / 1024,
            peak_after / 1024,
        );
        assert!(took < FIRST_USE_LIMIT, "{encoding}: tables built in {took:?}");
        assert!(again * 100 < took, "{encoding}: built again? {again:?} after {took:?}");
        assert_eq!(encoding.count("hello world"), 2, "{encoding} counts after its warm-up");
    }
    let grew = (peak_rss_kib().expect("VmHWM") - peak_at_start) / 1024;
    assert!(grew <= FIRST_USE_MEMORY_MIB, "both encodings' tables: peak memory {grew} MiB higher");
}

/// About a second for `o200k_base` in a release build (3.7 s in a debug one).
const FIRST_USE_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);
/// What building both encodings' tables may add to the peak memory (93 MiB in a debug build).
const FIRST_USE_MEMORY_MIB: u64 = 128;

/// Every JSON file under `dir`, recursively.
fn json_files(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            json_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "json") {
            found.push(path);
        }
    }
}

/// Every string in `value`, keys included.
fn strings<'v>(value: &'v serde_json::Value, found: &mut Vec<&'v str>) {
    match value {
        serde_json::Value::String(text) => found.push(text),
        serde_json::Value::Array(items) => items.iter().for_each(|item| strings(item, found)),
        serde_json::Value::Object(map) => {
            for (key, item) in map {
                found.push(key);
                strings(item, found);
            }
        }
        _ => {}
    }
}

/// The counts on the token-economy corpus are tiktoken's, and those of `bpe-openai`'s
/// ready-made tables (what toolgate counted with before it built its own): every JSON file
/// under `TOOLGATE_CORPUS` (`toolgate-bench corpus --out DIR`, and what
/// `toolgate-bench tokens --outputs DIR` wrote), whole and each of its strings, in both
/// encodings. Needs a corpus, so ignored:
/// `TOOLGATE_CORPUS=DIR cargo test -p toolgate-llm --lib corpus -- --ignored --nocapture`.
#[test]
#[ignore = "needs a corpus: TOOLGATE_CORPUS=DIR"]
fn counts_on_a_corpus_are_tiktokens_and_the_ready_made_tables() {
    let dir = std::env::var_os("TOOLGATE_CORPUS").expect(
        "TOOLGATE_CORPUS is not set: make a corpus with `toolgate-bench corpus --out DIR` (its \
         servers come from scripts/install-test-deps) and set TOOLGATE_CORPUS=DIR",
    );
    let mut files = Vec::new();
    json_files(std::path::Path::new(&dir), &mut files);
    assert!(!files.is_empty(), "no JSON file under {dir:?}");
    let checks = [
        (Encoding::O200kBase, tiktoken_rs::o200k_base().unwrap(), bpe_openai::o200k_base()),
        (Encoding::Cl100kBase, tiktoken_rs::cl100k_base().unwrap(), bpe_openai::cl100k_base()),
    ];
    let (mut texts, mut bytes) = (0usize, 0usize);
    let mut tokens = [0usize; 2];
    for file in &files {
        let whole = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let value: serde_json::Value =
            serde_json::from_str(&whole).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let mut found = vec![whole.as_str()];
        strings(&value, &mut found);
        for text in found {
            for (at, (encoding, tiktoken, ready_made)) in checks.iter().enumerate() {
                let count = encoding.count(text);
                assert_eq!(
                    count,
                    tiktoken.encode_ordinary(text).len(),
                    "{encoding}, {file:?}: {text:?}"
                );
                assert_eq!(count, ready_made.count(text), "{encoding}, {file:?}: {text:?}");
                tokens[at] += count;
            }
            texts += 1;
            bytes += text.len();
        }
    }
    eprintln!(
        "{} files, {texts} texts, {bytes} bytes: o200k_base {} tokens, cl100k_base {} tokens, \
         the same three ways",
        files.len(),
        tokens[0],
        tokens[1]
    );
}
