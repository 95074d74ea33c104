//! A JSON client file (comments and trailing commas allowed) whose servers sit in an object
//! under one top-level key, edited through jsonc-parser's syntax tree so that every comment,
//! blank line and indent the file had stays.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

pub(crate) struct JsonFile {
    root: CstRootNode,
    /// The key the servers are under (`mcpServers`, `servers`, `context_servers`).
    key: &'static str,
}

impl JsonFile {
    pub(crate) fn parse(text: &str, key: &'static str) -> Result<JsonFile, String> {
        let text = if text.trim().is_empty() { "{}\n" } else { text };
        let root = CstRootNode::parse(text, &ParseOptions::default())
            .map_err(|error| format!("invalid JSON: {error}"))?;
        match root.value() {
            None => {}
            Some(value) => match value.as_object() {
                None => return Err("not a JSON object at the top level".into()),
                Some(object) => {
                    if let Some(prop) = object.get(key)
                        && prop.value().and_then(|v| v.as_object()).is_none()
                    {
                        return Err(format!("`{key}` is not an object of servers by name"));
                    }
                }
            },
        }
        Ok(JsonFile { root, key })
    }

    pub(crate) fn key(&self) -> &'static str {
        self.key
    }

    fn servers(&self) -> Option<CstObject> {
        self.root.object_value()?.object_value(self.key)
    }

    pub(crate) fn entries(&self) -> Vec<(String, Value)> {
        let Some(servers) = self.servers() else { return Vec::new() };
        servers
            .properties()
            .into_iter()
            .filter_map(|prop| {
                let name = prop.name()?.decoded_value().ok()?;
                let value = prop.value()?.to_serde_value()?;
                Some((name, value))
            })
            .collect()
    }

    pub(crate) fn remove(&mut self, name: &str) {
        if let Some(prop) = self.servers().and_then(|servers| servers.get(name)) {
            prop.remove();
        }
    }

    pub(crate) fn put(&mut self, name: &str, value: &Value) {
        let servers = self.root.object_value_or_set().object_value_or_set(self.key);
        match servers.get(name) {
            Some(prop) => prop.set_value(input(value)),
            None => {
                servers.append(name, input(value));
            }
        }
    }

    pub(crate) fn render(&self) -> String {
        let mut text = self.root.to_string();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text
    }

    pub(crate) fn meaning(&self) -> Value {
        self.root.to_serde_value().unwrap_or(Value::Null)
    }
}

/// `value` as the syntax tree takes it.
fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}
