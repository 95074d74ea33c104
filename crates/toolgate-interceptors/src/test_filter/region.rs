//! What a runner's parser makes of one stretch of lines: which lines to keep, grouped in
//! blocks (a failure, an error, a summary line), and the counts for the event.

use super::text::Lines;

/// The test runners the filter knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// `cargo test` (libtest), with the build before it.
    CargoTest,
    /// `cargo nextest run`, with the build before it.
    Nextest,
    /// pytest.
    Pytest,
    /// jest.
    Jest,
    /// vitest.
    Vitest,
    /// `go test`, plain and `-v`.
    GoTest,
}

impl Runner {
    /// How the runner is named in the note and the event.
    pub fn name(self) -> &'static str {
        match self {
            Runner::CargoTest => "cargo test",
            Runner::Nextest => "cargo nextest",
            Runner::Pytest => "pytest",
            Runner::Jest => "jest",
            Runner::Vitest => "vitest",
            Runner::GoTest => "go test",
        }
    }
}

/// What a kept line is, which decides whether the options keep it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Always kept: a failure's name, message, location, diff; a summary; an error.
    Keep,
    /// A passing test's line: kept with `keep_passed_names`.
    Passed,
    /// What a test printed: kept with `keep_output`.
    Output,
}

/// Lines that belong together. A failure's block is capped at `max_lines_per_failure`.
#[derive(Debug, Default)]
pub(crate) struct Block {
    pub(crate) lines: Vec<(usize, Kind)>,
    pub(crate) failure: bool,
}

impl Block {
    pub(crate) fn failure(header: usize) -> Block {
        Block { lines: vec![(header, Kind::Keep)], failure: true }
    }

    pub(crate) fn push(&mut self, line: usize, kind: Kind) {
        self.lines.push((line, kind));
    }
}

/// One runner's output, from `start` to `end` (exclusive).
#[derive(Debug)]
pub(crate) struct Region {
    pub(crate) runner: Runner,
    pub(crate) end: usize,
    pub(crate) blocks: Vec<Block>,
    /// Whether this is test output at all. When it is not (a `cargo build`, say), the
    /// stretch is kept as it was written.
    pub(crate) tests: bool,
    pub(crate) passed: u64,
    pub(crate) failed: u64,
    /// Whether `passed` is known (plain `go test` does not say).
    pub(crate) passed_known: bool,
    /// Errors outside any test: compile errors, collection errors.
    pub(crate) errors: u64,
}

impl Region {
    pub(crate) fn new(runner: Runner, start: usize) -> Region {
        Region {
            runner,
            end: start,
            blocks: Vec::new(),
            tests: false,
            passed: 0,
            failed: 0,
            passed_known: true,
            errors: 0,
        }
    }

    /// Keeps one line on its own.
    pub(crate) fn line(&mut self, line: usize, kind: Kind) {
        self.blocks.push(Block { lines: vec![(line, kind)], failure: false });
    }

    /// Keeps a block, unless it is empty.
    pub(crate) fn block(&mut self, block: Block) {
        if !block.lines.is_empty() {
            self.blocks.push(block);
        }
    }
}

/// What the options keep.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keep {
    pub(crate) max_lines_per_failure: usize,
    pub(crate) passed_names: bool,
    pub(crate) output: bool,
}

/// Writes what `region` keeps of `lines` into `out`, one line each.
pub(crate) fn render(region: &Region, lines: &Lines<'_>, keep: Keep, out: &mut String) {
    for block in &region.blocks {
        let wanted = block.lines.iter().filter(|(_, kind)| match kind {
            Kind::Keep => true,
            Kind::Passed => keep.passed_names,
            Kind::Output => keep.output,
        });
        let total = wanted.clone().count();
        let shown = if block.failure && total > keep.max_lines_per_failure {
            keep.max_lines_per_failure
        } else {
            total
        };
        let mut indent = "";
        for (i, _) in wanted.take(shown) {
            let line = lines.plain(*i);
            indent = &line[..line.len() - line.trim_start().len()];
            out.push_str(line.trim_end());
            out.push('\n');
        }
        if shown < total {
            let left = total - shown;
            let s = if left == 1 { "" } else { "s" };
            out.push_str(&format!(
                "{indent}[test_filter: {left} more line{s} of this failure left out]\n"
            ));
        }
    }
}
