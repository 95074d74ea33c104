//! Numbers into words: summaries of samples, Markdown tables, the JSON file. Shared with
//! `scale`.

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use serde::Serialize;

/// Milliseconds to the microsecond, as a float (what the tables and the JSON use).
pub(crate) fn ms(duration: Duration) -> f64 {
    duration.as_micros() as f64 / 1000.0
}

/// The smallest, middle and largest of some samples, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Summary {
    pub(crate) min: f64,
    pub(crate) median: f64,
    pub(crate) max: f64,
}

impl Summary {
    /// The summary of `samples` (all zero when there are none).
    pub(crate) fn of(samples: &[f64]) -> Summary {
        let sorted = sorted(samples);
        let (Some(&min), Some(&max)) = (sorted.first(), sorted.last()) else {
            return Summary { min: 0.0, median: 0.0, max: 0.0 };
        };
        Summary { min, median: median_of_sorted(&sorted), max }
    }

    /// `min / median / max`, with `decimals` digits after the point.
    pub(crate) fn show(&self, decimals: usize) -> String {
        format!("{:.d$} / {:.d$} / {:.d$}", self.min, self.median, self.max, d = decimals)
    }
}

/// The `q` quantile (0..=1) of `samples` by nearest rank; 0 when there are none.
pub(crate) fn quantile(samples: &[f64], q: f64) -> f64 {
    let sorted = sorted(samples);
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The median of `samples`: the mean of the middle two for an even count; 0 when there are
/// none.
pub(crate) fn median(samples: &[f64]) -> f64 {
    median_of_sorted(&sorted(samples))
}

fn sorted(samples: &[f64]) -> Vec<f64> {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
}

fn median_of_sorted(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// A Markdown table whose columns line up in a terminal too.
#[derive(Debug)]
pub(crate) struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(header: &[&str]) -> Table {
        Table { header: header.iter().map(|cell| (*cell).to_owned()).collect(), rows: Vec::new() }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.header.len(), "a row has one cell per column");
        self.rows.push(cells);
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut widths: Vec<usize> = self.header.iter().map(|cell| cell.chars().count()).collect();
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let line = |f: &mut std::fmt::Formatter<'_>, cells: &[String]| {
            for (cell, width) in cells.iter().zip(&widths) {
                write!(f, "| {cell:<width$} ")?;
            }
            writeln!(f, "|")
        };
        line(f, &self.header)?;
        let rule: Vec<String> = widths.iter().map(|width| "-".repeat(*width)).collect();
        line(f, &rule)?;
        for row in &self.rows {
            line(f, row)?;
        }
        Ok(())
    }
}

/// Writes `report` to `path` as pretty JSON.
pub(crate) fn write_json(path: &Path, report: &impl Serialize) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(report).context("cannot serialise the report")?;
    std::fs::write(path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
}

/// `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_and_quantiles() {
        let samples = [3.0, 1.0, 2.0, 10.0];
        assert_eq!(Summary::of(&samples), Summary { min: 1.0, median: 2.5, max: 10.0 });
        assert_eq!(Summary::of(&[]), Summary { min: 0.0, median: 0.0, max: 0.0 });
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
        assert_eq!(quantile(&samples, 0.5), 2.0);
        assert_eq!(quantile(&samples, 0.9), 10.0);
        assert_eq!(quantile(&samples, 0.0), 1.0);
        assert_eq!(quantile(&[], 0.9), 0.0);
    }

    #[test]
    fn tables_line_up() {
        let mut table = Table::new(&["a", "long header"]);
        table.row(vec!["wide cell".to_owned(), "x".to_owned()]);
        let text = table.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "| a         | long header |");
        assert_eq!(lines[1], "| --------- | ----------- |");
        assert_eq!(lines[2], "| wide cell | x           |");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
