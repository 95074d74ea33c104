//! Whether every number written in a JSON text is exactly the number it parsed to.
//!
//! `serde_json` (without `arbitrary_precision`) reads a number it cannot hold exactly as the
//! nearest `f64`: `12345678901234567890123` and `0.10000000000000000555` come back as
//! `1.2345678901234568e22` and `0.1`. TOON writes numbers from the parsed value, so such a
//! number would reach the model with other digits than the server wrote, and decoding the
//! TOON again would not notice (it gives back the same lossy value). This check reads the
//! number literals of the text itself and compares each, digit by digit, with the value it
//! became; a text with any number that changed stays JSON.
//!
//! Zero is zero whatever its sign: TOON writes `-0` as `0` (spec §2), and JSON's data model
//! has one zero.

use serde_json::{Number, Value};

/// Whether the number literals of `text`, in order, are exactly the numbers of `value` (its
/// parse) in document order. Any doubt (a different count, a literal that does not read) is
/// `false`.
pub(crate) fn exact(text: &str, value: &Value) -> bool {
    let mut parsed = Vec::new();
    collect(value, &mut parsed);
    let mut literals = literals(text);
    for number in parsed {
        let Some(literal) = literals.next() else { return false };
        match (Decimal::of_literal(literal), Decimal::of_number(number)) {
            (Some(written), Some(read)) if written == read => {}
            _ => return false,
        }
    }
    literals.next().is_none()
}

/// The numbers of `value`, depth first, object members in their order.
fn collect<'a>(value: &'a Value, into: &mut Vec<&'a Number>) {
    match value {
        Value::Number(number) => into.push(number),
        Value::Array(items) => items.iter().for_each(|item| collect(item, into)),
        Value::Object(members) => members.values().for_each(|member| collect(member, into)),
        Value::Null | Value::Bool(_) | Value::String(_) => {}
    }
}

/// The number literals of a JSON text, outside strings, in order.
fn literals(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            match bytes[at] {
                b'"' => {
                    at += 1;
                    while at < bytes.len() && bytes[at] != b'"' {
                        at += if bytes[at] == b'\\' { 2 } else { 1 };
                    }
                    at += 1;
                }
                b'-' | b'0'..=b'9' => {
                    let start = at;
                    while at < bytes.len()
                        && matches!(bytes[at], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                    {
                        at += 1;
                    }
                    // Every byte taken is ASCII, so both ends are character boundaries.
                    return Some(&text[start..at]);
                }
                _ => at += 1,
            }
        }
        None
    })
}

/// A number as `±0.DIGITS × 10^exponent`, with no leading or trailing zero digit; zero has no
/// digits and no sign.
#[derive(Debug, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: String,
    exponent: i64,
}

impl Decimal {
    /// A JSON number literal (`-12.50e3`), or `None` when it is not one.
    fn of_literal(literal: &str) -> Option<Decimal> {
        let (negative, unsigned) = match literal.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, literal),
        };
        let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
            Some(at) => (&unsigned[..at], unsigned[at + 1..].parse::<i64>().ok()?),
            None => (unsigned, 0),
        };
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if whole.is_empty() || !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let point = i64::try_from(whole.len()).ok()?.checked_add(exponent)?;
        Some(Decimal::new(negative, &format!("{whole}{fraction}"), point))
    }

    /// What `serde_json` parsed: an integer exactly, a float as its shortest decimal (the
    /// digits TOON writes).
    fn of_number(number: &Number) -> Option<Decimal> {
        if number.is_f64() {
            let float = number.as_f64()?;
            if !float.is_finite() {
                return None;
            }
            // `{:e}` is the shortest form that reads back as the same f64: `1.25e-7`.
            let scientific = format!("{float:e}");
            return Decimal::of_literal(&scientific);
        }
        Decimal::of_literal(&number.to_string())
    }

    /// `±0.digits × 10^point`, normalised.
    fn new(negative: bool, digits: &str, point: i64) -> Decimal {
        let leading = digits.bytes().take_while(|&b| b == b'0').count();
        let digits = digits[leading..].trim_end_matches('0');
        if digits.is_empty() {
            return Decimal { negative: false, digits: String::new(), exponent: 0 };
        }
        let leading = i64::try_from(leading).unwrap_or(i64::MAX);
        Decimal { negative, digits: digits.to_owned(), exponent: point.saturating_sub(leading) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> bool {
        let value: Value = serde_json::from_str(text).expect("the test's JSON parses");
        exact(text, &value)
    }

    #[test]
    fn numbers_serde_json_holds_exactly_are_exact() {
        for text in [
            "[0, -0, 1, -1, 18446744073709551615, -9223372036854775808]",
            "[0.5, -0.25, 1.0, 1.50, 100e-2, 1E3, 2.5e+10, 1e21, 1e-7, 0.1, 3.141592653589793]",
            r#"{"a": {"b": [1, {"c": 2.5}]}, "d": "1.2345678901234567890 in a string", "e": 3}"#,
            r#"{"escaped \" 99": 7, "x": "\\", "y": 8}"#,
            "{\"é\": -12.5e-3}",
            "[]",
            // A number that ends the text.
            "7",
            "-12.5e3",
        ] {
            assert!(check(text), "{text}");
        }
    }

    #[test]
    fn numbers_serde_json_rounds_are_not() {
        for text in [
            "[12345678901234567890123]",
            "[-98765432109876543210]",
            "[0.10000000000000000555]",
            "[3.14159265358979323846]",
            "{\"a\": 1, \"b\": 9007199254740993.0}",
        ] {
            assert!(!check(text), "{text}");
        }
    }

    #[test]
    fn a_duplicate_key_leaves_a_literal_without_its_number() {
        // serde_json keeps the last value: the text has two numbers, the value one.
        assert!(!check(r#"{"a": 1, "a": 2}"#));
    }

    #[test]
    fn decimals_are_normalised() {
        let d = |text| Decimal::of_literal(text).expect("a literal");
        assert_eq!(d("1.50"), d("15e-1"));
        assert_eq!(d("0.0012"), d("1.2e-3"));
        assert_eq!(d("-0"), d("0.000"));
        assert_eq!(d("120"), Decimal { negative: false, digits: "12".into(), exponent: 3 });
        assert_ne!(d("-1"), d("1"));
        assert_ne!(d("10"), d("1"));
        assert_eq!(Decimal::of_literal("1.2.3"), None);
        assert_eq!(Decimal::of_literal("-"), None);
        assert_eq!(Decimal::of_literal(".5"), None);
        assert_eq!(Decimal::of_literal("1e"), None);
    }
}
