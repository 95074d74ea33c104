//! A parsed document as one plain tree for TOML, JSON and YAML, so that one walker checks them
//! all and reports every problem instead of stopping at the first.
//!
//! Syntax errors stop here, with their line and column.

use crate::error::{ConfigError, index_path, key_path};
use crate::jsonc;

/// Which language a document was written in; decides how types are named in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    Toml,
    Json,
    Yaml,
}

/// A node of a parsed document. Tables keep their keys in document order (TOML: sorted).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Boolean(bool),
    Integer(i64),
    Float(f64),
    String(String),
    Datetime,
    Array(Vec<Value>),
    Table(Vec<(String, Value)>),
}

impl Value {
    /// As JSON (a TOML datetime, which config never uses, becomes null).
    pub(crate) fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null | Value::Datetime => serde_json::Value::Null,
            Value::Boolean(b) => (*b).into(),
            Value::Integer(n) => (*n).into(),
            Value::Float(x) => {
                serde_json::Number::from_f64(*x).map_or(serde_json::Value::Null, Into::into)
            }
            Value::String(s) => s.clone().into(),
            Value::Array(items) => items.iter().map(Value::to_json).collect(),
            Value::Table(entries) => entries
                .iter()
                .map(|(k, v)| (k.clone(), v.to_json()))
                .collect::<serde_json::Map<_, _>>()
                .into(),
        }
    }

    /// The name of this value's type, as a user of `syntax` would call it.
    pub(crate) fn kind(&self, syntax: Syntax) -> &'static str {
        match (self, syntax) {
            (Value::Null, _) => "null",
            (Value::Boolean(_), _) => "boolean",
            (Value::Integer(_), Syntax::Toml) => "integer",
            (Value::Float(_), Syntax::Toml) => "float",
            (Value::Integer(_) | Value::Float(_), Syntax::Json) => "number",
            (Value::String(_), _) => "string",
            (Value::Datetime, _) => "datetime",
            (Value::Array(_), Syntax::Yaml) => "sequence",
            (Value::Array(_), _) => "array",
            (Value::Table(_), Syntax::Toml) => "table",
            (Value::Table(_), Syntax::Json) => "object",
            (Value::Integer(_), Syntax::Yaml) => "integer",
            (Value::Float(_), Syntax::Yaml) => "float",
            (Value::Table(_), Syntax::Yaml) => "mapping",
        }
    }

    fn from_toml(value: toml::Value) -> Value {
        match value {
            toml::Value::String(s) => Value::String(s),
            toml::Value::Integer(i) => Value::Integer(i),
            toml::Value::Float(f) => Value::Float(f),
            toml::Value::Boolean(b) => Value::Boolean(b),
            toml::Value::Datetime(_) => Value::Datetime,
            toml::Value::Array(items) => {
                Value::Array(items.into_iter().map(Value::from_toml).collect())
            }
            toml::Value::Table(table) => {
                Value::Table(table.into_iter().map(|(k, v)| (k, Value::from_toml(v))).collect())
            }
        }
    }

    fn from_json(value: serde_json::Value) -> Value {
        match value {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Boolean(b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Integer(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::String(s),
            serde_json::Value::Array(items) => {
                Value::Array(items.into_iter().map(Value::from_json).collect())
            }
            serde_json::Value::Object(map) => {
                Value::Table(map.into_iter().map(|(k, v)| (k, Value::from_json(v))).collect())
            }
        }
    }
}

/// Parses TOML text; the error (with an empty path) gives line and column.
pub(crate) fn parse_toml(text: &str) -> Result<Value, ConfigError> {
    match text.parse::<toml::Table>() {
        Ok(table) => Ok(Value::from_toml(toml::Value::Table(table))),
        Err(error) => {
            let (line, column) = line_column(text, error.span().map_or(0, |span| span.start));
            let message = error.message().trim_end().trim_end_matches('.');
            Err(ConfigError::new(
                "",
                format!("invalid TOML at line {line}, column {column}: {message}"),
            ))
        }
    }
}

/// Parses JSON text, comments and trailing commas allowed; the error (with an empty path) gives
/// line and column.
pub(crate) fn parse_json(text: &str) -> Result<Value, ConfigError> {
    match serde_json::from_str::<serde_json::Value>(&jsonc::strip(text)) {
        Ok(value) => Ok(Value::from_json(value)),
        Err(error) => {
            let full = error.to_string();
            let suffix = format!(" at line {} column {}", error.line(), error.column());
            let message = full.strip_suffix(&suffix).unwrap_or(&full);
            Err(ConfigError::new(
                "",
                format!(
                    "invalid JSON at line {}, column {}: {message}",
                    error.line(),
                    error.column()
                ),
            ))
        }
    }
}

/// Parses YAML text (one document; an empty text is an empty mapping). Keys that are numbers or
/// booleans become their text, as serde reads them into strings; other keys, custom tags and
/// more than one document are errors. Anchors and aliases are expanded (within the parser's
/// budget), and a key written twice in one mapping is an error, as the YAML spec says. The
/// error (with an empty path, or the path of the node) gives line and column where it can.
pub(crate) fn parse_yaml(text: &str) -> Result<Value, ConfigError> {
    use saphyr::LoadableYamlNode as _;
    let mut documents = match saphyr::Yaml::load_from_str(text) {
        Ok(documents) => documents,
        Err(error) => {
            let marker = error.marker();
            return Err(ConfigError::new(
                "",
                format!(
                    "invalid YAML at line {}, column {}: {}",
                    marker.line(),
                    marker.col() + 1,
                    error.info()
                ),
            ));
        }
    };
    match documents.len() {
        0 => Ok(Value::Table(Vec::new())),
        1 => Value::from_yaml(documents.remove(0), ""),
        n => Err(ConfigError::new(
            "",
            format!("invalid YAML: {n} documents (separated by ---); the file must hold one"),
        )),
    }
}

impl Value {
    fn from_yaml(node: saphyr::Yaml<'_>, path: &str) -> Result<Value, ConfigError> {
        use saphyr::{Scalar, Yaml};
        Ok(match node {
            Yaml::Value(Scalar::Null) => Value::Null,
            Yaml::Value(Scalar::Boolean(b)) => Value::Boolean(b),
            Yaml::Value(Scalar::Integer(i)) => Value::Integer(i),
            Yaml::Value(Scalar::FloatingPoint(x)) => Value::Float(x.into_inner()),
            Yaml::Value(Scalar::String(s)) => Value::String(s.into_owned()),
            // Only when scalars are left unparsed, which `parse_yaml` does not ask for.
            Yaml::Representation(s, _, _) => Value::String(s.into_owned()),
            Yaml::Sequence(items) => Value::Array(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| Value::from_yaml(item, &index_path(path, i)))
                    .collect::<Result<_, _>>()?,
            ),
            Yaml::Mapping(entries) => {
                let mut table = Vec::with_capacity(entries.len());
                for (key, value) in entries {
                    let key = match key {
                        Yaml::Value(Scalar::String(s)) => s.into_owned(),
                        Yaml::Value(Scalar::Integer(i)) => i.to_string(),
                        Yaml::Value(Scalar::Boolean(b)) => b.to_string(),
                        _ => {
                            return Err(ConfigError::new(
                                path,
                                "a key that is not a string, number or boolean",
                            ));
                        }
                    };
                    let value = Value::from_yaml(value, &key_path(path, &key))?;
                    table.push((key, value));
                }
                Value::Table(table)
            }
            Yaml::Tagged(tag, _) => {
                return Err(ConfigError::new(path, format!("unsupported YAML tag {tag}")));
            }
            Yaml::Alias(_) | Yaml::BadValue => {
                return Err(ConfigError::new(path, "invalid value (a bad alias or tagged scalar)"));
            }
        })
    }
}

/// `value`, with a number or boolean turned into its text (serde reads them into a string):
/// for YAML files whose readers take `PORT: 8080` as the text `8080`.
pub(crate) fn text(value: &Value) -> Value {
    match value {
        Value::Integer(i) => Value::String(i.to_string()),
        Value::Boolean(b) => Value::String(b.to_string()),
        other => other.clone(),
    }
}

/// [`text`] of every item of a list or value of a mapping.
pub(crate) fn texts(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(text).collect()),
        Value::Table(entries) => {
            Value::Table(entries.iter().map(|(key, value)| (key.clone(), text(value))).collect())
        }
        other => other.clone(),
    }
}

/// 1-based line and column (in characters) of byte offset `at`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
pub(crate) mod props;
