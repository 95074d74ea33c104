//! Reading a JSON text as exactly what it says: a value with no repeated member name (a
//! parser keeps one of them and the model would never see the other), and numbers that are
//! exactly the numbers written ([`numbers`]).

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::numbers;

/// Why a text cannot be read exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inexact {
    /// Not JSON, or JSON with a member name twice in one object.
    NotJson,
    /// A number the parser could not hold exactly.
    Number,
}

/// `text` as a JSON value, when it reads exactly.
pub(crate) fn parse(text: &str) -> Result<Value, Inexact> {
    let Strict(value) = serde_json::from_str(text).map_err(|_| Inexact::NotJson)?;
    if !numbers::exact(text, &value) {
        return Err(Inexact::Number);
    }
    Ok(value)
}

/// A value whose objects have no repeated member name.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Strict, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Number::from_f64(value).map(Value::Number).ok_or_else(|| E::custom("not a finite number"))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            let Strict(value) = map.next_value()?;
            if members.contains_key(&name) {
                return Err(de::Error::custom("a member name appears twice"));
            }
            members.insert(name, value);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_reads_as_serde_json_reads_it() {
        let text = r#"{"a": [1, -2, 2.5, "x", null, true, {"b": {}}], "c": "é\u00e9", "d": []}"#;
        assert_eq!(parse(text), Ok(serde_json::from_str::<Value>(text).expect("JSON")));
        assert_eq!(parse("[]"), Ok(json!([])));
        assert_eq!(parse("-12.5e3"), Ok(json!(-12.5e3)));
        assert_eq!(parse(r#""a \"quoted\" word""#), Ok(json!("a \"quoted\" word")));
    }

    #[test]
    fn a_repeated_member_name_is_not_read() {
        assert_eq!(parse(r#"{"a": "kept?", "a": "or this?"}"#), Err(Inexact::NotJson));
        assert_eq!(parse(r#"[{"x": 1}, {"y": {"z": 1, "z": 1}}]"#), Err(Inexact::NotJson));
        // The same name in different objects is fine.
        assert!(parse(r#"[{"x": 1}, {"x": 2}]"#).is_ok());
    }

    #[test]
    fn a_rounded_number_is_not_read() {
        assert_eq!(parse("[12345678901234567890123]"), Err(Inexact::Number));
        assert_eq!(parse("not json"), Err(Inexact::NotJson));
    }
}
