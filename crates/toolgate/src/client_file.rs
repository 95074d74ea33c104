//! An MCP client's config file, edited for `toolgate install` and `uninstall`: the servers it
//! holds listed, removed and put back, and toolgate's own entry written in the client's shape.
//!
//! Everything else in the file stays as the client and its user wrote it. JSON files keep their
//! comments and layout (jsonc-parser's syntax tree), and Codex's TOML keeps its own (toml_edit).
//! A YAML file (goose, Continue) is written anew from its tree, so its comments are lost: no
//! maintained Rust crate edits YAML in place, and `install` keeps the original as a backup and
//! says so ([`ClientFile::keeps_comments`]).
//!
//! Entries travel as JSON values in the client's own shape, whatever the file's language.

mod codex;
mod json;
mod yaml;

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::clients::{JsonShape, Layout};
use crate::gateway_entry::{self, GatewayEntry};

/// A client's config file, parsed for editing.
pub(crate) enum ClientFile {
    Json(json::JsonFile),
    Codex(codex::CodexFile),
    Yaml(yaml::YamlFile),
}

impl ClientFile {
    /// `text` read as a file of `layout` (an empty text is a new, empty file), for the
    /// directory `project` (whose Claude Code local scope the file may hold). The error says
    /// what is wrong, without the file's name.
    pub(crate) fn parse(
        layout: Layout,
        text: &str,
        project: Option<&Path>,
    ) -> Result<ClientFile, String> {
        Ok(match layout {
            Layout::Json { key, .. } => {
                ClientFile::Json(json::JsonFile::parse(text, key, project)?)
            }
            Layout::CodexToml => ClientFile::Codex(codex::CodexFile::parse(text)?),
            Layout::GooseYaml => ClientFile::Yaml(yaml::YamlFile::parse(text, yaml::Kind::Goose)?),
            Layout::ContinueYaml => {
                ClientFile::Yaml(yaml::YamlFile::parse(text, yaml::Kind::Continue)?)
            }
        })
    }

    /// Every entry where the client keeps its servers, by name, in file order.
    pub(crate) fn entries(&self) -> Vec<(String, Value)> {
        match self {
            ClientFile::Json(file) => file.entries(),
            ClientFile::Codex(file) => file.entries(),
            ClientFile::Yaml(file) => file.entries(),
        }
    }

    /// The entry called `name`.
    pub(crate) fn entry(&self, name: &str) -> Option<Value> {
        self.entries().into_iter().find(|(n, _)| n == name).map(|(_, value)| value)
    }

    /// Removes the entry called `name` (nothing when there is none).
    pub(crate) fn remove(&mut self, name: &str) {
        match self {
            ClientFile::Json(file) => file.remove(name),
            ClientFile::Codex(file) => file.remove(name),
            ClientFile::Yaml(file) => file.remove(name),
        }
    }

    /// Sets the entry called `name` to `value` (in the client's shape), in its place when there
    /// is one, else at the end.
    pub(crate) fn put(&mut self, name: &str, value: &Value) {
        match self {
            ClientFile::Json(file) => file.put(name, value),
            ClientFile::Codex(file) => file.put(name, value),
            ClientFile::Yaml(file) => file.put(name, value),
        }
    }

    /// Whether the entry called `name` is where `from` (an earlier state of this file) had it.
    pub(crate) fn holds_like(&self, name: &str, from: &ClientFile) -> bool {
        match (self, from) {
            (ClientFile::Json(file), ClientFile::Json(from)) => {
                file.has_at(from.place_of(name).unwrap_or(json::Place::Top), name)
            }
            (file, _) => file.entry(name).is_some(),
        }
    }

    /// Sets the entry called `name` to `value` where `from` (an earlier state of this file)
    /// had it: a Claude Code server of the local scope goes back there.
    pub(crate) fn restore(&mut self, name: &str, value: &Value, from: &ClientFile) {
        match (self, from) {
            (ClientFile::Json(file), ClientFile::Json(from)) => {
                let place = from.place_of(name).unwrap_or(json::Place::Top);
                file.put_at(place, name, value);
            }
            (file, _) => file.put(name, value),
        }
    }

    /// The file's text.
    pub(crate) fn render(&self) -> String {
        match self {
            ClientFile::Json(file) => file.render(),
            ClientFile::Codex(file) => file.render(),
            ClientFile::Yaml(file) => file.render(),
        }
    }

    /// The whole document as a JSON value: two files mean the same when these are equal.
    pub(crate) fn meaning(&self) -> Value {
        match self {
            ClientFile::Json(file) => file.meaning(),
            ClientFile::Codex(file) => file.meaning(),
            ClientFile::Yaml(file) => file.meaning(),
        }
    }

    /// Whether the file holds nothing but an empty place for servers (what `install` makes of
    /// a file that did not exist, once toolgate's entry is out again).
    pub(crate) fn is_blank(&self) -> bool {
        let key = match self {
            ClientFile::Json(file) => file.key(),
            ClientFile::Codex(_) => codex::KEY,
            ClientFile::Yaml(file) => file.key(),
        };
        let empty = |value: &Value| match value {
            Value::Null => true,
            Value::Object(map) => map.is_empty(),
            Value::Array(items) => items.is_empty(),
            _ => false,
        };
        match self.meaning() {
            Value::Object(root) => root.iter().all(|(k, v)| k == key && empty(v)),
            other => empty(&other),
        }
    }

    /// Whether [`ClientFile::render`] keeps the comments of the text it was parsed from.
    pub(crate) fn keeps_comments(&self) -> bool {
        !matches!(self, ClientFile::Yaml(_))
    }
}

/// Whether the entry `value` is a server toolgate reads from such a file (and so moves on
/// install): not one the client runs itself (goose's built-in extensions, Zed's extension
/// servers), and not toolgate's own entry.
pub(crate) fn is_server(layout: Layout, value: &Value) -> bool {
    if is_gateway(layout, value) {
        return false;
    }
    let text = |key: &str| value.get(key).and_then(Value::as_str);
    match layout {
        Layout::GooseYaml => {
            matches!(text("type"), Some("stdio" | "sse" | "streamable_http"))
        }
        Layout::Json { shape: JsonShape::Zed, .. } => {
            text("source") != Some("extension")
                && (value.get("command").is_some() || value.get("url").is_some())
        }
        _ => value.is_object(),
    }
}

/// Whether the entry `value` runs toolgate as a gateway (what `install` writes, wherever the
/// binary or its config is).
pub(crate) fn is_gateway(layout: Layout, value: &Value) -> bool {
    let (command_key, args) = match layout {
        Layout::GooseYaml => ("cmd", value.get("args")),
        Layout::Json { shape: JsonShape::Zed, .. } => match value.get("command") {
            // Zed's older form: `command: {path, args, env}`.
            Some(Value::Object(command)) => {
                let path = command.get("path").and_then(Value::as_str).unwrap_or_default();
                return gateway_entry::is_toolgate_command(path) && has_serve(command.get("args"));
            }
            _ => ("command", value.get("args")),
        },
        _ => ("command", value.get("args")),
    };
    let command = value.get(command_key).and_then(Value::as_str).unwrap_or_default();
    gateway_entry::is_toolgate_command(command) && has_serve(args)
}

fn has_serve(args: Option<&Value>) -> bool {
    args.and_then(Value::as_array)
        .is_some_and(|args| args.iter().any(|arg| arg.as_str() == Some("serve")))
}

/// toolgate's entry as `layout`'s client writes a local server.
pub(crate) fn gateway_value(layout: Layout, entry: &GatewayEntry) -> Value {
    let env: Map<String, Value> = entry
        .env
        .iter()
        .map(|(name, secret)| (name.clone(), Value::String(secret.expose().to_owned())))
        .collect();
    let mut value = match layout {
        Layout::Json { shape: JsonShape::Plain, .. } | Layout::CodexToml => {
            json!({ "command": entry.command, "args": entry.args })
        }
        Layout::Json { shape: JsonShape::Typed, .. } => {
            json!({ "type": "stdio", "command": entry.command, "args": entry.args })
        }
        Layout::Json { shape: JsonShape::Zed, .. } => {
            json!({ "source": "custom", "command": entry.command, "args": entry.args })
        }
        Layout::ContinueYaml => {
            json!({ "name": gateway_entry::NAME, "command": entry.command, "args": entry.args })
        }
        Layout::GooseYaml => json!({
            "enabled": true,
            "type": "stdio",
            "name": gateway_entry::NAME,
            "cmd": entry.command,
            "args": entry.args,
            "timeout": 300,
        }),
    };
    if !env.is_empty() {
        let key = if layout == Layout::GooseYaml { "envs" } else { "env" };
        value[key] = Value::Object(env);
    }
    value
}

#[cfg(test)]
mod tests;
