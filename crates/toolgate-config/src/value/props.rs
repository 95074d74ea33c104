//! Property tests of the three parsers: any text is a tree or an error (a TOML or JSON one with
//! its line and column; never a panic), and a tree written by TOML's, JSON's or YAML's own
//! writer reads back as that tree.

use proptest::prelude::*;

use super::{Value, parse_json, parse_toml, parse_yaml};

/// What a tree may hold: `nulls` where the language has them.
fn tree(nulls: bool) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::Boolean),
        any::<i64>().prop_map(Value::Integer),
        prop::num::f64::NORMAL.prop_map(Value::Float),
        "\\PC{0,8}|[\\x00-\\x1f\"'\\\\#:{}\\[\\],&*!|>%@` -]{0,6}".prop_map(Value::String),
    ];
    let leaf =
        if nulls { prop_oneof![1 => Just(Value::Null), 6 => leaf].boxed() } else { leaf.boxed() };
    let inner =
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                table(inner),
            ]
        });
    table(inner)
}

/// A table of `values` with distinct keys.
fn table(values: impl Strategy<Value = Value> + Clone) -> impl Strategy<Value = Value> {
    prop::collection::vec(("\\PC{0,6}|[a-z_]{1,8}|[0-9.]{1,4}|true|null|~", values), 0..5).prop_map(
        |entries| {
            let mut table: Vec<(String, Value)> = Vec::new();
            for (key, value) in entries {
                if !table.iter().any(|(k, _)| *k == key) {
                    table.push((key, value));
                }
            }
            Value::Table(table)
        },
    )
}

/// `value` with every table's keys sorted (as a TOML table comes out).
fn sorted(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        Value::Table(entries) => {
            let mut entries: Vec<(String, Value)> =
                entries.iter().map(|(k, v)| (k.clone(), sorted(v))).collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Table(entries)
        }
        other => other.clone(),
    }
}

pub(crate) fn to_toml(value: &Value) -> toml::Value {
    match value {
        Value::Boolean(b) => toml::Value::Boolean(*b),
        Value::Integer(i) => toml::Value::Integer(*i),
        Value::Float(x) => toml::Value::Float(*x),
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(items) => toml::Value::Array(items.iter().map(to_toml).collect()),
        Value::Table(entries) => {
            toml::Value::Table(entries.iter().map(|(k, v)| (k.clone(), to_toml(v))).collect())
        }
        Value::Null | Value::Datetime => unreachable!("not in a TOML tree"),
    }
}

pub(crate) fn to_yaml(value: &Value) -> saphyr::Yaml<'_> {
    use saphyr::{Scalar, Yaml};
    match value {
        Value::Null => Yaml::Value(Scalar::Null),
        Value::Boolean(b) => Yaml::Value(Scalar::Boolean(*b)),
        Value::Integer(i) => Yaml::Value(Scalar::Integer(*i)),
        Value::Float(x) => Yaml::Value(Scalar::FloatingPoint((*x).into())),
        Value::String(s) => Yaml::Value(Scalar::String(s.as_str().into())),
        Value::Array(items) => Yaml::Sequence(items.iter().map(to_yaml).collect()),
        Value::Table(entries) => Yaml::Mapping(
            entries
                .iter()
                .map(|(k, v)| (Yaml::Value(Scalar::String(k.as_str().into())), to_yaml(v)))
                .collect(),
        ),
        Value::Datetime => unreachable!("not in a YAML tree"),
    }
}

proptest! {
    #[test]
    fn any_text_is_a_tree_or_an_error_with_its_place(
        text in "\\PC{0,40}|[\\[\\]{}\"'=:,#\\n a-z0-9.-]{0,60}|([-?:] |  |\\n|[a-z]+|&a|\\*a|!t ){0,20}",
    ) {
        for (language, parsed) in [
            ("TOML", parse_toml(&text)),
            ("JSON", parse_json(&text)),
            ("YAML", parse_yaml(&text)),
        ] {
            if let Err(error) = parsed {
                prop_assert!(!error.message.is_empty(), "{} error without a message", language);
                // A syntax error says where; YAML's errors about a node name its path instead
                // (empty at the top).
                prop_assert!(
                    language == "YAML" || error.message.contains(" at line "),
                    "{} error without a place: {}", language, error.message
                );
            }
        }
    }

    #[test]
    fn toml_written_reads_back(value in tree(false)) {
        let toml::Value::Table(table) = to_toml(&value) else { unreachable!("a table") };
        let text = toml::to_string(&table).expect("TOML writes any table");
        prop_assert_eq!(parse_toml(&text).map_err(|e| e.message), Ok(sorted(&value)), "{}", text);
    }

    #[test]
    fn json_written_reads_back(value in tree(true), pretty in any::<bool>()) {
        let json = value.to_json();
        let text = if pretty { serde_json::to_string_pretty(&json).expect("JSON") } else { json.to_string() };
        prop_assert_eq!(parse_json(&text).map_err(|e| e.message), Ok(value), "{}", text);
    }

    #[test]
    fn yaml_written_reads_back(value in tree(true)) {
        let mut text = String::new();
        saphyr::YamlEmitter::new(&mut text).dump(&to_yaml(&value)).expect("YAML writes any tree");
        prop_assert_eq!(parse_yaml(&text).map_err(|e| e.message), Ok(value), "{}", text);
    }
}
