//! `arg_map`: gives tools a second name, renames their arguments, and fills in defaults, so
//! that the caller sees the tool the way the config describes it while the upstream still
//! receives what it expects.
//!
//! ```toml
//! [[pipeline]]
//! kind = "arg_map"
//! map."files__read_file" = { alias = "read", rename = { file = "path" }, defaults = { encoding = "utf-8" } }
//! map."github__search_issues" = { alias = "issues", hide_original = true }
//! ```
//!
//! - **Hooks**: `tools/list`, response phase (the listing) and `tools/call`, request phase
//!   (the call). **Type**: mutation. **Fails closed** by default: a rename that did not
//!   happen would call the upstream with the wrong arguments.
//! - **Filters**: the common `servers` and `tools` keys are refused: `map` names the tools
//!   it applies to, and a filter would let a call by an alias skip its renames.
//!
//! # Options
//!
//! `map` (required) is a table keyed by **exposed** tool name (`<server>__<tool>`, the name
//! in `tools/list`). Each value is a table of:
//!
//! | key | type | default | meaning |
//! |---|---|---|---|
//! | `alias` | string | none | a second exposed name for the tool: 1 to 64 of `a-z A-Z 0-9 _ -`, unique in the map, and not itself a key of the map |
//! | `hide_original` | bool | `false` | list only the alias, and refuse calls by the original exposed name (needs `alias`) |
//! | `rename` | table | `{}` | caller's argument name = upstream's argument name; top-level arguments only |
//! | `defaults` | table | `{}` | upstream's argument name = value filled in when the caller leaves it out |
//!
//! An entry must set at least one of `alias`, `rename`, `defaults`. In `rename`, each
//! upstream name may be the target of one caller name only, and a name may not be both renamed
//! and a rename target (no chains or swaps). `defaults` are keyed by the upstream's name,
//! never by a caller-side name from `rename`. A caller-side name should not be the name of
//! another of the upstream's arguments: that argument becomes unreachable.
//!
//! # What the caller sees (`tools/list`)
//!
//! For each mapped tool, the `inputSchema` is rewritten to the caller's names: keys of
//! `properties` and entries of `required` are renamed; a defaulted argument is no longer
//! required and its property gets the `default`. The alias is listed right after the
//! original, as the same tool under the other name; with `hide_original` it replaces the
//! original.
//!
//! # What the upstream receives (`tools/call`)
//!
//! The gateway asks [`Interceptor::alias_of`] which tool an alias stands for before the
//! pipeline runs, so every interceptor sees the tool actually called (when two `arg_map`
//! entries of a pipeline define one alias, the first wins); a call by the alias is then
//! rewritten to the original exposed name. For calls by either name, caller-side arguments
//! are renamed to the upstream's names and missing defaults are filled in (a call without
//! `arguments` gets an object when a default applies). A message that needs no change is
//! passed on as it is.
//!
//! An alias never shadows a real tool: if an upstream lists a tool whose exposed name is
//! the alias, the alias is not listed (a warning is logged), calls by that name reach the
//! real tool, and the original stays listed and callable even with `hide_original`. (A
//! gateway that resolved such a name as the alias first is corrected: the call is rewritten
//! unchanged, which points its context back at the real tool.)
//!
//! # Refusals
//!
//! ```text
//! `files__read_file` is offered as `read`; call it by that name
//! `file` and `path` were both given: `file` is this tool's name for the upstream's `path`; pass only `file`
//! ```
//!
//! # Option errors
//!
//! ```text
//! pipeline[1]: missing `map` (a table keyed by exposed tool name, such as map."files__read_file")
//! pipeline[1].servers: not supported by arg_map: `map` names the tools it applies to
//! pipeline[1].map.files__read_file.alias: "read file" is not a valid tool name (1 to 64 of a-z, A-Z, 0-9, _ and -)
//! pipeline[1].map.files__write_file.alias: "read" is already the alias of files__read_file
//! pipeline[1].map.files__write_file.alias: "files__read_file" is a tool in this map; an alias must be a new name
//! pipeline[1].map.files__read_file.hide_original: needs an `alias` to show instead
//! pipeline[1].map.files__read_file.rename.name: "path" is already the target of rename.file
//! pipeline[1].map.files__read_file.rename.file: "path" is itself renamed; chains and swaps of names are not supported
//! pipeline[1].map.files__read_file.defaults.file: "file" is a caller-side name (renamed to "path"); defaults are keyed by the upstream's name
//! pipeline[1].map.files__read_file: sets nothing (expected alias, rename or defaults)
//! ```

use std::collections::{BTreeMap, HashSet};

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use toolgate_config::InterceptorConfig;
use toolgate_core::mcp;
use toolgate_intercept::{
    CallContext, Descriptor, Hook, InterceptError, InterceptionEvent, Interceptor, InterceptorType,
    Listed, Message, Outcome, Phase, Refusal,
};

use crate::options::{OptionError, Options};

/// The config `kind`.
pub const KIND: &str = "arg_map";

/// The `arg_map` interceptor.
#[derive(Debug)]
pub struct ArgMap {
    descriptor: Descriptor,
    /// By exposed name.
    tools: BTreeMap<String, Mapping>,
    /// Alias -> exposed name.
    aliases: BTreeMap<String, String>,
}

/// What the config says about one tool.
#[derive(Debug, Clone, Default, PartialEq)]
struct Mapping {
    alias: Option<String>,
    hide_original: bool,
    /// (caller's name, upstream's name), in config order.
    rename: Vec<(String, String)>,
    /// (upstream's name, value), in config order.
    defaults: Vec<(String, Value)>,
}

// === impl Mapping ===

impl Mapping {
    /// The caller's name for the upstream's argument `upstream`.
    fn caller_name<'a>(&'a self, upstream: &'a str) -> &'a str {
        self.rename.iter().find(|(_, u)| u == upstream).map_or(upstream, |(c, _)| c.as_str())
    }

    fn default_of(&self, upstream: &str) -> Option<&Value> {
        self.defaults.iter().find(|(u, _)| u == upstream).map(|(_, v)| v)
    }

    /// `schema` as the caller sees it: renamed properties and `required`, defaults shown.
    fn caller_schema(&self, schema: &mcp::JsonObject) -> mcp::JsonObject {
        let mut schema = schema.clone();
        if self.rename.is_empty() && self.defaults.is_empty() {
            return schema;
        }
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            let renamed: Map<String, Value> = std::mem::take(properties)
                .into_iter()
                .map(|(name, mut property)| {
                    if let Some(default) = self.default_of(&name) {
                        set_default(&mut property, default);
                    }
                    (self.caller_name(&name).to_owned(), property)
                })
                .collect();
            *properties = renamed;
        }
        if let Some(Value::Array(required)) = schema.get_mut("required") {
            *required = std::mem::take(required)
                .into_iter()
                .filter(|name| name.as_str().is_none_or(|n| self.default_of(n).is_none()))
                .map(|name| match name.as_str() {
                    Some(n) => Value::String(self.caller_name(n).to_owned()),
                    None => name,
                })
                .collect();
        }
        schema
    }

    /// The upstream's arguments for the caller's `arguments`, or why there are none.
    /// `Ok(None)`: nothing to change.
    fn upstream_arguments(
        &self,
        arguments: Option<&mcp::JsonObject>,
    ) -> Result<Option<mcp::JsonObject>, String> {
        let mut changed = false;
        let mut out = arguments.cloned().unwrap_or_default();
        for (caller, upstream) in &self.rename {
            if !out.contains_key(caller) {
                continue;
            }
            if out.contains_key(upstream) {
                return Err(format!(
                    "`{caller}` and `{upstream}` were both given: `{caller}` is this tool's name \
                     for the upstream's `{upstream}`; pass only `{caller}`"
                ));
            }
            let value = out.remove(caller).expect("the key was just found");
            out.insert(upstream.clone(), value);
            changed = true;
        }
        for (upstream, value) in &self.defaults {
            if !out.contains_key(upstream) {
                out.insert(upstream.clone(), value.clone());
                changed = true;
            }
        }
        Ok(changed.then_some(out))
    }
}

/// Gives a property schema a `default` (a `true` schema becomes `{ "default": .. }`).
fn set_default(property: &mut Value, default: &Value) {
    match property {
        Value::Object(schema) => {
            schema.insert("default".into(), default.clone());
        }
        Value::Bool(true) => {
            let mut schema = Map::new();
            schema.insert("default".into(), default.clone());
            *property = Value::Object(schema);
        }
        _ => {}
    }
}

// === impl ArgMap ===

impl ArgMap {
    /// Builds it from its `[[pipeline]]` entry.
    pub fn from_config(entry: &InterceptorConfig) -> Result<ArgMap, Vec<OptionError>> {
        let mut options = Options::new(entry.path.clone(), &entry.options);
        options.only(&["map"]);
        let mut tools = BTreeMap::new();
        let mut aliases: BTreeMap<String, String> = BTreeMap::new();
        match options.get("map") {
            None => options.error(
                &entry.path,
                "missing `map` (a table keyed by exposed tool name, such as \
                 map.\"files__read_file\")",
            ),
            Some(Value::Object(map)) => {
                for (name, value) in map {
                    let path = format!("{}.{name}", options.at("map"));
                    let Some(table) = value.as_object() else {
                        options.error(&path, format!("expected a table, found {value}"));
                        continue;
                    };
                    let Some(mapping) = parse_mapping(&mut options, &path, table) else {
                        continue;
                    };
                    if let Some(alias) = &mapping.alias {
                        let at = format!("{path}.alias");
                        if map.contains_key(alias) {
                            options.error(
                                &at,
                                format!(
                                    "{alias:?} is a tool in this map; an alias must be a new name"
                                ),
                            );
                        } else if let Some(first) = aliases.get(alias) {
                            options
                                .error(&at, format!("{alias:?} is already the alias of {first}"));
                        } else {
                            aliases.insert(alias.clone(), name.clone());
                        }
                    }
                    tools.insert(name.clone(), mapping);
                }
            }
            Some(other) => {
                let path = options.at("map");
                options.error(
                    &path,
                    format!("expected a table keyed by exposed tool name, found {other}"),
                );
            }
        }
        for (key, patterns) in [("servers", &entry.servers), ("tools", &entry.tools)] {
            if !patterns.is_empty() {
                options.error(
                    &format!("{}.{key}", entry.path),
                    "not supported by arg_map: `map` names the tools it applies to",
                );
            }
        }
        let hooks = vec![
            Hook::new(["tools/call"], Phase::Request).expect("a literal event"),
            Hook::new(["tools/list"], Phase::Response).expect("a literal event"),
        ];
        // A wrong rename would call the wrong thing: fails closed (the default).
        let descriptor = Descriptor::new(KIND, KIND, InterceptorType::Mutation, hooks);
        let descriptor = options.configure(descriptor, entry);
        options.finish(descriptor, |descriptor| ArgMap { descriptor, tools, aliases })
    }

    /// The list the caller is shown, or `None` when it is unchanged.
    fn list(&self, tools: &[Listed<mcp::Tool>]) -> Option<Vec<Listed<mcp::Tool>>> {
        let names: HashSet<&str> = tools.iter().map(|l| l.item.name.as_ref()).collect();
        let mut out = Vec::with_capacity(tools.len());
        for listed in tools {
            let Some(mapping) = self.tools.get(listed.item.name.as_ref()) else {
                out.push(listed.clone());
                continue;
            };
            let mut shown = listed.clone();
            let schema = mapping.caller_schema(&listed.item.input_schema);
            if schema != *listed.item.input_schema {
                shown.item.input_schema = std::sync::Arc::new(schema);
            }
            let alias = match &mapping.alias {
                Some(alias) if names.contains(alias.as_str()) => {
                    tracing::warn!(
                        interceptor = %self.descriptor.name,
                        tool = %listed.item.name,
                        %alias,
                        "a listed tool already has this alias's name; the alias is not listed"
                    );
                    None
                }
                alias => alias.as_ref(),
            };
            match alias {
                None => out.push(shown),
                Some(alias) => {
                    let mut aliased = shown.clone();
                    aliased.item.name = alias.clone().into();
                    if !mapping.hide_original {
                        out.push(shown);
                    }
                    out.push(aliased);
                }
            }
        }
        (out != tools).then_some(out)
    }

    /// What to do with a call.
    fn call(&self, params: &mcp::CallToolRequestParams, ctx: &CallContext) -> Outcome {
        let name = params.name.as_ref();
        let is_real = |name: &str| {
            ctx.target.as_ref().is_some_and(|t| t.exposed == name)
                || ctx.retarget.as_ref().is_some_and(|r| r(name).is_some())
        };
        let (exposed, mapping) = match (self.aliases.get(name), self.tools.get(name)) {
            (Some(_), _) if is_real(name) => {
                // An alias never shadows a real tool. A gateway that resolved the alias first
                // has pointed the context at the mapped tool: a rewrite points it back.
                return match &ctx.target {
                    Some(target) if target.exposed == name => Outcome::Continue,
                    _ => Outcome::Rewrite(Message::CallTool(params.clone())),
                };
            }
            (Some(exposed), _) => {
                let mapping = self.tools.get(exposed).expect("every alias must have its mapping");
                (exposed.as_str(), mapping)
            }
            (None, Some(mapping)) => {
                if let (true, Some(alias)) = (mapping.hide_original, &mapping.alias)
                    && !is_real(alias)
                {
                    return self
                        .refuse(format!("`{name}` is offered as `{alias}`; call it by that name"));
                }
                (name, mapping)
            }
            (None, None) => return Outcome::Continue,
        };
        let arguments = match mapping.upstream_arguments(params.arguments.as_ref()) {
            Ok(arguments) => arguments,
            Err(reason) => return self.refuse(reason),
        };
        if exposed == name && arguments.is_none() {
            return Outcome::Continue;
        }
        let mut rewritten = params.clone();
        rewritten.name = exposed.to_owned().into();
        if let Some(arguments) = arguments {
            rewritten.arguments = Some(arguments);
        }
        Outcome::Rewrite(Message::CallTool(rewritten))
    }

    fn refuse(&self, reason: String) -> Outcome {
        Outcome::Refuse(Refusal { interceptor: self.descriptor.name.clone(), reason })
    }
}

/// One `map` entry, or `None` after reporting what is wrong with it.
fn parse_mapping(
    options: &mut Options<'_>,
    path: &str,
    table: &Map<String, Value>,
) -> Option<Mapping> {
    let mut entry = Options::new(path, table);
    entry.only(&["alias", "hide_original", "rename", "defaults"]);
    let mut mapping = Mapping::default();
    if let Some(alias) = entry.string("alias") {
        if toolgate_core::name::is_valid_exposed(alias) {
            mapping.alias = Some(alias.to_owned());
        } else {
            let at = entry.at("alias");
            entry.error(
                &at,
                format!("{alias:?} is not a valid tool name (1 to 64 of a-z, A-Z, 0-9, _ and -)"),
            );
        }
    }
    match entry.get("hide_original") {
        None => {}
        Some(Value::Bool(hide)) => {
            mapping.hide_original = *hide;
            if *hide && entry.get("alias").is_none() {
                let at = entry.at("hide_original");
                entry.error(&at, "needs an `alias` to show instead");
            }
        }
        Some(other) => {
            let at = entry.at("hide_original");
            entry.error(&at, format!("expected true or false, found {other}"));
        }
    }
    if let Some(rename) = entry.table("rename") {
        let at = entry.at("rename");
        for (caller, upstream) in rename {
            let here = format!("{at}.{caller}");
            let Some(upstream) = upstream.as_str() else {
                entry.error(
                    &here,
                    format!("expected a string (the upstream's argument name), found {upstream}"),
                );
                continue;
            };
            if upstream == caller {
                entry.error(&here, format!("renames {caller:?} to itself"));
            } else if upstream.is_empty() {
                entry.error(&here, "the upstream's argument name is empty");
            } else if let Some((first, _)) = mapping.rename.iter().find(|(_, u)| u == upstream) {
                entry.error(&here, format!("{upstream:?} is already the target of rename.{first}"));
            } else if rename.contains_key(upstream) {
                entry.error(
                    &here,
                    format!(
                        "{upstream:?} is itself renamed; chains and swaps of names are not \
                         supported"
                    ),
                );
            } else {
                mapping.rename.push((caller.clone(), upstream.to_owned()));
            }
        }
    }
    if let Some(defaults) = entry.table("defaults") {
        let at = entry.at("defaults");
        for (upstream, value) in defaults {
            if let Some((_, target)) = mapping.rename.iter().find(|(c, _)| c == upstream) {
                entry.error(
                    &format!("{at}.{upstream}"),
                    format!(
                        "{upstream:?} is a caller-side name (renamed to {target:?}); defaults are \
                         keyed by the upstream's name"
                    ),
                );
                continue;
            }
            mapping.defaults.push((upstream.clone(), value.clone()));
        }
    }
    let sets_something = ["alias", "rename", "defaults"].iter().any(|k| table.contains_key(*k));
    if !sets_something {
        entry.error(path, "sets nothing (expected alias, rename or defaults)");
    }
    let ok = entry.errors.is_empty();
    options.errors.append(&mut entry.errors);
    ok.then_some(mapping)
}

impl Interceptor for ArgMap {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn alias_of(&self, name: &str) -> Option<String> {
        self.aliases.get(name).cloned()
    }

    fn intercept<'a>(
        &'a self,
        _event: InterceptionEvent,
        _phase: Phase,
        message: &'a Message,
        ctx: &'a mut CallContext,
    ) -> BoxFuture<'a, Result<Outcome, InterceptError>> {
        let outcome = match message {
            Message::CallTool(params) => self.call(params, ctx),
            Message::Tools(tools) => match self.list(tools) {
                Some(shown) => Outcome::Rewrite(Message::Tools(shown)),
                None => Outcome::Continue,
            },
            _ => Outcome::Continue,
        };
        Box::pin(async move { Ok(outcome) })
    }
}

#[cfg(test)]
mod tests;
