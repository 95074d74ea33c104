//! What a script says about itself in `pub fn meta()`: the interceptor settings every
//! built-in has, each of which `[[pipeline]]` may override.
//!
//! ```rune
//! pub fn meta() {
//!     #{ priority: -10, fail_open: false, timeout: "500ms", tools: ["write_*"] }
//! }
//! ```

use std::time::Duration;

use serde_json::{Map, Value};

/// The settings a script declares. Absent means the default of the `script` kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptMeta {
    /// `"validation"` (decides, changes nothing) or `"mutation"` (may change messages).
    pub validation: Option<bool>,
    /// `"active"` or `"audit"`.
    pub audit: Option<bool>,
    pub priority: Option<i32>,
    pub fail_open: Option<bool>,
    pub timeout: Option<Duration>,
    pub servers: Vec<String>,
    pub tools: Vec<String>,
    pub description: Option<String>,
}

const KEYS: &[&str] =
    &["type", "mode", "priority", "fail_open", "timeout", "servers", "tools", "description"];

impl ScriptMeta {
    /// Reads what `meta()` returned; every problem, each naming its key.
    pub(crate) fn read(value: &Value) -> Result<ScriptMeta, Vec<String>> {
        let mut problems = Vec::new();
        let Some(object) = value.as_object() else {
            return Err(vec![format!("meta() must return an object, not {value}")]);
        };
        for key in object.keys().filter(|k| !KEYS.contains(&k.as_str())) {
            problems.push(format!("meta(): unknown key {key:?} (known: {})", KEYS.join(", ")));
        }
        let mut meta = ScriptMeta::default();
        let mut choice = |key: &str, yes: &str, no: &str| match object.get(key) {
            None => None,
            Some(Value::String(s)) if s == yes => Some(true),
            Some(Value::String(s)) if s == no => Some(false),
            Some(other) => {
                problems.push(format!("meta(): {key} must be {yes:?} or {no:?}, not {other}"));
                None
            }
        };
        meta.validation = choice("type", "validation", "mutation");
        meta.audit = choice("mode", "audit", "active");
        meta.priority = read(object, "priority", &mut problems, |v| {
            v.as_i64().and_then(|n| i32::try_from(n).ok())
        });
        meta.fail_open = read(object, "fail_open", &mut problems, Value::as_bool);
        meta.timeout = read(object, "timeout", &mut problems, |v| {
            toolgate_core::duration::parse(v.as_str()?).ok()
        });
        meta.servers = strings(object, "servers", &mut problems);
        meta.tools = strings(object, "tools", &mut problems);
        meta.description =
            read(object, "description", &mut problems, |v| v.as_str().map(str::to_owned));
        if problems.is_empty() { Ok(meta) } else { Err(problems) }
    }
}

fn read<T>(
    object: &Map<String, Value>,
    key: &str,
    problems: &mut Vec<String>,
    get: impl FnOnce(&Value) -> Option<T>,
) -> Option<T> {
    let value = object.get(key)?;
    let read = get(value);
    if read.is_none() {
        problems.push(format!("meta(): {key} has a value of the wrong kind: {value}"));
    }
    read
}

fn strings(object: &Map<String, Value>, key: &str, problems: &mut Vec<String>) -> Vec<String> {
    read(object, key, problems, |v| {
        v.as_array()?.iter().map(|s| s.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>()
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_setting_is_read_and_every_problem_named() {
        let meta = ScriptMeta::read(&json!({
            "type": "validation", "mode": "audit", "priority": -5, "fail_open": true,
            "timeout": "250ms", "servers": ["gh"], "tools": ["write_*"]
        }))
        .expect("valid");
        assert_eq!(meta.validation, Some(true));
        assert_eq!(meta.audit, Some(true));
        assert_eq!(meta.priority, Some(-5));
        assert_eq!(meta.timeout, Some(Duration::from_millis(250)));
        assert_eq!(meta.tools, ["write_*"]);
        let problems = ScriptMeta::read(&json!({"type": "other", "priority": "high", "colour": 1}))
            .expect_err("invalid");
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("colour")));
    }
}
