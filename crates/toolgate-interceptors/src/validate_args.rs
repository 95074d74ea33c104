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
mod tests {
    use serde_json::json;
    use toolgate_intercept::{Principal, Target};

    use super::*;

    fn entry(options: Value) -> InterceptorConfig {
        crate::test_entry(KIND, "pipeline[0]", options)
    }

    fn validator(options: Value) -> ValidateArgs {
        ValidateArgs::from_config(&entry(options)).expect("valid options")
    }

    fn tool(schema: Value) -> Arc<mcp::Tool> {
        let schema = schema.as_object().cloned().expect("a schema object");
        Arc::new(mcp::Tool::new("read_file", "reads a file", Arc::new(schema)))
    }

    fn ctx(tool: Option<Arc<mcp::Tool>>) -> CallContext {
        let mut ctx = CallContext::new(Principal::local());
        ctx.target = Some(Target {
            server: "files".into(),
            original: "read_file".into(),
            exposed: "files__read_file".into(),
            tool,
        });
        ctx
    }

    fn call(arguments: Option<Value>) -> Message {
        let mut params = mcp::CallToolRequestParams::new("files__read_file");
        params.arguments = arguments.map(|a| a.as_object().cloned().expect("an object"));
        Message::CallTool(params)
    }

    /// Runs `v` on a call with `arguments` against `schema`: `None` when it continued, the
    /// reason when it refused.
    async fn run(v: &ValidateArgs, schema: &Arc<mcp::Tool>, arguments: Value) -> Option<String> {
        let mut ctx = ctx(Some(schema.clone()));
        outcome_reason(
            v.intercept(
                InterceptionEvent::ToolsCall,
                Phase::Request,
                &call(Some(arguments)),
                &mut ctx,
            )
            .await,
        )
    }

    fn outcome_reason(outcome: Result<Outcome, InterceptError>) -> Option<String> {
        match outcome {
            Ok(Outcome::Continue) => None,
            Ok(Outcome::Refuse(refusal)) => {
                assert_eq!(refusal.interceptor, KIND);
                Some(refusal.reason)
            }
            other => panic!("a validator continues or refuses: {other:?}"),
        }
    }

    fn read_file_schema() -> Arc<mcp::Tool> {
        tool(json!({
            "type": "object",
            "properties": {
                "path": { "type": "string" },
                "mode": { "enum": ["text", "binary"] },
                "limit": { "type": "integer", "minimum": 1 },
            },
            "required": ["path", "mode"],
            "additionalProperties": false,
        }))
    }

    #[tokio::test]
    async fn valid_arguments_pass() {
        let v = validator(json!({}));
        let schema = read_file_schema();
        assert_eq!(run(&v, &schema, json!({"path": "/etc/hosts", "mode": "text"})).await, None);
        assert_eq!(
            run(&v, &schema, json!({"path": "a", "mode": "binary", "limit": 3})).await,
            None
        );
    }

    #[tokio::test]
    async fn every_violation_is_listed_with_its_path() {
        let v = validator(json!({}));
        let reason = run(&v, &read_file_schema(), json!({"path": 5})).await.expect("refused");
        assert_eq!(
            reason,
            "arguments do not match the input schema of files__read_file: \
             (root): \"mode\" is a required property; /path: 5 is not of type \"string\""
        );
    }

    #[tokio::test]
    async fn each_kind_of_violation_is_reported() {
        let v = validator(json!({}));
        let schema = read_file_schema();
        let cases = [
            (json!({"path": "a"}), "(root): \"mode\" is a required property"),
            (json!({"path": true, "mode": "text"}), "/path: true is not of type \"string\""),
            (json!({"path": "a", "mode": "octal"}), "/mode: \"octal\" is not one of"),
            (
                json!({"path": "a", "mode": "text", "limit": 0}),
                "/limit: 0 is less than the minimum of 1",
            ),
            (
                json!({"path": "a", "mode": "text", "colour": "red"}),
                "(root): Additional properties are not allowed ('colour' was unexpected)",
            ),
        ];
        for (arguments, expected) in cases {
            let reason = run(&v, &schema, arguments.clone()).await.expect("refused");
            assert!(reason.contains(expected), "{arguments}: {reason}");
            assert_eq!(reason.matches("; ").count(), 0, "one violation only: {reason}");
        }
    }

    #[tokio::test]
    async fn nested_paths_point_into_objects_and_arrays() {
        let v = validator(json!({}));
        let schema = tool(json!({
            "type": "object",
            "properties": {
                "options": {
                    "type": "object",
                    "properties": { "retries": { "type": "integer" } },
                    "required": ["retries"],
                },
                "files": { "type": "array", "items": { "type": "string" } },
            },
        }));
        let reason =
            run(&v, &schema, json!({"options": {"retries": "3"}, "files": ["a", 1, "c", null]}))
                .await
                .expect("refused");
        for expected in [
            "/options/retries: \"3\" is not of type \"integer\"",
            "/files/1: 1 is not of type \"string\"",
            "/files/3: null is not of type \"string\"",
        ] {
            assert!(reason.contains(expected), "missing {expected:?} in {reason}");
        }
        let reason = run(&v, &schema, json!({"options": {}})).await.expect("refused");
        assert!(reason.ends_with("/options: \"retries\" is a required property"), "{reason}");
    }

    #[tokio::test]
    async fn draft_2020_12_is_the_default() {
        let v = validator(json!({}));
        let schema = tool(json!({
            "type": "object",
            "properties": {
                "point": {
                    "type": "array",
                    "prefixItems": [{ "type": "number" }, { "type": "number" }],
                    "items": false,
                },
                "owner": { "$ref": "#/$defs/user" },
            },
            "$defs": {
                "user": {
                    "type": "object",
                    "properties": { "login": { "type": "string", "minLength": 1 } },
                    "required": ["login"],
                },
            },
        }));
        assert_eq!(
            run(&v, &schema, json!({"point": [1, 2.5], "owner": {"login": "ann"}})).await,
            None
        );
        let reason = run(&v, &schema, json!({"point": [1, "2"], "owner": {"login": ""}}))
            .await
            .expect("refused");
        assert!(reason.contains("/point/1: \"2\" is not of type \"number\""), "{reason}");
        assert!(reason.contains("/owner/login: \"\" is shorter than 1 character"), "{reason}");
        let reason = run(&v, &schema, json!({"point": [1, 2, 3]})).await.expect("refused");
        assert!(reason.ends_with("/point/2: False schema does not allow 3"), "{reason}");
    }

    #[tokio::test]
    async fn an_explicit_schema_draft_is_honoured() {
        let v = validator(json!({}));
        // In draft 7 an array `items` is a tuple, and `format` asserts.
        let schema = tool(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "pair": {
                    "type": "array",
                    "items": [{ "type": "string" }],
                    "additionalItems": false,
                },
                "when": { "type": "string", "format": "date" },
            },
        }));
        assert_eq!(run(&v, &schema, json!({"pair": ["a"], "when": "2024-01-31"})).await, None);
        let reason = run(&v, &schema, json!({"pair": ["a", "b"], "when": "yesterday"}))
            .await
            .expect("refused");
        assert!(reason.contains("/pair: Additional items are not allowed"), "{reason}");
        assert!(reason.contains("/when: \"yesterday\" is not a \"date\""), "{reason}");
        // The same `format` is only an annotation in 2020-12.
        let lenient = tool(json!({
            "type": "object",
            "properties": { "when": { "type": "string", "format": "date" } },
        }));
        assert_eq!(run(&v, &lenient, json!({"when": "yesterday"})).await, None);
    }

    #[tokio::test]
    async fn missing_arguments_are_an_empty_object() {
        let v = validator(json!({}));
        let mut ctx = ctx(Some(read_file_schema()));
        let refused = outcome_reason(
            v.intercept(InterceptionEvent::ToolsCall, Phase::Request, &call(None), &mut ctx).await,
        )
        .expect("refused");
        assert!(refused.contains("(root): \"path\" is a required property"), "{refused}");
        let anything = tool(json!({"type": "object"}));
        let mut ctx = self::ctx(Some(anything));
        let outcome =
            v.intercept(InterceptionEvent::ToolsCall, Phase::Request, &call(None), &mut ctx).await;
        assert_eq!(outcome_reason(outcome), None);
    }

    #[tokio::test]
    async fn calls_without_a_target_or_a_definition_go_through() {
        let v = validator(json!({}));
        let mut ctx = self::ctx(None);
        let outcome = v
            .intercept(
                InterceptionEvent::ToolsCall,
                Phase::Request,
                &call(Some(json!({"x": 1}))),
                &mut ctx,
            )
            .await;
        assert_eq!(outcome_reason(outcome), None);
        let mut ctx = CallContext::new(Principal::local());
        let outcome =
            v.intercept(InterceptionEvent::ToolsCall, Phase::Request, &call(None), &mut ctx).await;
        assert_eq!(outcome_reason(outcome), None);
    }

    #[tokio::test]
    async fn long_values_are_elided() {
        let v = validator(json!({}));
        let schema = tool(json!({
            "type": "object",
            "properties": { "text": { "type": "string", "maxLength": 5 } },
        }));
        let long = "x".repeat(1000);
        let reason = run(&v, &schema, json!({"text": long})).await.expect("refused");
        assert!(reason.contains("/text: the value is longer than 5 characters"), "{reason}");
        assert!(!reason.contains("xxxxxxxx"), "{reason}");
    }

    #[tokio::test]
    async fn a_schema_that_does_not_compile_refuses_or_allows() {
        let broken = tool(json!({"type": "object", "properties": {"a": {"type": 5}}}));
        let refusing = validator(json!({}));
        let reason = run(&refusing, &broken, json!({"a": 1})).await.expect("refused");
        assert_eq!(
            reason,
            "the input schema of files__read_file does not compile, so its calls are refused: \
             /properties/a/type: 5 is not valid under any of the schemas listed in the 'anyOf' \
             keyword"
        );
        let allowing = validator(json!({"invalid_schema": "allow"}));
        assert_eq!(run(&allowing, &broken, json!({"a": 1})).await, None);
    }

    #[tokio::test]
    async fn remote_references_are_never_fetched() {
        let v = validator(json!({}));
        let remote = tool(json!({
            "type": "object",
            "properties": { "a": { "$ref": "https://example.invalid/schema.json" } },
        }));
        let reason = run(&v, &remote, json!({"a": 1})).await.expect("refused");
        assert!(reason.contains("does not compile"), "{reason}");
        assert!(reason.contains("Retrieval is disabled"), "{reason}");
        let unknown_dialect =
            tool(json!({"$schema": "https://example.invalid/meta", "type": "object"}));
        let reason = run(&v, &unknown_dialect, json!({})).await.expect("refused");
        assert!(reason.contains("does not compile"), "{reason}");
    }

    #[tokio::test]
    async fn a_changed_schema_is_compiled_again() {
        let v = validator(json!({}));
        let strings = tool(json!({"type": "object", "properties": {"n": {"type": "string"}}}));
        assert_eq!(run(&v, &strings, json!({"n": "1"})).await, None);
        // A new definition with the same schema reuses the entry.
        let same = tool(json!({"type": "object", "properties": {"n": {"type": "string"}}}));
        assert_eq!(run(&v, &same, json!({"n": "1"})).await, None);
        assert_eq!(v.cached(), 1);
        // The upstream changed the schema: the old validator must not be used.
        let numbers = tool(json!({"type": "object", "properties": {"n": {"type": "number"}}}));
        let reason = run(&v, &numbers, json!({"n": "1"})).await.expect("refused");
        assert!(reason.contains("/n: \"1\" is not of type \"number\""), "{reason}");
        assert_eq!(run(&v, &numbers, json!({"n": 1})).await, None);
        assert_eq!(v.cached(), 1);
        // And back again.
        assert_eq!(run(&v, &strings, json!({"n": "1"})).await, None);
    }

    #[test]
    fn the_cache_is_bounded() {
        let v = validator(json!({}));
        let schema = tool(json!({"type": "object"}));
        for i in 0..CACHE_CAPACITY + 10 {
            assert_eq!(v.check("s", &format!("t{i}"), &schema, None), Check::Valid);
        }
        assert_eq!(v.cached(), CACHE_CAPACITY);
    }

    #[test]
    fn option_errors_name_the_field() {
        let errors = ValidateArgs::from_config(&entry(json!({
            "invalid_schema": "ignore",
            "strict": true,
        })))
        .expect_err("invalid");
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "pipeline[0].strict: unknown option (expected one of: invalid_schema)",
                "pipeline[0].invalid_schema: expected \"refuse\" or \"allow\", found \"ignore\"",
            ]
        );
        let errors =
            ValidateArgs::from_config(&entry(json!({"invalid_schema": 1}))).expect_err("invalid");
        assert_eq!(errors[0].to_string(), "pipeline[0].invalid_schema: expected a string, found 1");
    }

    #[test]
    fn it_is_a_fail_closed_validator_of_tool_calls() {
        let v = validator(json!({}));
        let d = v.descriptor();
        assert_eq!(d.interceptor_type, InterceptorType::Validation);
        assert!(!d.fail_open);
        assert!(d.applies(
            InterceptionEvent::ToolsCall,
            Phase::Request,
            Some("files"),
            Some("read_file")
        ));
        assert!(!d.applies(
            InterceptionEvent::ToolsCall,
            Phase::Response,
            Some("files"),
            Some("read_file")
        ));
        assert!(!d.applies(InterceptionEvent::ToolsList, Phase::Response, None, None));
    }

    #[tokio::test]
    async fn a_value_of_up_to_64_characters_is_shown_and_a_longer_one_is_not() {
        let v = validator(json!({}));
        let schema = tool(json!({
            "type": "object",
            "properties": { "text": { "type": "string", "maxLength": 5 } },
        }));
        // A JSON string of 64 characters: 62 letters between its quotes.
        let shown = "x".repeat(62);
        let reason = run(&v, &schema, json!({ "text": shown })).await.expect("too long");
        assert!(reason.contains(&format!("\"{shown}\" is longer than 5 characters")), "{reason}");
        let hidden = "x".repeat(63);
        let reason = run(&v, &schema, json!({ "text": hidden })).await.expect("too long");
        assert!(reason.contains("/text: the value is longer than 5 characters"), "{reason}");
        assert!(!reason.contains(&hidden), "{reason}");
    }
}
