//! Counters of fractions (dollars), which the exporter's counters, whole numbers, cannot hold:
//! kept here by the value of their one label, and written after the exporter's series in the
//! same text format.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};

/// One counter family with one label.
pub(crate) struct FractionCounter {
    name: &'static str,
    help: &'static str,
    label: &'static str,
    values: Mutex<BTreeMap<String, f64>>,
}

impl FractionCounter {
    pub(crate) fn new(name: &'static str, help: &'static str, label: &'static str) -> Self {
        FractionCounter { name, help, label, values: Mutex::default() }
    }

    /// Adds `amount` to the series whose label is `value`; an amount that is not a positive
    /// number changes nothing (a counter only grows).
    pub(crate) fn add(&self, value: &str, amount: f64) {
        if !(amount.is_finite() && amount > 0.0) {
            return;
        }
        let mut values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        match values.get_mut(value) {
            Some(total) => *total += amount,
            None => {
                values.insert(value.to_owned(), amount);
            }
        }
    }

    /// Appends the family to `out` (nothing before its first sample).
    pub(crate) fn render(&self, out: &mut String) {
        let values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        if values.is_empty() {
            return;
        }
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} counter", self.name);
        for (value, total) in values.iter() {
            let _ = writeln!(out, "{}{{{}=\"{}\"}} {total}", self.name, self.label, escape(value));
        }
        out.push('\n');
    }
}

/// `value` as a label value of the text format: backslash, double quote and line feed
/// escaped.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_by_label_writes_the_text_format_and_only_grows() {
        let cost = FractionCounter::new("x_usd_total", "Dollars", "model");
        let mut empty = String::new();
        cost.render(&mut empty);
        assert_eq!(empty, "", "nothing before the first sample");
        cost.add("a", 0.25);
        cost.add("a", 0.5);
        cost.add("b\"\\\n", 0.125);
        for ignored in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            cost.add("a", ignored);
        }
        let mut out = String::from("other 1");
        cost.render(&mut out);
        assert_eq!(
            out,
            "other 1\n# HELP x_usd_total Dollars\n# TYPE x_usd_total counter\n\
             x_usd_total{model=\"a\"} 0.75\nx_usd_total{model=\"b\\\"\\\\\\n\"} 0.125\n\n"
        );
    }
}
