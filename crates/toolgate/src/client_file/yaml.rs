//! goose's and Continue's `config.yaml`: read into a tree (toolgate-config's YAML reader),
//! edited there, and written anew with saphyr's emitter. Keys keep their order; comments,
//! anchors and the original quoting do not survive (see the parent module).

use saphyr::{Scalar, Yaml, YamlEmitter};
use serde_json::{Map, Value};

/// Where the file keeps its servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// goose: `extensions:`, a map by name.
    Goose,
    /// Continue: `mcpServers:`, a list of entries each with its `name`.
    Continue,
}

impl Kind {
    fn key(self) -> &'static str {
        match self {
            Kind::Goose => "extensions",
            Kind::Continue => "mcpServers",
        }
    }
}

pub(crate) struct YamlFile {
    root: Map<String, Value>,
    kind: Kind,
}

impl YamlFile {
    pub(crate) fn parse(text: &str, kind: Kind) -> Result<YamlFile, String> {
        let root = match toolgate_config::yaml_to_json(text) {
            Ok(Value::Object(root)) => root,
            Ok(Value::Null) => Map::new(),
            Ok(_) => return Err("not a mapping at the top level".into()),
            Err(error) => return Err(error.to_string()),
        };
        let key = kind.key();
        let shape_ok = match (kind, root.get(key)) {
            (_, None | Some(Value::Null)) => true,
            (Kind::Goose, Some(value)) => value.is_object(),
            (Kind::Continue, Some(value)) => value.is_array(),
        };
        if !shape_ok {
            let wanted = if kind == Kind::Goose { "a map of extensions" } else { "a list" };
            return Err(format!("`{key}` is not {wanted}"));
        }
        Ok(YamlFile { root, kind })
    }

    pub(crate) fn key(&self) -> &'static str {
        self.kind.key()
    }

    pub(crate) fn entries(&self) -> Vec<(String, Value)> {
        match self.root.get(self.kind.key()) {
            Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|item| {
                    let name = item.get("name")?.as_str()?.to_owned();
                    Some((name, item.clone()))
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    pub(crate) fn remove(&mut self, name: &str) {
        match self.root.get_mut(self.kind.key()) {
            Some(Value::Object(map)) => {
                map.shift_remove(name);
            }
            Some(Value::Array(items)) => {
                items.retain(|item| item.get("name").and_then(Value::as_str) != Some(name));
            }
            _ => {}
        }
    }

    pub(crate) fn put(&mut self, name: &str, value: &Value) {
        let key = self.kind.key();
        let slot = self.root.entry(key).or_insert(Value::Null);
        match self.kind {
            Kind::Goose => {
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                if let Value::Object(map) = slot {
                    match map.get_mut(name) {
                        Some(old) => *old = value.clone(),
                        None => {
                            map.insert(name.to_owned(), value.clone());
                        }
                    }
                }
            }
            Kind::Continue => {
                if !slot.is_array() {
                    *slot = Value::Array(Vec::new());
                }
                if let Value::Array(items) = slot {
                    let named =
                        |item: &&mut Value| item.get("name").and_then(Value::as_str) == Some(name);
                    match items.iter_mut().find(named) {
                        Some(old) => *old = value.clone(),
                        None => items.push(value.clone()),
                    }
                }
            }
        }
    }

    pub(crate) fn render(&self) -> String {
        let root = Value::Object(self.root.clone());
        let tree = yaml(&root);
        let mut text = String::new();
        // Writing into a String cannot fail, and every node here is one the emitter takes.
        let _ = YamlEmitter::new(&mut text).dump(&tree);
        let mut text = text.strip_prefix("---\n").unwrap_or(&text).to_owned();
        if text == "{}" {
            text.clear();
        }
        text.push('\n');
        text
    }

    pub(crate) fn meaning(&self) -> Value {
        Value::Object(self.root.clone())
    }
}

fn yaml(value: &Value) -> Yaml<'_> {
    match value {
        Value::Null => Yaml::Value(Scalar::Null),
        Value::Bool(b) => Yaml::Value(Scalar::Boolean(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Yaml::Value(Scalar::Integer(i)),
            None => Yaml::Value(Scalar::FloatingPoint(n.as_f64().unwrap_or_default().into())),
        },
        Value::String(s) => Yaml::Value(Scalar::String(s.as_str().into())),
        Value::Array(items) => Yaml::Sequence(items.iter().map(yaml).collect()),
        Value::Object(map) => Yaml::Mapping(
            map.iter()
                .map(|(k, v)| (Yaml::Value(Scalar::String(k.as_str().into())), yaml(v)))
                .collect(),
        ),
    }
}
