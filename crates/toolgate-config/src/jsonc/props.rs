//! Property tests of the JSONC stripper: it keeps every byte's place (so errors point into the
//! original), leaves strict JSON exactly as it was, and JSON with comments and trailing commas
//! put anywhere between its tokens reads as the same value as without them.

use proptest::prelude::*;
use serde_json::Value;

use super::strip;

/// Any JSON value of at most four levels, its strings with quotes, backslashes, slashes and
/// stars in them.
pub(crate) fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter_map("finite", |x| serde_json::Number::from_f64(x).map(Value::Number)),
        r#"([/*,\]}"\\ ]|\PC){0,8}"#.prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((r#"([/*,"\\]|\PC){0,4}"#, inner), 0..5)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// What may go between two tokens.
#[derive(Debug, Clone)]
enum Noise {
    Nothing,
    Space,
    Line(String),
    Block(String),
}

fn noise() -> impl Strategy<Value = Noise> {
    prop_oneof![
        4 => Just(Noise::Nothing),
        1 => Just(Noise::Space),
        1 => "[^\n]{0,10}".prop_map(Noise::Line),
        1 => "\\PC{0,10}".prop_filter_map("a block comment cannot hold its end", |text| {
            (!text.contains("*/")).then_some(Noise::Block(text))
        }),
    ]
}

/// `value` as JSON with `noise` between its tokens (taken in turn, again from the start when
/// used up) and, where `commas` says, a trailing comma in a container.
fn write(value: &Value, noise: &[Noise], commas: &[bool]) -> String {
    struct Writer<'a> {
        out: String,
        noise: std::iter::Cycle<std::slice::Iter<'a, Noise>>,
        commas: std::iter::Cycle<std::slice::Iter<'a, bool>>,
    }
    impl Writer<'_> {
        fn gap(&mut self) {
            match self.noise.next() {
                None | Some(Noise::Nothing) => {}
                Some(Noise::Space) => self.out.push_str(" \n\t"),
                Some(Noise::Line(text)) => {
                    self.out.push_str("//");
                    self.out.push_str(text);
                    self.out.push('\n');
                }
                Some(Noise::Block(text)) => {
                    self.out.push_str("/*");
                    self.out.push_str(text);
                    self.out.push_str("*/");
                }
            }
        }
        fn value(&mut self, value: &Value) {
            self.gap();
            match value {
                Value::Array(items) => {
                    self.out.push('[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            self.out.push(',');
                        }
                        self.value(item);
                    }
                    self.close(!items.is_empty(), ']');
                }
                Value::Object(members) => {
                    self.out.push('{');
                    for (i, (key, item)) in members.iter().enumerate() {
                        if i > 0 {
                            self.out.push(',');
                        }
                        self.gap();
                        self.out.push_str(&Value::from(key.as_str()).to_string());
                        self.gap();
                        self.out.push(':');
                        self.value(item);
                    }
                    self.close(!members.is_empty(), '}');
                }
                scalar => self.out.push_str(&scalar.to_string()),
            }
            self.gap();
        }
        fn close(&mut self, filled: bool, bracket: char) {
            self.gap();
            if filled && self.commas.next().copied().unwrap_or(false) {
                self.out.push(',');
                self.gap();
            }
            self.out.push(bracket);
        }
    }
    let mut writer =
        Writer { out: String::new(), noise: noise.iter().cycle(), commas: commas.iter().cycle() };
    writer.value(value);
    writer.out
}

proptest! {
    #[test]
    fn every_byte_keeps_its_place(text in r#"([/*,\]}"\\\n ]|\PC){0,40}"#) {
        let stripped = strip(&text);
        prop_assert_eq!(stripped.len(), text.len());
        for (before, after) in text.bytes().zip(stripped.bytes()) {
            prop_assert!(before == after || after == b' ', "{:?} -> {:?}", text, stripped);
            prop_assert_eq!(before == b'\n', after == b'\n');
        }
    }

    #[test]
    fn strict_json_is_left_alone(value in json(), pretty in any::<bool>()) {
        let text = if pretty { serde_json::to_string_pretty(&value).expect("JSON") } else { value.to_string() };
        prop_assert_eq!(strip(&text), text);
    }

    #[test]
    fn comments_and_trailing_commas_change_nothing(
        value in json(),
        noise in prop::collection::vec(noise(), 1..8),
        commas in prop::collection::vec(any::<bool>(), 1..4),
    ) {
        let text = write(&value, &noise, &commas);
        let read: Result<Value, _> = serde_json::from_str(&strip(&text));
        prop_assert!(read.is_ok(), "{:?} -> {:?}: {:?}", text, strip(&text), read.err());
        prop_assert_eq!(read.expect("checked"), value);
    }
}
