//! Canonical JSON: one text for one JSON value, whatever order its object keys arrived in, so
//! that hashes of the same value agree.

use serde_json::Value;

/// `value` as canonical JSON: object keys sorted (by their UTF-8 bytes) at every depth, no
/// whitespace, strings and numbers as `serde_json` writes them.
///
/// This is not RFC 8785 (JCS), which sorts keys by UTF-16 code units and formats numbers its
/// own way; the two agree on ASCII keys and integers.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&json_string(key));
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        // A scalar's `Display` is its compact JSON.
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string must serialize to JSON")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::canonical_json;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth_without_whitespace() {
        let value = json!({"b": 1, "a": {"z": [3, {"y": null, "x": true}], "c": "é\n"}});
        assert_eq!(
            canonical_json(&value),
            r#"{"a":{"c":"é\n","z":[3,{"x":true,"y":null}]},"b":1}"#
        );
    }
}
