//! Every figure the documentation quotes says where it comes from: a `Source:` line naming the
//! command and the committed output (see the top of docs/benchmarks.md for the convention).

use std::collections::BTreeSet;

/// The pages that exist to quote measurements: every figure on them is followed, within its
/// section, by a `Source:` line.
pub(crate) const FIGURE_PAGES: [&str; 2] = ["docs/benchmarks.md", "docs/token-economy.md"];

/// Sections of other pages that sum the measurements up, held to the same rule.
pub(crate) const FIGURE_SECTIONS: [(&str, &str); 1] = [("README.md", "Benchmarks")];

/// Sections whose figures were measured by hand and whose outputs were not kept: their
/// `Source:` lines may say `by hand` and give the command instead of an output.
pub(crate) const MEASURED_BY_HAND: [(&str, &str); 1] = [("docs/benchmarks.md", "Binary size")];

/// Where committed bench outputs live.
pub(crate) const RESULTS: &str = "bench/results/";

/// A run of non-blank lines (a paragraph, a list, a table), or a fenced block or a generated
/// region (`<!-- bench:NAME -->` … `<!-- /bench:NAME -->`) whole, with the section it is in.
#[derive(Debug)]
pub(crate) struct Block {
    /// The heading above it (`""` before the first one).
    pub(crate) section: String,
    /// Counts headings, so two sections of one name stay apart.
    pub(crate) section_index: usize,
    /// 1-based line number of its first line.
    pub(crate) line: usize,
    pub(crate) lines: Vec<String>,
}

fn opens_generated(line: &str) -> bool {
    line.starts_with("<!-- bench:") || line.starts_with("<!-- token-economy:begin")
}

fn closes_generated(line: &str) -> bool {
    line.starts_with("<!-- /bench:") || line.starts_with("<!-- token-economy:end")
}

/// The blocks of a Markdown text.
pub(crate) fn blocks(text: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut section = String::new();
    let mut section_index = 0;
    let mut current: Option<Block> = None;
    let (mut in_fence, mut in_generated) = (false, false);
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let verbatim = in_fence || in_generated;
        if trimmed.starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence && opens_generated(trimmed) {
            in_generated = true;
        } else if !in_fence && closes_generated(trimmed) {
            in_generated = false;
        }
        if !verbatim && !in_generated && (trimmed.is_empty() || trimmed.starts_with('#')) {
            found.extend(current.take());
            if trimmed.starts_with('#') {
                section = trimmed.trim_start_matches('#').trim().to_owned();
                section_index += 1;
            }
            continue;
        }
        current
            .get_or_insert_with(|| Block {
                section: section.clone(),
                section_index,
                line: index + 1,
                lines: Vec::new(),
            })
            .lines
            .push(line.to_owned());
    }
    found.extend(current);
    found
}

/// The line is a `Source:` line.
pub(crate) fn is_source(line: &str) -> bool {
    line.trim_start().starts_with("Source:")
}

/// The text of `line` outside its inline code spans (a command or a setting is not a figure).
fn outside_code(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

/// Units of measured figures. Whole milliseconds, seconds and sizes are mostly settings (a
/// `100 KiB` payload, `4 s` idle), so those units count only on a number with a decimal point;
/// per cent, ×, µs, ns and calls per second always count.
const UNITS: [(&str, bool); 13] = [
    ("calls/s", true),
    ("µs", true),
    ("ns", true),
    ("%", true),
    ("×", true),
    ("ms", false),
    ("KiB", false),
    ("MiB", false),
    ("GiB", false),
    ("KB", false),
    ("MB", false),
    ("GB", false),
    ("s", false),
];

/// The figures in `text`: a number followed by a unit (see [`UNITS`]), unless it is a target
/// (`at most 50 µs`, `at least 0.8 ×`) or inside inline code. In a table or a fenced block
/// (a bench's printed output), whose header says the unit, a bare number with a decimal point
/// counts too (a version, with two, does not).
pub(crate) fn figures(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        let bare_counts = in_fence || trimmed.starts_with('|');
        let line = outside_code(line);
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        let mut i = 0;
        while i < chars.len() {
            let (start, c) = chars[i];
            let after_word = i > 0 && {
                let previous = chars[i - 1].1;
                previous.is_alphanumeric() || previous == '.' || previous == '_'
            };
            if !c.is_ascii_digit() || after_word {
                i += 1;
                continue;
            }
            // The number, with thousands separators, decimals and a range (`1.05–1.16`).
            let mut j = i;
            while j < chars.len() {
                let c = chars[j].1;
                let joins_digits = matches!(c, ',' | '.' | '–' | '-')
                    && chars.get(j + 1).is_some_and(|(_, next)| next.is_ascii_digit());
                if c.is_ascii_digit() || joins_digits {
                    j += 1;
                } else {
                    break;
                }
            }
            let end = chars.get(j).map_or(line.len(), |(at, _)| *at);
            let number = &line[start..end];
            let rest =
                line[end..].strip_prefix([' ', '\u{a0}', '\u{202f}']).unwrap_or(&line[end..]);
            let unit = UNITS.iter().find(|(unit, always)| {
                rest.strip_prefix(unit).is_some_and(|after| {
                    !after.starts_with(|c: char| c.is_alphanumeric())
                        && (*always || number.contains('.'))
                })
            });
            let before = line[..start].trim_end();
            let target =
                ["at most", "at least", "≤", "≥"].iter().any(|word| before.ends_with(word));
            let bare = bare_counts && unit.is_none() && number.matches('.').count() == 1;
            if let Some((unit, _)) = unit
                && !target
            {
                found.push(format!("{number} {unit}"));
            } else if bare && !target {
                found.push(number.to_owned());
            }
            i = j;
        }
    }
    found
}

/// What is wrong with a `Source:` line, if anything: `Source: `COMMAND` → `OUTPUT`, …` with
/// every output a committed file, at least one under bench/results/ (or `→ asserted by `TEST``),
/// and optionally a note in brackets; or, where `by_hand` allows, `Source: by hand: `COMMAND`…`.
/// `tracked` holds the repository's tracked files.
pub(crate) fn source_problem(
    line: &str,
    tracked: &BTreeSet<String>,
    by_hand: bool,
) -> Option<String> {
    let rest = line.trim_start().strip_prefix("Source:")?.trim();
    let spans = |text: &str| -> Vec<String> {
        text.split('`').skip(1).step_by(2).map(str::to_owned).collect()
    };
    if let Some(hand) = rest.strip_prefix("by hand") {
        if !by_hand {
            return Some(
                "`by hand` is accepted only in the sections listed in MEASURED_BY_HAND; \
                 name the command and its committed output"
                    .to_owned(),
            );
        }
        return spans(hand)
            .is_empty()
            .then(|| "a figure measured by hand still names its command".to_owned());
    }
    let Some((command, outputs)) = rest.split_once('→') else {
        return Some(
            "expected `COMMAND` → `bench/results/…` (or `→ asserted by `TEST``)".to_owned(),
        );
    };
    if spans(command).is_empty() {
        return Some("names no command (in backticks) before `→`".to_owned());
    }
    // A note in brackets after the outputs may name benchmarks or rows: not files.
    let outputs = outputs.split('(').next().unwrap_or_default();
    let outputs_named = spans(outputs);
    if outputs_named.is_empty() {
        return Some("names no output (in backticks) after `→`".to_owned());
    }
    let missing: Vec<&String> =
        outputs_named.iter().filter(|path| !is_tracked(path, tracked)).collect();
    if !missing.is_empty() {
        return Some(format!("names files that are not committed: {missing:?}"));
    }
    let asserted = outputs.trim_start().starts_with("asserted by");
    (!asserted && !outputs_named.iter().any(|path| path.starts_with(RESULTS))).then(|| {
        "names no committed output under bench/results/ (or a test, as `→ asserted by `TEST``)"
            .to_owned()
    })
}

/// `path` is a tracked file, or (ending in `/`) a folder holding one.
pub(crate) fn is_tracked(path: &str, tracked: &BTreeSet<String>) -> bool {
    if path.ends_with('/') {
        tracked.range(path.to_owned()..).next().is_some_and(|first| first.starts_with(path))
    } else {
        tracked.contains(path)
    }
}

/// Every `bench/results/…` path in `text` (in code spans, links or prose), with its line.
pub(crate) fn quoted_results_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        for (at, _) in line.match_indices(RESULTS) {
            let path: String = line[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'))
                .collect();
            found.push((index + 1, path.trim_end_matches(['.', ',']).to_owned()));
        }
    }
    found
}

/// The blocks of `text` in scope (all of them, or those of `section`) that quote a figure
/// with no `Source:` line after them in their section: each block's line and its figures.
pub(crate) fn figures_without_source(
    text: &str,
    section: Option<&str>,
) -> Vec<(usize, Vec<String>)> {
    let blocks = blocks(text);
    let mut found = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        if section.is_some_and(|name| block.section != name) {
            continue;
        }
        let quoted = figures(
            &block
                .lines
                .iter()
                .filter(|line| !is_source(line))
                .cloned()
                .collect::<Vec<_>>()
                .join("\n"),
        );
        let sourced = blocks[i..]
            .iter()
            .take_while(|later| later.section_index == block.section_index)
            .any(|later| later.lines.iter().any(|line| is_source(line)));
        if !quoted.is_empty() && !sourced {
            found.push((block.line, quoted));
        }
    }
    found
}
