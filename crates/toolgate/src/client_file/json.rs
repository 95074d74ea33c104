//! A JSON client file (comments and trailing commas allowed) whose servers sit in an object
//! under one top-level key, edited through jsonc-parser's syntax tree so that every comment,
//! blank line and indent the file had stays. In Claude Code's `~/.claude.json`, the servers of
//! the current directory's local scope (`projects.<dir>.mcpServers`) are the file's too, and
//! stand in for user-wide ones of their names, as toolgate-config reads them.

use std::path::Path;

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

pub(crate) struct JsonFile {
    root: CstRootNode,
    /// The key the servers are under (`mcpServers`, `servers`, `context_servers`).
    key: &'static str,
    /// The key under `projects` of the current directory, when the file has one (Claude Code).
    local: Option<String>,
}

/// Where in the file a server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Under the top-level key.
    Top,
    /// In the current directory's local scope.
    Local,
}

impl JsonFile {
    pub(crate) fn parse(
        text: &str,
        key: &'static str,
        project: Option<&Path>,
    ) -> Result<JsonFile, String> {
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
        let local = project.and_then(|dir| local_key(&root, dir));
        Ok(JsonFile { root, key, local })
    }

    pub(crate) fn key(&self) -> &'static str {
        self.key
    }

    fn servers(&self, place: Place) -> Option<CstObject> {
        let root = self.root.object_value()?;
        match place {
            Place::Top => root.object_value(self.key),
            Place::Local => root
                .object_value("projects")?
                .object_value(self.local.as_deref()?)?
                .object_value(self.key),
        }
    }

    /// The servers of the top-level key, then those of the local scope, each name once (the
    /// local one standing in for a user-wide one).
    pub(crate) fn entries(&self) -> Vec<(String, Value)> {
        let mut out: Vec<(String, Value)> = Vec::new();
        for place in [Place::Top, Place::Local] {
            let Some(servers) = self.servers(place) else { continue };
            for prop in servers.properties() {
                let Some(name) = prop.name().and_then(|n| n.decoded_value().ok()) else { continue };
                let Some(value) = prop.value().and_then(|v| v.to_serde_value()) else { continue };
                out.retain(|(other, _)| *other != name);
                out.push((name, value));
            }
        }
        out
    }

    /// Where the server called `name` is (the local scope first, as in [`JsonFile::entries`]).
    pub(crate) fn place_of(&self, name: &str) -> Option<Place> {
        [Place::Local, Place::Top].into_iter().find(|place| self.has_at(*place, name))
    }

    /// Whether `place` has a server called `name`.
    pub(crate) fn has_at(&self, place: Place, name: &str) -> bool {
        self.servers(place).is_some_and(|servers| servers.get(name).is_some())
    }

    /// Removes the server called `name` that [`JsonFile::entries`] gives (a user-wide one the
    /// local scope hides stays, for the other directories).
    pub(crate) fn remove(&mut self, name: &str) {
        let Some(place) = self.place_of(name) else { return };
        if let Some(prop) = self.servers(place).and_then(|servers| servers.get(name)) {
            prop.remove();
        }
    }

    /// Sets the server called `name` where it is, else adds it under the top-level key.
    pub(crate) fn put(&mut self, name: &str, value: &Value) {
        let place = self.place_of(name).unwrap_or(Place::Top);
        self.put_at(place, name, value);
    }

    /// Sets the server called `name` in `place` (the local scope only when the file has one).
    pub(crate) fn put_at(&mut self, place: Place, name: &str, value: &Value) {
        let root = self.root.object_value_or_set();
        let servers = match (place, &self.local) {
            (Place::Local, Some(local)) => root
                .object_value_or_set("projects")
                .object_value_or_set(local)
                .object_value_or_set(self.key),
            _ => root.object_value_or_set(self.key),
        };
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

/// The key under `projects` that is the directory `dir` (as written, or its real path).
fn local_key(root: &CstRootNode, dir: &Path) -> Option<String> {
    let projects = root.object_value()?.object_value("projects")?;
    let real = dir.canonicalize().ok();
    projects.properties().into_iter().find_map(|prop| {
        let key = prop.name()?.decoded_value().ok()?;
        let here = Path::new(&key) == dir || real.as_deref() == Some(Path::new(&key));
        here.then_some(key)
    })
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
