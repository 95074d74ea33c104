//! Tests of arg_map: caller-side names in listings, aliases, renamed and defaulted arguments.

use std::sync::Arc;

use serde_json::json;
use toolgate_intercept::{Principal, Target};

use super::*;

fn entry(options: Value) -> InterceptorConfig {
    crate::test_entry(KIND, "pipeline[1]", options)
}

fn arg_map(options: Value) -> ArgMap {
    ArgMap::from_config(&entry(options)).expect("valid options")
}

fn errors(options: Value) -> Vec<String> {
    let errors = ArgMap::from_config(&entry(options)).expect_err("invalid options");
    errors.iter().map(ToString::to_string).collect()
}

fn object(value: Value) -> mcp::JsonObject {
    value.as_object().cloned().expect("an object")
}

fn read_file() -> mcp::Tool {
    let schema = object(json!({
        "type": "object",
        "properties": {
            "path": { "type": "string" },
            "encoding": { "type": "string" },
            "limit": true,
        },
        "required": ["path", "encoding"],
    }));
    mcp::Tool::new("files__read_file", "reads a file", Arc::new(schema))
}

fn listed(server: &str, original: &str, tool: mcp::Tool) -> Listed<mcp::Tool> {
    Listed { server: server.into(), original: original.into(), item: tool }
}

fn plain(name: &str) -> mcp::Tool {
    mcp::Tool::new(name.to_owned(), "", Arc::new(object(json!({"type": "object"}))))
}

fn target(exposed: &str) -> Option<Target> {
    let (server, original) = exposed.split_once("__").expect("a namespaced name");
    Some(Target {
        server: server.into(),
        original: original.into(),
        exposed: exposed.into(),
        tool: None,
    })
}

/// The gateway's resolver: the exposed names it knows.
fn resolve(name: &str) -> Option<Target> {
    if KNOWN.contains(&name) { target(name) } else { None }
}

/// A context as the gateway builds it: the target of the name called, or of the tool
/// it is an alias of, and a retarget that knows the `KNOWN` exposed names.
fn ctx(map: &ArgMap, called: &str) -> CallContext {
    let mut ctx = CallContext::new(Principal::local());
    ctx.target = resolve(&map.alias_of(called).unwrap_or_else(|| called.to_owned()));
    ctx.retarget = Some(Arc::new(resolve));
    ctx
}

fn call(name: &str, arguments: Option<Value>) -> Message {
    let mut params = mcp::CallToolRequestParams::new(name.to_owned());
    params.arguments = arguments.map(object);
    Message::CallTool(params)
}

async fn run_call(map: &ArgMap, message: &Message, ctx: &mut CallContext) -> Outcome {
    map.intercept(InterceptionEvent::ToolsCall, Phase::Request, message, ctx)
        .await
        .expect("decides")
}

async fn run_list(map: &ArgMap, tools: Vec<Listed<mcp::Tool>>) -> Outcome {
    let mut ctx = CallContext::new(Principal::local());
    map.intercept(InterceptionEvent::ToolsList, Phase::Response, &Message::Tools(tools), &mut ctx)
        .await
        .expect("decides")
}

const KNOWN: &[&str] = &["files__read_file", "files__write_file", "github__search"];

fn example() -> ArgMap {
    arg_map(json!({
        "map": {
            "files__read_file": {
                "alias": "read",
                "rename": { "file": "path" },
                "defaults": { "encoding": "utf-8" },
            },
        }
    }))
}

#[tokio::test]
async fn the_listing_shows_caller_side_names_and_the_alias() {
    let tools = vec![
        listed("files", "read_file", read_file()),
        listed("github", "search", plain("github__search")),
    ];
    let Outcome::Rewrite(Message::Tools(shown)) = run_list(&example(), tools).await else {
        panic!("the list must be rewritten");
    };
    let names: Vec<&str> = shown.iter().map(|l| l.item.name.as_ref()).collect();
    assert_eq!(names, ["files__read_file", "read", "github__search"]);
    let expected = object(json!({
        "type": "object",
        "properties": {
            "file": { "type": "string" },
            "encoding": { "type": "string", "default": "utf-8" },
            "limit": true,
        },
        "required": ["file"],
    }));
    assert_eq!(*shown[0].item.input_schema, expected);
    assert_eq!(shown[1].item.input_schema, shown[0].item.input_schema);
    assert_eq!((shown[1].server.as_str(), shown[1].original.as_str()), ("files", "read_file"));
    // Property order is kept.
    let keys: Vec<&String> =
        shown[0].item.input_schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["file", "encoding", "limit"]);
}

#[tokio::test]
async fn hide_original_lists_only_the_alias() {
    let map = arg_map(json!({
        "map": { "files__read_file": { "alias": "read", "hide_original": true } }
    }));
    let tools = vec![
        listed("files", "write_file", plain("files__write_file")),
        listed("files", "read_file", read_file()),
    ];
    let Outcome::Rewrite(Message::Tools(shown)) = run_list(&map, tools).await else {
        panic!("the list must be rewritten");
    };
    let names: Vec<&str> = shown.iter().map(|l| l.item.name.as_ref()).collect();
    assert_eq!(names, ["files__write_file", "read"]);
    // Alias only: the schema is the upstream's.
    assert_eq!(shown[1].item.input_schema, read_file().input_schema);
}

#[tokio::test]
async fn defaults_on_a_true_schema_and_lists_without_mapped_tools() {
    let map = arg_map(json!({
        "map": { "files__read_file": { "defaults": { "limit": 10 } } }
    }));
    let tools = vec![listed("files", "read_file", read_file())];
    let Outcome::Rewrite(Message::Tools(shown)) = run_list(&map, tools).await else {
        panic!("the list must be rewritten");
    };
    assert_eq!(shown[0].item.input_schema["properties"]["limit"], json!({"default": 10}));
    let unrelated = vec![listed("github", "search", plain("github__search"))];
    assert_eq!(run_list(&map, unrelated).await, Outcome::Continue);
}

#[tokio::test]
async fn a_call_by_alias_reaches_the_original_with_upstream_arguments() {
    let map = example();
    let mut ctx = ctx(&map, "read");
    let outcome =
        run_call(&map, &call("read", Some(json!({"file": "/etc/hosts"}))), &mut ctx).await;
    assert_eq!(
        outcome,
        Outcome::Rewrite(call(
            "files__read_file",
            Some(json!({"path": "/etc/hosts", "encoding": "utf-8"}))
        ))
    );
    // A given value beats the default; arguments not in the map pass unchanged.
    let by_name =
        call("files__read_file", Some(json!({"file": "a", "encoding": "latin1", "x": 1})));
    let mut ctx = self::ctx(&map, "files__read_file");
    assert_eq!(
        run_call(&map, &by_name, &mut ctx).await,
        Outcome::Rewrite(call(
            "files__read_file",
            Some(json!({"encoding": "latin1", "x": 1, "path": "a"}))
        ))
    );
}

#[tokio::test]
async fn the_pipeline_retargets_a_call_by_alias() {
    let map = example();
    let mut ctx = ctx(&map, "read");
    let pipeline = toolgate_intercept::Pipeline::new(vec![Arc::new(map)]).expect("one");
    assert_eq!(pipeline.alias_of("read").as_deref(), Some("files__read_file"));
    assert_eq!(pipeline.alias_of("files__read_file"), None);
    let sent = pipeline
        .request(InterceptionEvent::ToolsCall, call("read", Some(json!({"file": "a"}))), &mut ctx)
        .await
        .expect("not stopped");
    assert_eq!(sent, call("files__read_file", Some(json!({"path": "a", "encoding": "utf-8"}))));
    let target = ctx.target.expect("retargeted");
    assert_eq!((target.server.as_str(), target.original.as_str()), ("files", "read_file"));
}

#[tokio::test]
async fn calls_that_need_no_change_continue() {
    let map = arg_map(json!({
        "map": {
            "files__read_file": { "alias": "read" },
            "files__write_file": { "rename": { "file": "path" } },
        }
    }));
    for (name, arguments) in [
        ("files__read_file", Some(json!({"path": "a"}))),
        ("files__write_file", Some(json!({"path": "a"}))),
        ("files__write_file", None),
        ("github__search", Some(json!({"file": "a"}))),
    ] {
        let mut ctx = ctx(&map, name);
        assert_eq!(run_call(&map, &call(name, arguments), &mut ctx).await, Outcome::Continue);
    }
    // Only the name changes when an alias has no arguments to map.
    let mut ctx = ctx(&map, "read");
    assert_eq!(
        run_call(&map, &call("read", None), &mut ctx).await,
        Outcome::Rewrite(call("files__read_file", None))
    );
}

#[tokio::test]
async fn defaults_give_a_call_without_arguments_an_object() {
    let map = example();
    let mut ctx = ctx(&map, "files__read_file");
    assert_eq!(
        run_call(&map, &call("files__read_file", None), &mut ctx).await,
        Outcome::Rewrite(call("files__read_file", Some(json!({"encoding": "utf-8"}))))
    );
}

#[tokio::test]
async fn both_names_of_one_argument_are_refused() {
    let map = example();
    let mut ctx = ctx(&map, "read");
    let both = call("read", Some(json!({"file": "a", "path": "b"})));
    let Outcome::Refuse(refusal) = run_call(&map, &both, &mut ctx).await else {
        panic!("must refuse");
    };
    assert_eq!(refusal.interceptor, KIND);
    assert_eq!(
        refusal.reason,
        "`file` and `path` were both given: `file` is this tool's name for the upstream's \
         `path`; pass only `file`"
    );
}

#[tokio::test]
async fn a_hidden_original_is_refused_with_the_alias_to_use() {
    let map = arg_map(json!({
        "map": { "files__read_file": { "alias": "read", "hide_original": true } }
    }));
    let mut ctx = ctx(&map, "files__read_file");
    let Outcome::Refuse(refusal) = run_call(&map, &call("files__read_file", None), &mut ctx).await
    else {
        panic!("must refuse");
    };
    assert_eq!(refusal.reason, "`files__read_file` is offered as `read`; call it by that name");
    let mut ctx = self::ctx(&map, "read");
    assert_eq!(
        run_call(&map, &call("read", None), &mut ctx).await,
        Outcome::Rewrite(call("files__read_file", None))
    );
}

#[tokio::test]
async fn an_alias_never_shadows_a_real_tool() {
    let map = arg_map(json!({
        "map": { "files__read_file": { "alias": "github__search", "hide_original": true } }
    }));
    let tools = vec![
        listed("files", "read_file", read_file()),
        listed("github", "search", plain("github__search")),
    ];
    assert_eq!(run_list(&map, tools).await, Outcome::Continue);
    // A call by that name reaches the real tool: the gateway resolved the alias first,
    // and the rewrite (of nothing but the target) points the context back.
    let mut ctx = ctx(&map, "github__search");
    assert_eq!(ctx.target.as_ref().map(|t| t.exposed.as_str()), Some("files__read_file"));
    let pipeline = toolgate_intercept::Pipeline::new(vec![Arc::new(map)]).expect("one");
    let sent = pipeline
        .request(
            InterceptionEvent::ToolsCall,
            call("github__search", Some(json!({"q": "x"}))),
            &mut ctx,
        )
        .await
        .expect("not stopped");
    assert_eq!(sent, call("github__search", Some(json!({"q": "x"}))));
    assert_eq!(ctx.target.as_ref().map(|t| t.exposed.as_str()), Some("github__search"));
    // And the original stays callable, hide_original notwithstanding.
    let map = arg_map(json!({
        "map": { "files__read_file": { "alias": "github__search", "hide_original": true } }
    }));
    let mut ctx = self::ctx(&map, "files__read_file");
    assert_eq!(run_call(&map, &call("files__read_file", None), &mut ctx).await, Outcome::Continue);
}

#[test]
fn the_common_filters_are_not_supported() {
    let mut config = entry(json!({ "map": { "files__read_file": { "alias": "read" } } }));
    config.servers = vec!["files".into()];
    config.tools = vec!["read_*".into()];
    let errors = ArgMap::from_config(&config).expect_err("filters are refused");
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "pipeline[1].servers: not supported by arg_map: `map` names the tools it applies to",
            "pipeline[1].tools: not supported by arg_map: `map` names the tools it applies to",
        ]
    );
}

#[test]
fn option_errors_name_the_field() {
    let text = errors(json!({
        "map": {
            "files__read_file": {
                "alias": "read file",
                "rename": { "file": "path", "name": "path", "dir": "file", "same": "same", "n": 5 },
                "defaults": { "file": "x" },
                "colour": "red",
            },
            "files__write_file": { "alias": "read" },
            "files__delete_file": { "alias": "read" },
            "files__move_file": { "alias": "files__write_file" },
            "files__stat": { "hide_original": true },
            "files__list": { "hide_original": "yes", "alias": "ls" },
            "files__nothing": {},
            "files__scalar": 3,
        },
        "extra": 1,
    }))
    .join("\n");
    for expected in [
        "pipeline[1].extra: unknown option (expected one of: map)",
        "pipeline[1].map.files__read_file.colour: unknown option",
        "pipeline[1].map.files__read_file.alias: \"read file\" is not a valid tool name",
        "pipeline[1].map.files__read_file.rename.name: \"path\" is already the target of rename.file",
        "pipeline[1].map.files__read_file.rename.dir: \"file\" is itself renamed",
        "pipeline[1].map.files__read_file.rename.same: renames \"same\" to itself",
        "pipeline[1].map.files__read_file.rename.n: expected a string",
        "pipeline[1].map.files__read_file.defaults.file: \"file\" is a caller-side name (renamed to \"path\")",
        "pipeline[1].map.files__delete_file.alias: \"read\" is already the alias of files__write_file",
        "pipeline[1].map.files__move_file.alias: \"files__write_file\" is a tool in this map",
        "pipeline[1].map.files__stat.hide_original: needs an `alias` to show instead",
        "pipeline[1].map.files__stat: sets nothing",
        "pipeline[1].map.files__list.hide_original: expected true or false, found \"yes\"",
        "pipeline[1].map.files__nothing: sets nothing (expected alias, rename or defaults)",
        "pipeline[1].map.files__scalar: expected a table, found 3",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert_eq!(
        errors(json!({})),
        [
            "pipeline[1]: missing `map` (a table keyed by exposed tool name, such as map.\"files__read_file\")"
        ]
    );
    assert_eq!(
        errors(json!({"map": ["files__read_file"]})),
        [
            "pipeline[1].map: expected a table keyed by exposed tool name, found [\"files__read_file\"]"
        ]
    );
}

#[test]
fn alias_names_follow_the_tool_name_rule() {
    assert!(toolgate_core::name::is_valid_exposed("read"));
    assert!(toolgate_core::name::is_valid_exposed("Read-file_2"));
    assert!(toolgate_core::name::is_valid_exposed(&"a".repeat(64)));
    assert!(!toolgate_core::name::is_valid_exposed(&"a".repeat(65)));
    assert!(!toolgate_core::name::is_valid_exposed(""));
    assert!(!toolgate_core::name::is_valid_exposed("read.file"));
    assert!(!toolgate_core::name::is_valid_exposed("lire_é"));
}

#[test]
fn it_is_a_fail_closed_mutator_of_calls_and_lists() {
    let d = example().descriptor().clone();
    assert_eq!(d.interceptor_type, InterceptorType::Mutation);
    assert!(!d.fail_open);
    assert!(d.applies(InterceptionEvent::ToolsCall, Phase::Request, None, None));
    assert!(d.applies(InterceptionEvent::ToolsList, Phase::Response, None, None));
    assert!(!d.applies(InterceptionEvent::ToolsCall, Phase::Response, None, None));
}
