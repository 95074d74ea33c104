//! A contract: what a server promises about one tool, prompt, resource or resource template,
//! reduced to the fields that instruct a model or feed toolgate's own decisions, and its
//! digest.
//!
//! The fields (by their MCP names):
//!
//! | kind | fields |
//! |---|---|
//! | tool | `name`, `title`, `description`, `inputSchema`, `outputSchema`, `annotations` |
//! | prompt | `name`, `title`, `description`, `arguments` (each: `name`, `title`, `description`, `required`) |
//! | resource | `uri`, `name`, `title`, `description`, `mimeType` |
//! | resource template | `uriTemplate`, `name`, `title`, `description`, `mimeType` |
//!
//! Left out on purpose: `_meta` and `icons` (no instruction to a model), a resource's `size` and
//! `annotations` (they change with the content, not with the promise).
//!
//! **Empty is absent.** A top-level field, an annotation or a prompt argument's field whose value
//! is `null`, `""`, `{}` or `[]` is treated as if it were not there, so a server (or an SDK
//! upgrade) that starts writing `"outputSchema": null` or `"annotations": {}` is not drift.
//! `false` and `0` are values, not emptiness: `destructiveHint: false` says the opposite of an
//! absent `destructiveHint` (whose default is `true`). Inside `inputSchema` and `outputSchema`
//! nothing is dropped: a schema is compared as written, because there an empty value can mean
//! something (`"enum": []`, `"default": ""`).
//!
//! The digest is the SHA-256 of the contract as RFC 8785 canonical JSON, written `sha256:<hex>`.

use serde::Serialize;
use serde_json::{Map, Value};
use toolgate_core::canonical::canonical_json;
use toolgate_core::hash::sha256_hex;
use toolgate_core::mcp;

/// What a contract is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Tool,
    Prompt,
    Resource,
    ResourceTemplate,
}

impl Kind {
    /// Every kind, in the order reports list them.
    pub const ALL: [Kind; 4] = [Kind::Tool, Kind::Prompt, Kind::Resource, Kind::ResourceTemplate];

    /// The word for one of these in messages.
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
            Kind::ResourceTemplate => "resource template",
        }
    }
}

/// One item's contract: its key (a tool's or prompt's original name, a resource's URI, a
/// template's URI template), the contract as JSON (keys in canonical order) and its digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contract {
    pub kind: Kind,
    pub key: String,
    pub value: Value,
    pub digest: String,
}

impl Contract {
    /// `value`'s contract of `kind`, keyed by `key`; `value` is normalised here (see the module
    /// documentation), so a contract read back from a lock file gets the same digest.
    pub fn new(kind: Kind, key: impl Into<String>, value: Value) -> Contract {
        let value = normalised(kind, value);
        let canonical = canonical_json(&value);
        let digest = format!("sha256:{}", sha256_hex(canonical.as_bytes()));
        // Keys in canonical order (the map keeps insertion order): the lock file shows them
        // sorted, and rewriting it changes nothing.
        let value = sorted(value);
        Contract { kind, key: key.into(), value, digest }
    }

    /// A tool's contract, keyed by the name the server gave it.
    pub fn tool(tool: &mcp::Tool) -> Contract {
        Contract::new(Kind::Tool, tool.name.to_string(), fields(tool, TOOL_FIELDS))
    }

    /// A prompt's contract, keyed by its name.
    pub fn prompt(prompt: &mcp::Prompt) -> Contract {
        Contract::new(Kind::Prompt, prompt.name.clone(), fields(prompt, PROMPT_FIELDS))
    }

    /// A resource's contract, keyed by its URI.
    pub fn resource(resource: &mcp::Resource) -> Contract {
        Contract::new(Kind::Resource, resource.uri.clone(), fields(resource, RESOURCE_FIELDS))
    }

    /// A resource template's contract, keyed by its URI template.
    pub fn resource_template(template: &mcp::ResourceTemplate) -> Contract {
        let value = fields(template, TEMPLATE_FIELDS);
        Contract::new(Kind::ResourceTemplate, template.uri_template.clone(), value)
    }

    /// The contract's field `name`, if it has one.
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.value.get(name)
    }
}

const TOOL_FIELDS: &[&str] =
    &["name", "title", "description", "inputSchema", "outputSchema", "annotations"];
const PROMPT_FIELDS: &[&str] = &["name", "title", "description", "arguments"];
const RESOURCE_FIELDS: &[&str] = &["uri", "name", "title", "description", "mimeType"];
const TEMPLATE_FIELDS: &[&str] = &["uriTemplate", "name", "title", "description", "mimeType"];

/// The `keep` fields of `item` as MCP writes it.
fn fields(item: &impl Serialize, keep: &[&str]) -> Value {
    let Ok(Value::Object(all)) = serde_json::to_value(item) else {
        return Value::Object(Map::new());
    };
    Value::Object(all.into_iter().filter(|(key, _)| keep.contains(&key.as_str())).collect())
}

/// `value` with the fields its kind does not cover removed and empty values dropped where the
/// module documentation says.
fn normalised(kind: Kind, value: Value) -> Value {
    let keep = match kind {
        Kind::Tool => TOOL_FIELDS,
        Kind::Prompt => PROMPT_FIELDS,
        Kind::Resource => RESOURCE_FIELDS,
        Kind::ResourceTemplate => TEMPLATE_FIELDS,
    };
    let Value::Object(object) = value else { return Value::Object(Map::new()) };
    let mut out = Map::new();
    for (key, value) in object {
        if !keep.contains(&key.as_str()) {
            continue;
        }
        let value = match (kind, key.as_str()) {
            (Kind::Tool, "annotations") => without_empty_fields(value),
            (Kind::Prompt, "arguments") => match value {
                Value::Array(arguments) => {
                    Value::Array(arguments.into_iter().map(without_empty_fields).collect())
                }
                other => other,
            },
            _ => value,
        };
        if !is_empty(&value) {
            out.insert(key, value);
        }
    }
    Value::Object(out)
}

/// An object without its empty fields; anything else as it is.
fn without_empty_fields(value: Value) -> Value {
    match value {
        Value::Object(object) => {
            Value::Object(object.into_iter().filter(|(_, value)| !is_empty(value)).collect())
        }
        other => other,
    }
}

/// `value` with the keys of every object in RFC 8785 order (by UTF-16 code units).
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(object) => {
            let mut entries: Vec<(String, Value)> = object.into_iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// `null`, `""`, `{}` or `[]`.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(object) => object.is_empty(),
        Value::Bool(_) | Value::Number(_) => false,
    }
}

#[cfg(test)]
mod tests;
