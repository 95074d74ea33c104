//! Codex's `config.toml`: its `[mcp_servers.NAME]` tables, edited with toml_edit so that the
//! rest of the file (the model, profiles, comments) stays as written.

use serde_json::Value;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table};

pub(crate) const KEY: &str = "mcp_servers";

pub(crate) struct CodexFile {
    doc: DocumentMut,
}

impl CodexFile {
    pub(crate) fn parse(text: &str) -> Result<CodexFile, String> {
        let doc: DocumentMut = text.parse().map_err(|error| format!("invalid TOML: {error}"))?;
        if doc.get(KEY).is_some_and(|item| !item.is_table_like()) {
            return Err(format!("`{KEY}` is not a table of [{KEY}.NAME] sections"));
        }
        Ok(CodexFile { doc })
    }

    pub(crate) fn entries(&self) -> Vec<(String, Value)> {
        let Ok(mut root) = toml::from_str::<toml::Table>(&self.doc.to_string()) else {
            return Vec::new();
        };
        match root.remove(KEY) {
            Some(toml::Value::Table(servers)) => servers
                .into_iter()
                .map(|(name, value)| (name, serde_json::to_value(value).unwrap_or(Value::Null)))
                .collect(),
            _ => Vec::new(),
        }
    }

    pub(crate) fn remove(&mut self, name: &str) {
        if let Some(servers) = self.doc.get_mut(KEY).and_then(Item::as_table_like_mut) {
            servers.remove(name);
        }
    }

    pub(crate) fn put(&mut self, name: &str, value: &Value) {
        let servers = self.doc.entry(KEY).or_insert_with(|| {
            let mut table = Table::new();
            table.set_implicit(true);
            Item::Table(table)
        });
        let Some(servers) = servers.as_table_like_mut() else { return };
        servers.insert(name, Item::Table(table(value)));
    }

    pub(crate) fn render(&self) -> String {
        self.doc.to_string()
    }

    pub(crate) fn meaning(&self) -> Value {
        toml::from_str::<toml::Table>(&self.doc.to_string())
            .ok()
            .and_then(|root| serde_json::to_value(root).ok())
            .unwrap_or(Value::Null)
    }
}

/// A JSON object as a `[table]`, its objects inline (`env = { ... }`); nulls are left out,
/// since TOML has none.
fn table(value: &Value) -> Table {
    let mut table = Table::new();
    if let Value::Object(map) = value {
        for (key, value) in map {
            if let Some(value) = item(value) {
                table.insert(key, Item::Value(value));
            }
        }
    }
    table
}

fn item(value: &Value) -> Option<toml_edit::Value> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64()?.into(),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => items.iter().filter_map(item).collect::<Array>().into(),
        Value::Object(map) => map
            .iter()
            .filter_map(|(k, v)| Some((k.as_str(), item(v)?)))
            .collect::<InlineTable>()
            .into(),
    })
}
