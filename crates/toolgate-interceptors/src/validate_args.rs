//! `validate_args`: checks the arguments of every `tools/call` against the tool's
//! `inputSchema`, as the upstream listed it, and refuses calls that do not match.
//!
//! ```toml
//! [[pipeline]]
//! kind = "validate_args"
//! invalid_schema = "refuse"   # refuse | allow (default: refuse)
//! ```
//!
//! - **Hook**: `tools/call`, request phase. **Type**: validation. **Fails closed** by default
//!   (`fail_open = true` lets calls through when the interceptor itself fails).
//! - **Draft**: JSON Schema 2020-12 when the schema has no `$schema`; otherwise the draft its
//!   `$schema` names (draft 4, 6, 7, 2019-09 or 2020-12). A `$schema` naming any other
//!   meta-schema makes the schema one that does not compile.
//! - **No network, no files**: a `$ref` to anything outside the schema itself is not
//!   fetched; such a schema does not compile. `format` is an annotation, not an assertion,
//!   as 2020-12 says (drafts 4 to 7 assert it).
//! - **Arguments**: a call without `arguments` is checked as `{}`.
//! - **Which tools**: a call whose context has no target, or whose target has no definition
//!   (a tool the upstream never listed), goes through unchecked. The common `servers` and
//!   `tools` filters narrow it further.
//!
//! # Options
//!
//! | option | values | default | meaning |
//! |---|---|---|---|
//! | `invalid_schema` | `"refuse"`, `"allow"` | `"refuse"` | what to do with calls of a tool whose `inputSchema` does not compile |
//!
//! # Refusals
//!
//! Every violation is listed, in the order the validator finds them, with its instance path
//! (a JSON pointer into the arguments, `(root)` for the arguments object itself), separated
//! by `; `:
//!
//! ```text
//! arguments do not match the input schema of files__read_file: (root): "mode" is a required property; /path: 5 is not of type "string"
//! ```
//!
//! A value whose JSON is longer than 64 characters is shown as `the value`, so that a huge
//! argument does not flood the refusal and the audit log. A schema that does not compile,
//! with `invalid_schema = "refuse"`:
//!
//! ```text
//! the input schema of files__read_file does not compile, so its calls are refused: /properties/a/type: 5 is not valid under any of the schemas listed in the 'anyOf' keyword
//! the input schema of files__read_file does not compile, so its calls are refused: Resource 'https://example.com/user.json' is not present in a registry and retrieving it failed: Retrieval is disabled, cannot fetch https://example.com/user.json
//! ```
//!
//! In the first, `/properties/a/type` is a JSON pointer into the schema.
//!
//! With `invalid_schema = "allow"` such calls go through unchecked, and a warning is logged
//! when the schema is compiled.
//!
//! # Option errors
//!
//! ```text
//! pipeline[0].invalid_schema: expected "refuse" or "allow", found "ignore"
//! pipeline[0].invalid_schema: expected a string, found 1
//! pipeline[0].strict: unknown option (expected one of: invalid_schema)
//! ```
//!
//! # Cache
//!
//! Compiled schemas are cached per (server, original tool name), up to [`CACHE_CAPACITY`]
//! tools. An entry is reused while the definition's schema is the same (the same `Arc`, or an
//! equal JSON object); a changed schema is compiled again. Schemas that do not compile are
//! cached too, so a broken schema is not recompiled on every call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use jsonschema::{Draft, ValidationError, Validator};
use serde_json::Value;
use toolgate_config::InterceptorConfig;
use toolgate_core::mcp;
use toolgate_intercept::{
    CallContext, Descriptor, Hook, InterceptError, InterceptionEvent, Interceptor, InterceptorType,
    Message, Outcome, Phase, Refusal,
};

use crate::options::{OptionError, Options};

/// The config `kind`.
pub const KIND: &str = "validate_args";

/// How many tools' compiled schemas are kept. When it is full, one entry is dropped for
/// each new one.
pub const CACHE_CAPACITY: usize = 1024;

/// Values whose compact JSON is longer than this are shown as `the value` in refusals.
const LONGEST_SHOWN_VALUE: usize = 64;

/// What to do with calls of a tool whose `inputSchema` does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InvalidSchema {
    /// Refuse them, naming the tool and the schema error.
    #[default]
    Refuse,
    /// Let them through unchecked.
    Allow,
}

/// The `validate_args` interceptor.
pub struct ValidateArgs {
    descriptor: Descriptor,
    invalid_schema: InvalidSchema,
    cache: Mutex<HashMap<ToolKey, Compiled>>,
}

/// (server, original tool name).
type ToolKey = (String, String);

/// One tool's schema and what compiling it gave.
struct Compiled {
    /// Kept so that a pointer comparison cannot be fooled by a reused address.
    schema: Arc<mcp::JsonObject>,
    validator: Result<Arc<Validator>, String>,
}

/// What checking one call's arguments found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// The arguments match.
    Valid,
    /// Every violation, as `<instance path>: <message>`.
    Invalid(Vec<String>),
    /// The schema does not compile; why.
    BadSchema(String),
}

impl std::fmt::Debug for ValidateArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValidateArgs")
            .field("descriptor", &self.descriptor)
            .field("invalid_schema", &self.invalid_schema)
            .finish_non_exhaustive()
    }
}

// === impl ValidateArgs ===

impl ValidateArgs {
    /// Builds it from its `[[pipeline]]` entry.
    pub fn from_config(entry: &InterceptorConfig) -> Result<ValidateArgs, Vec<OptionError>> {
        let mut options = Options::new(entry.path.clone(), &entry.options);
        options.only(&["invalid_schema"]);
        let invalid_schema = match options.string("invalid_schema") {
            None | Some("refuse") => InvalidSchema::Refuse,
            Some("allow") => InvalidSchema::Allow,
            Some(other) => {
                let path = options.at("invalid_schema");
                options.error(&path, format!("expected \"refuse\" or \"allow\", found {other:?}"));
                InvalidSchema::Refuse
            }
        };
        let hooks = vec![Hook::new(["tools/call"], Phase::Request).expect("a literal event")];
        // Security: fails closed (the default).
        let descriptor = Descriptor::new(KIND, KIND, InterceptorType::Validation, hooks);
        let descriptor = options.configure(descriptor, entry);
        options.finish(descriptor, |descriptor| ValidateArgs {
            descriptor,
            invalid_schema,
            cache: Mutex::default(),
        })
    }

    /// Checks `arguments` (`None` is `{}`) of a call of `original` on `server` against
    /// `tool`'s input schema.
    pub fn check(
        &self,
        server: &str,
        original: &str,
        tool: &mcp::Tool,
        arguments: Option<&mcp::JsonObject>,
    ) -> Check {
        let validator = match self.validator(server, original, &tool.input_schema) {
            Ok(validator) => validator,
            Err(error) => return Check::BadSchema(error),
        };
        let instance = Value::Object(arguments.cloned().unwrap_or_default());
        let violations: Vec<String> = validator.iter_errors(&instance).map(describe).collect();
        if violations.is_empty() { Check::Valid } else { Check::Invalid(violations) }
    }

    /// The compiled schema, from the cache when the schema has not changed.
    fn validator(
        &self,
        server: &str,
        original: &str,
        schema: &Arc<mcp::JsonObject>,
    ) -> Result<Arc<Validator>, String> {
        let key = (server.to_owned(), original.to_owned());
        {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(compiled) = cache.get_mut(&key) {
                if Arc::ptr_eq(&compiled.schema, schema) {
                    return compiled.validator.clone();
                }
                if *compiled.schema == **schema {
                    // The same schema in a new definition (the tool list was fetched again).
                    compiled.schema = schema.clone();
                    return compiled.validator.clone();
                }
            }
        }
        // Compiled outside the lock: other tools' calls need not wait for this one.
        let validator = compile(schema).map(Arc::new);
        if let Err(error) = &validator {
            tracing::warn!(
                interceptor = %self.descriptor.name,
                server,
                tool = original,
                %error,
                "an input schema does not compile"
            );
        }
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= CACHE_CAPACITY && !cache.contains_key(&key) {
            let evicted = cache.keys().next().cloned();
            if let Some(evicted) = evicted {
                cache.remove(&evicted);
            }
        }
        cache.insert(key, Compiled { schema: schema.clone(), validator: validator.clone() });
        validator
    }

    #[cfg(test)]
    fn cached(&self) -> usize {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    fn refuse(&self, reason: String) -> Outcome {
        Outcome::Refuse(Refusal { interceptor: self.descriptor.name.clone(), reason })
    }
}

/// Compiles `schema` offline: 2020-12 unless its `$schema` says otherwise.
fn compile(schema: &mcp::JsonObject) -> Result<Validator, String> {
    let mut options = jsonschema::options().offline();
    if !schema.contains_key("$schema") {
        options = options.with_draft(Draft::Draft202012);
    }
    options.build(&Value::Object(schema.clone())).map_err(|error| {
        // The schema is the instance its meta-schema checked: the path points into it.
        match error.instance_path().as_str() {
            "" => error.to_string(),
            path => format!("{path}: {error}"),
        }
    })
}

/// `<instance path>: <message>`, with long values elided.
fn describe(error: ValidationError<'_>) -> String {
    let path = error.instance_path().as_str();
    let path = if path.is_empty() { "(root)" } else { path };
    let shown = serde_json::to_string(error.instance().as_ref()).map_or(0, |json| json.len());
    if shown > LONGEST_SHOWN_VALUE {
        format!("{path}: {}", error.masked_with("the value"))
    } else {
        format!("{path}: {error}")
    }
}

impl Interceptor for ValidateArgs {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn intercept<'a>(
        &'a self,
        _event: InterceptionEvent,
        _phase: Phase,
        message: &'a Message,
        ctx: &'a mut CallContext,
    ) -> BoxFuture<'a, Result<Outcome, InterceptError>> {
        let outcome = match (message, &ctx.target) {
            (Message::CallTool(call), Some(target)) => match &target.tool {
                None => Outcome::Continue,
                Some(tool) => {
                    let exposed = &target.exposed;
                    match self.check(
                        &target.server,
                        &target.original,
                        tool,
                        call.arguments.as_ref(),
                    ) {
                        Check::Valid => Outcome::Continue,
                        Check::Invalid(violations) => self.refuse(format!(
                            "arguments do not match the input schema of {exposed}: {}",
                            violations.join("; ")
                        )),
                        Check::BadSchema(error) => match self.invalid_schema {
                            InvalidSchema::Allow => Outcome::Continue,
                            InvalidSchema::Refuse => self.refuse(format!(
                                "the input schema of {exposed} does not compile, so its calls \
                                 are refused: {error}"
                            )),
                        },
                    }
                }
            },
            _ => Outcome::Continue,
        };
        Box::pin(async move { Ok(outcome) })
    }
}

#[cfg(test)]
mod tests;
