//! Tests of enrich: options and templating, then the interceptor against the testkit's fake
//! OpenAI-compatible server (placement, cache, triggers, failures, the key, the event).

use std::ffi::OsString;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_intercept::{DecisionKind, Principal, Target};
use toolgate_testkit::fake_llm::{FakeLlm, Script, Turn};

use super::*;
use crate::Services;

/// A result text of well over 5 tokens, with something the prompt must carry.
const RESULT: &str = "src/main.rs\nsrc/lib.rs\nsrc/enrich.rs\nREADME.md\nCargo.toml";

fn entry(options: Value) -> InterceptorConfig {
    crate::test_entry(KIND, "pipeline[0]", options)
}

fn no_env(_: &str) -> Option<OsString> {
    None
}

fn build_with(options: Value, services: &Services) -> Enrich {
    Enrich::with_env(&entry(options), services, no_env).expect("valid options")
}

fn build(options: Value) -> Enrich {
    build_with(options, &Services::new(EventBus::new()))
}

fn errors(options: Value) -> Vec<String> {
    errors_of(entry(options))
}

fn errors_of(entry: InterceptorConfig) -> Vec<String> {
    match Enrich::with_env(&entry, &Services::new(EventBus::new()), no_env) {
        Ok(_) => panic!("options accepted"),
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

/// Options for the fake at `base_url`, summarising anything over 5 tokens.
fn options(base_url: &str) -> Value {
    json!({"base_url": base_url, "model": "gpt-4o-mini", "min_tokens": 5})
}

fn with(mut options: Value, more: Value) -> Value {
    for (key, value) in more.as_object().expect("a table") {
        options[key] = value.clone();
    }
    options
}

fn text_result(text: &str) -> mcp::CallToolResult {
    mcp::CallToolResult::success(vec![mcp::ContentBlock::text(text)])
}

fn ctx() -> CallContext {
    let mut ctx = CallContext::new(Principal::local());
    ctx.target = Some(Target {
        server: "files".into(),
        original: "list".into(),
        exposed: "files__list".into(),
        tool: None,
    });
    ctx
}

async fn run(enrich: &Enrich, result: &mcp::CallToolResult) -> Result<Outcome, InterceptError> {
    let message = Message::ToolResult(result.clone());
    enrich.intercept(InterceptionEvent::ToolsCall, Phase::Response, &message, &mut ctx()).await
}

fn rewritten(outcome: Result<Outcome, InterceptError>) -> mcp::CallToolResult {
    match outcome {
        Ok(Outcome::Rewrite(Message::ToolResult(result))) => result,
        other => panic!("expected a rewritten result, got {other:?}"),
    }
}

fn texts(result: &mcp::CallToolResult) -> Vec<String> {
    result.content.iter().filter_map(|b| b.as_text().map(|t| t.text.clone())).collect()
}

// === options ===

#[test]
fn defaults_fit_the_pipeline_timeout_to_the_request_timeout() {
    let enrich = build(json!({"base_url": "https://api.openai.com/v1", "model": "gpt-4o-mini"}));
    let settings = enrich.settings();
    assert_eq!(settings.endpoint, "api.openai.com");
    assert_eq!(settings.chat_url().as_str(), "https://api.openai.com/v1/chat/completions");
    assert_eq!(settings.api_key, None);
    assert_eq!(settings.placement, Placement::Before);
    assert_eq!(settings.request_timeout, DEFAULT_REQUEST_TIMEOUT);
    assert_eq!(settings.max_tokens, DEFAULT_MAX_TOKENS);
    assert_eq!(settings.min_tokens, DEFAULT_MIN_TOKENS);
    assert_eq!(settings.max_input_tokens, DEFAULT_MAX_INPUT_TOKENS);
    assert_eq!(settings.cache_size, DEFAULT_CACHE_SIZE);
    assert!(!settings.on_error);
    assert_eq!(settings.prompt.as_str(), DEFAULT_PROMPT);
    assert_eq!(settings.proxy, toolgate_llm::provider::Proxy::Environment);
    assert_eq!(
        build(json!({"base_url": "https://a/v1", "model": "m", "proxy": false})).settings().proxy,
        toolgate_llm::provider::Proxy::Direct
    );
    let descriptor = enrich.descriptor();
    assert_eq!(descriptor.timeout, Duration::from_secs(25), "request_timeout + 5 s");
    assert!(descriptor.fail_open);
    assert_eq!(descriptor.interceptor_type, toolgate_intercept::InterceptorType::Mutation);
    assert!(descriptor.applies(InterceptionEvent::ToolsCall, Phase::Response, None, None));
    assert!(!descriptor.applies(InterceptionEvent::ToolsCall, Phase::Request, None, None));
}

#[test]
fn every_option_is_read() {
    let enrich = build(json!({
        "base_url": "http://127.0.0.1:8080/v1/",
        "model": "llama3",
        "prompt": "In short, {tool} on {server}: {result}",
        "placement": "instead",
        "request_timeout": "1m",
        "max_tokens": 100,
        "min_tokens": 0,
        "max_input_tokens": 2000,
        "on_error": true,
        "cache_size": 0,
        "encoding": "cl100k_base",
        "proxy": "http://user:pass@127.0.0.1:3128",
    }));
    let settings = enrich.settings();
    assert_eq!(
        settings.proxy,
        toolgate_llm::provider::Proxy::Url("http://user:pass@127.0.0.1:3128".into())
    );
    assert_eq!(format!("{:?}", settings.proxy), "Url(***)");
    assert_eq!(settings.endpoint, "127.0.0.1:8080");
    assert_eq!(settings.chat_url().as_str(), "http://127.0.0.1:8080/v1/chat/completions");
    assert_eq!(settings.placement, Placement::Instead);
    assert_eq!(settings.request_timeout, Duration::from_secs(60));
    assert_eq!(
        (settings.max_tokens, settings.min_tokens, settings.max_input_tokens),
        (100, 0, 2000)
    );
    assert!(settings.on_error);
    assert_eq!(settings.cache_size, 0);
    assert_eq!(settings.encoding, toolgate_llm::tokens::Encoding::Cl100kBase);
    assert_eq!(enrich.descriptor().timeout, Duration::from_secs(65));
}

#[test]
fn a_longer_pipeline_timeout_is_kept_and_a_shorter_one_refused() {
    let mut longer = entry(json!({"base_url": "http://127.0.0.1:1/v1", "model": "m"}));
    longer.timeout = Some(Duration::from_secs(40));
    let enrich = Enrich::with_env(&longer, &Services::new(EventBus::new()), no_env).unwrap();
    assert_eq!(enrich.descriptor().timeout, Duration::from_secs(40));

    let mut shorter = longer.clone();
    shorter.timeout = Some(Duration::from_secs(10));
    assert_eq!(
        errors_of(shorter),
        ["pipeline[0].timeout: 10s would cut the summary short: the pipeline's timeout must be \
         longer than request_timeout (20s); leave it out to get request_timeout + 5s"]
    );
}

#[test]
fn option_errors_name_the_option() {
    let base = json!({"base_url": "https://api.openai.com/v1", "model": "m"});
    let cases: &[(Value, &str)] = &[
        (
            json!({"model": "m"}),
            "pipeline[0].base_url: is required: the OpenAI-compatible API's base URL, such as \"https://api.openai.com/v1\"",
        ),
        (
            json!({"base_url": "https://x/v1"}),
            "pipeline[0].model: is required: the model that writes the summaries",
        ),
        (with(base.clone(), json!({"model": ""})), "pipeline[0].model: must not be empty"),
        (
            with(base.clone(), json!({"base_url": "api.openai.com"})),
            "pipeline[0].base_url: expected a URL such as \"https://api.openai.com/v1\" (relative URL without a base)",
        ),
        (
            with(base.clone(), json!({"base_url": "ftp://x/v1"})),
            "pipeline[0].base_url: expected an http or https URL, found \"ftp\"",
        ),
        (
            with(base.clone(), json!({"base_url": "https://u:p@x/v1"})),
            "pipeline[0].base_url: must not hold credentials: name the key's environment variable in api_key_env",
        ),
        (
            with(base.clone(), json!({"base_url": "https://x/v1?key=1"})),
            "pipeline[0].base_url: must have no query or fragment (requests go to <base_url>/chat/completions)",
        ),
        (
            with(base.clone(), json!({"api_key_env": "TOOLGATE_TEST_UNSET_KEY"})),
            "pipeline[0].api_key_env: the environment variable TOOLGATE_TEST_UNSET_KEY is not set (it must hold the API key)",
        ),
        (
            with(base.clone(), json!({"api_key_env": "A=B"})),
            "pipeline[0].api_key_env: expected the name of an environment variable, found \"A=B\"",
        ),
        (
            with(base.clone(), json!({"prompt": "Summarise {tool}"})),
            "pipeline[0].prompt: has no {result}, where the tool's result goes",
        ),
        (
            with(base.clone(), json!({"placement": "after"})),
            "pipeline[0].placement: expected \"before\" or \"instead\", found \"after\"",
        ),
        (
            with(base.clone(), json!({"request_timeout": "soon"})),
            "pipeline[0].request_timeout: invalid duration \"soon\": expected a number at character 1",
        ),
        (
            with(base.clone(), json!({"request_timeout": "0s"})),
            "pipeline[0].request_timeout: must be greater than zero",
        ),
        (
            with(base.clone(), json!({"max_tokens": 0})),
            "pipeline[0].max_tokens: expected an integer of at least 1, found 0",
        ),
        (
            with(base.clone(), json!({"min_tokens": -1})),
            "pipeline[0].min_tokens: expected an integer of at least 0, found -1",
        ),
        (
            with(base.clone(), json!({"max_input_tokens": "lots"})),
            "pipeline[0].max_input_tokens: expected an integer of at least 1, found \"lots\"",
        ),
        (
            with(base.clone(), json!({"on_error": "yes"})),
            "pipeline[0].on_error: expected true or false, found \"yes\"",
        ),
        (
            with(base.clone(), json!({"cache_size": 1.5})),
            "pipeline[0].cache_size: expected an integer of at least 0, found 1.5",
        ),
        (
            with(base.clone(), json!({"encoding": "p50k"})),
            "pipeline[0].encoding: unknown encoding \"p50k\" (known: o200k_base, cl100k_base)",
        ),
        (
            with(base.clone(), json!({"temperature": 0})),
            "pipeline[0].temperature: unknown option (expected one of: base_url, model, api_key_env, prompt, placement, request_timeout, max_tokens, min_tokens, max_input_tokens, on_error, cache_size, encoding, proxy)",
        ),
        (
            with(base.clone(), json!({"proxy": "socks5://user:hunter2@p:1"})),
            "pipeline[0].proxy: invalid proxy URL: the scheme must be http or https (expected \"http://host:port\")",
        ),
        (
            with(base.clone(), json!({"proxy": true})),
            "pipeline[0].proxy: expected a proxy URL (\"http://host:port\") or false",
        ),
    ];
    for (options, expected) in cases {
        assert_eq!(errors(options.clone()), [*expected], "{options}");
    }
    // Every problem at once.
    assert_eq!(errors(json!({"placement": "after", "max_tokens": 0})).len(), 4);
}

#[test]
fn the_key_comes_from_the_variable_named_and_never_prints() {
    let services = Services::new(EventBus::new());
    let options = json!({"base_url": "https://x/v1", "model": "m", "api_key_env": "MY_KEY"});
    let env = |name: &str| (name == "MY_KEY").then(|| OsString::from(" sk-secret-1 \n"));
    let enrich = Enrich::with_env(&entry(options.clone()), &services, env).unwrap();
    let key = enrich.settings().api_key.as_ref().expect("a key");
    assert_eq!(key.expose(), "sk-secret-1", "trimmed");
    let shown = format!("{enrich:?}");
    assert!(!shown.contains("sk-secret-1") && shown.contains("***"), "{shown}");

    let empty = |_: &str| Some(OsString::from("  "));
    let refused = Enrich::with_env(&entry(options.clone()), &services, empty).unwrap_err();
    assert_eq!(
        refused[0].to_string(),
        "pipeline[0].api_key_env: the environment variable MY_KEY is empty"
    );
    let newline = |_: &str| Some(OsString::from("sk-1\nInjected: yes"));
    let refused = Enrich::with_env(&entry(options), &services, newline).unwrap_err();
    assert_eq!(
        refused[0].to_string(),
        "pipeline[0].api_key_env: the environment variable MY_KEY holds characters a header cannot carry"
    );
}

#[test]
fn the_key_never_goes_to_another_machine_over_plain_http() {
    let services = Services::new(EventBus::new());
    let env = |name: &str| (name == "MY_KEY").then(|| OsString::from("sk-secret-1"));
    let options = |url: &str| json!({"base_url": url, "model": "m", "api_key_env": "MY_KEY"});
    let refused =
        Enrich::with_env(&entry(options("http://10.0.0.5:8080/v1")), &services, env).unwrap_err();
    assert_eq!(refused.len(), 1);
    let message = refused[0].to_string();
    assert!(
        message.starts_with("pipeline[0].base_url: the key from api_key_env (MY_KEY) would go to 10.0.0.5:8080 over plain http://"),
        "{message}"
    );
    assert!(!message.contains("sk-secret-1"), "{message}");
    // To this machine, over https, or without a key: fine.
    for url in ["http://127.0.0.1:8080/v1", "http://localhost/v1", "https://10.0.0.5/v1"] {
        assert!(Enrich::with_env(&entry(options(url)), &services, env).is_ok(), "{url}");
    }
    let keyless = json!({"base_url": "http://10.0.0.5:8080/v1", "model": "m"});
    assert!(Enrich::with_env(&entry(keyless), &services, env).is_ok());
}

#[test]
fn the_kind_is_registered() {
    assert!(crate::KINDS.contains(&KIND));
    let entries = [entry(json!({"model": "m"}))];
    let errors = crate::check_pipeline(&entries, false);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].to_string().starts_with("pipeline[0].base_url: is required"));
}

// === templating ===

#[test]
fn the_template_is_filled_in_one_pass() {
    let template = Template::parse("{tool}@{server} {x} {{result}} {result}!").unwrap();
    assert_eq!(
        template.render("fs__read", "fs", "a {tool} b {result}"),
        "fs__read@fs {x} {a {tool} b {result}} a {tool} b {result}!"
    );
    let only = Template::parse("{result}").unwrap();
    assert_eq!(only.render("t", "s", ""), "");
    assert_eq!(only.render("t", "s", "é"), "é");
    let twice = Template::parse("{result}/{result}").unwrap();
    assert_eq!(twice.render("t", "s", "r"), "r/r");
    let unicode = Template::parse("résumé {tool}: {result} ✓").unwrap();
    assert_eq!(unicode.render("t", "s", "r"), "résumé t: r ✓");
    assert!(Template::parse("{Result} {results}").is_err());
    assert!(Template::parse("").is_err());
}

#[test]
fn the_default_prompt_names_the_tool_and_carries_the_result() {
    let template = Template::parse(DEFAULT_PROMPT).unwrap();
    let prompt = template.render("files__list", "files", RESULT);
    assert!(prompt.contains("files__list"), "{prompt}");
    assert!(prompt.ends_with(RESULT), "{prompt}");
}

// === against the fake endpoint ===

#[tokio::test]
async fn before_puts_the_summary_first_and_keeps_everything() {
    let fake =
        FakeLlm::start(Script::turns([Turn::text("Five files, mostly Rust.")])).await.unwrap();
    let enrich = build(options(&fake.base_url()));
    let mut result = mcp::CallToolResult::success(vec![
        mcp::ContentBlock::text(RESULT),
        mcp::ContentBlock::image("AAAA", "image/png"),
    ]);
    result.structured_content = Some(json!({"files": 5}));
    let out = rewritten(run(&enrich, &result).await);
    assert_eq!(out.content.len(), 3);
    assert_eq!(&out.content[1..], &result.content[..], "the original blocks follow, unchanged");
    assert_eq!(out.structured_content, result.structured_content);
    assert_eq!(out.is_error, result.is_error);
    let first = out.content[0].as_text().expect("a text block");
    assert_eq!(first.text, "Summary (the full result follows):\nFive files, mostly Rust.");
    let meta = first.meta.as_ref().expect("_meta");
    assert_eq!(meta.0[META_KEY], json!({"model": "gpt-4o-mini", "placement": "before"}));
    // Still a valid result: it round-trips through JSON.
    let json = serde_json::to_value(&out).unwrap();
    let back: mcp::CallToolResult = serde_json::from_value(json).unwrap();
    assert_eq!(back, out);

    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.model(), Some("gpt-4o-mini"));
    assert_eq!(request.body["max_tokens"], DEFAULT_MAX_TOKENS);
    assert_eq!(request.header("authorization"), None, "no api_key_env, no key");
    let messages = request.messages();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].role, "user");
    let expected = Template::parse(DEFAULT_PROMPT).unwrap().render(
        "files__list",
        "files",
        &format!("{RESULT}\n{{\"files\":5}}"),
    );
    assert_eq!(messages[0].content, expected, "the prompt has the tool and what the model reads");
}

#[tokio::test]
async fn instead_replaces_the_text_and_keeps_other_blocks_and_structured_content() {
    let fake = FakeLlm::start(Script::always(Turn::text("Short."))).await.unwrap();
    let enrich = build(with(options(&fake.base_url()), json!({"placement": "instead"})));
    let image = mcp::ContentBlock::image("AAAA", "image/png");
    let embedded = mcp::ContentBlock::embedded_text("file:///a", "embedded text");
    let mut result = mcp::CallToolResult::success(vec![
        image.clone(),
        mcp::ContentBlock::text(RESULT),
        embedded.clone(),
        mcp::ContentBlock::text("second text block"),
    ]);
    result.structured_content = Some(json!({"files": ["a", "b"]}));
    result.meta = Some(mcp::MetaObject(json!({"k": 1}).as_object().cloned().unwrap()));
    let out = rewritten(run(&enrich, &result).await);
    assert_eq!(texts(&out), ["Summary of the result (its full text was left out):\nShort."]);
    assert_eq!(out.content.len(), 3);
    assert_eq!(out.content[0], image, "blocks before the first text stay first");
    assert!(out.content[1].as_text().is_some(), "the summary takes the first text's place");
    assert_eq!(out.content[2], embedded);
    assert_eq!(out.structured_content, result.structured_content);
    assert_eq!(out.meta, result.meta);

    // Only structured content: the summary is the one text block.
    let mut structured = mcp::CallToolResult::success(vec![]);
    structured.structured_content = Some(json!({"rows": [1, 2, 3, 4, 5, 6, 7, 8]}));
    let out = rewritten(run(&enrich, &structured).await);
    assert_eq!(texts(&out), ["Summary of the result (its full text was left out):\nShort."]);
    assert_eq!(out.structured_content, structured.structured_content);
}

#[tokio::test]
async fn a_result_seen_again_is_summarised_from_the_cache() {
    let fake =
        FakeLlm::start(Script::turns([Turn::text("first"), Turn::text("second")])).await.unwrap();
    let bus = EventBus::new();
    let mut events = bus.subscribe("transform/*".parse().unwrap(), 8);
    let enrich = build_with(options(&fake.base_url()), &Services::new(bus));
    let result = text_result(RESULT);
    let one = rewritten(run(&enrich, &result).await);
    let two = rewritten(run(&enrich, &result).await);
    assert_eq!(one, two);
    assert_eq!(fake.requests().len(), 1, "the second summary came from the cache");
    assert_eq!(enrich.cached(), 1);

    let first = events.try_recv().expect("an event per rewritten result");
    assert_eq!(first.kind, transform::APPLIED);
    assert_eq!(first.get("transform"), Some(&json!("enrich")));
    assert_eq!(first.get("cached"), Some(&json!(false)));
    assert_eq!(first.get("summary_tokens"), Some(&json!(1)), "\"first\" is one token");
    assert_eq!(first.get("model"), Some(&json!("gpt-4o-mini")));
    assert_eq!(first.get("placement"), Some(&json!("before")));
    assert_eq!(first.get("tool"), Some(&json!("list")));
    assert!(first.get("llm_prompt_tokens").and_then(Value::as_u64).unwrap() > 20, "{first:?}");
    assert_eq!(first.get("llm_completion_tokens"), Some(&json!(1)));
    let second = events.try_recv().expect("the cached one too");
    assert_eq!(second.get("cached"), Some(&json!(true)));
    assert_eq!(second.get("llm_prompt_tokens"), None, "no request, no usage");

    // Another tool's identical result is another summary.
    let mut other = ctx();
    other.target.as_mut().unwrap().exposed = "files__find".into();
    let message = Message::ToolResult(result.clone());
    let out = enrich.intercept(InterceptionEvent::ToolsCall, Phase::Response, &message, &mut other);
    assert_eq!(texts(&rewritten(out.await))[0], "Summary (the full result follows):\nsecond");
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn the_cache_is_bounded_and_can_be_off() {
    let fake = FakeLlm::start(Script::always(Turn::text("sum"))).await.unwrap();
    let one = build(with(options(&fake.base_url()), json!({"cache_size": 1})));
    let (a, b) = (text_result(RESULT), text_result(&format!("{RESULT}\nmore.txt")));
    for result in [&a, &b, &a] {
        rewritten(run(&one, result).await);
    }
    assert_eq!(one.cached(), 1);
    assert_eq!(fake.requests().len(), 3, "b pushed a out");

    let off = build(with(options(&fake.base_url()), json!({"cache_size": 0})));
    rewritten(run(&off, &a).await);
    rewritten(run(&off, &a).await);
    assert_eq!(off.cached(), 0);
    assert_eq!(fake.requests().len(), 5);
}

#[tokio::test]
async fn small_and_error_results_are_left_alone_unless_asked() {
    let fake = FakeLlm::start(Script::always(Turn::text("sum"))).await.unwrap();
    let enrich = build(with(options(&fake.base_url()), json!({"min_tokens": 1000})));
    assert!(matches!(run(&enrich, &text_result(RESULT)).await, Ok(Outcome::Continue)));
    let big = RESULT.repeat(100);
    rewritten(run(&enrich, &text_result(&big)).await);
    assert_eq!(fake.requests().len(), 1);

    let error = mcp::CallToolResult::error(vec![mcp::ContentBlock::text(RESULT)]);
    let enrich = build(options(&fake.base_url()));
    assert!(matches!(run(&enrich, &error).await, Ok(Outcome::Continue)));
    assert!(matches!(
        run(&enrich, &mcp::CallToolResult::success(vec![])).await,
        Ok(Outcome::Continue)
    ));
    assert_eq!(fake.requests().len(), 1);
    let on_error = build(with(options(&fake.base_url()), json!({"on_error": true})));
    let out = rewritten(run(&on_error, &error).await);
    assert_eq!(out.is_error, Some(true), "still an error result");
    assert_eq!(fake.requests().len(), 2);

    // Other messages, and results of no target, pass.
    let listed = Message::Tools(vec![]);
    let outcome =
        enrich.intercept(InterceptionEvent::ToolsList, Phase::Response, &listed, &mut ctx()).await;
    assert!(matches!(outcome, Ok(Outcome::Continue)));
    let mut anonymous = CallContext::new(Principal::local());
    let message = Message::ToolResult(text_result(RESULT));
    let outcome = enrich
        .intercept(InterceptionEvent::ToolsCall, Phase::Response, &message, &mut anonymous)
        .await;
    assert!(matches!(outcome, Ok(Outcome::Continue)));
}

#[tokio::test]
async fn a_long_result_is_cut_before_it_goes_into_the_prompt() {
    let fake = FakeLlm::start(Script::always(Turn::text("sum"))).await.unwrap();
    let enrich = build(with(
        options(&fake.base_url()),
        json!({"max_input_tokens": 100, "prompt": "{result}"}),
    ));
    let long = "word ".repeat(1000);
    rewritten(run(&enrich, &text_result(&long)).await);
    let prompt = fake.requests()[0].last_user_text().unwrap();
    let (kept, note) = prompt.split_once("\n[... the rest").expect("a note of the cut");
    assert!(long.starts_with(kept));
    assert_eq!(toolgate_llm::tokens::Encoding::O200kBase.count(kept), 100);
    assert_eq!(note, format!(" of the result ({} bytes) was left out]", long.len() - kept.len()));
}

#[tokio::test]
async fn the_key_goes_in_the_authorization_header() {
    let fake = FakeLlm::start(Script::always(Turn::text("sum"))).await.unwrap();
    let options = with(options(&fake.base_url()), json!({"api_key_env": "LLM_KEY"}));
    let env = |name: &str| (name == "LLM_KEY").then(|| OsString::from("sk-test-42"));
    let enrich = Enrich::with_env(&entry(options), &Services::new(EventBus::new()), env).unwrap();
    rewritten(run(&enrich, &text_result(RESULT)).await);
    assert_eq!(fake.requests()[0].header("authorization"), Some("Bearer sk-test-42"));
}

/// The error `enrich` fails with when the fake answers `turn`; the result text must not
/// be in it.
async fn failure(turn: Turn) -> (String, String) {
    let fake = FakeLlm::start(Script::always(turn)).await.unwrap();
    let enrich = build(options(&fake.base_url()));
    let error = match run(&enrich, &text_result(RESULT)).await {
        Err(error) => error.to_string(),
        other => panic!("expected a failure, got {other:?}"),
    };
    assert!(!error.contains("src/main.rs"), "no result text in errors: {error}");
    assert_eq!(fake.requests().len(), 1);
    (error, fake.addr().to_string())
}

#[tokio::test]
async fn http_errors_name_the_host_the_status_and_the_code() {
    let (error, host) = failure(Turn::fail(500)).await;
    assert_eq!(
        error,
        format!(
            "the summary endpoint {host} answered HTTP 500 Internal Server Error (server_error)"
        )
    );
    let (error, host) = failure(Turn::fail(429)).await;
    assert_eq!(
        error,
        format!(
            "the summary endpoint {host} answered HTTP 429 Too Many Requests (rate_limit_exceeded)"
        )
    );
    let (error, host) = failure(Turn::raw(502, "text/html", "<html>bad gateway</html>")).await;
    assert_eq!(error, format!("the summary endpoint {host} answered HTTP 502 Bad Gateway"));
}

#[tokio::test]
async fn bodies_that_are_not_a_summary_are_failures() {
    let (error, host) = failure(Turn::raw(200, "application/json", "{\"choices\": [")).await;
    assert_eq!(
        error,
        format!(
            "the summary endpoint {host} answered with a body that is not JSON (line 1, column 13)"
        )
    );
    let (error, host) = failure(Turn::raw(200, "application/json", "{\"object\": \"list\"}")).await;
    assert_eq!(
        error,
        format!(
            "the summary endpoint {host} answered with a body that is not a chat completion (no \
             choices)"
        )
    );
    let (error, host) = failure(Turn::text("   ")).await;
    assert_eq!(error, format!("the summary endpoint {host} answered with an empty summary"));
}

#[tokio::test]
async fn an_endpoint_that_is_down_is_a_failure() {
    // A socket bound but not listening: connections are refused, and the port stays this
    // test's (a port freed again could be taken by another test's fake endpoint meanwhile).
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = socket.local_addr().unwrap();
    let enrich = build(options(&format!("http://{addr}/v1")));
    let error = run(&enrich, &text_result(RESULT)).await.unwrap_err().to_string();
    assert!(
        error.starts_with(&format!("the summary endpoint {addr} could not be reached: ")),
        "{error}"
    );
    assert!(error.to_lowercase().contains("refused"), "{error}");
    drop(socket);
}

#[tokio::test(start_paused = true)]
async fn a_slow_endpoint_times_out_before_the_pipeline_does() {
    let fake = FakeLlm::start(Script::always(Turn::text("late").after(Duration::from_secs(60))))
        .await
        .unwrap();
    let entries = [entry(with(options(&fake.base_url()), json!({"request_timeout": "2s"})))];
    let pipeline = crate::build_pipeline(&entries, &Services::new(EventBus::new())).unwrap();
    let result = text_result(RESULT);
    let mut ctx = ctx();
    let started = tokio::time::Instant::now();
    let out = pipeline
        .response(InterceptionEvent::ToolsCall, Message::ToolResult(result.clone()), &mut ctx)
        .await
        .expect("fails open");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(2) && waited < Duration::from_secs(7),
        "cut by request_timeout, not the pipeline's 7 s: {waited:?}"
    );
    assert!(matches!(out, Message::ToolResult(r) if r == result), "unchanged");
    let decision = ctx.decisions.last().expect("a decision");
    assert_eq!(
        decision.kind,
        DecisionKind::Failed {
            error: format!("the summary endpoint {} did not answer within 2s", fake.addr()),
            let_through: true,
        }
    );
    assert_eq!(fake.requests().len(), 1, "the request was made");
}

#[tokio::test]
async fn through_the_pipeline_a_failure_leaves_the_result_unchanged() {
    let fake = FakeLlm::start(Script::always(Turn::fail(503))).await.unwrap();
    let entries = [entry(options(&fake.base_url()))];
    let pipeline = crate::build_pipeline(&entries, &Services::new(EventBus::new())).unwrap();
    let result = text_result(RESULT);
    let mut ctx = ctx();
    let out = pipeline
        .response(InterceptionEvent::ToolsCall, Message::ToolResult(result.clone()), &mut ctx)
        .await
        .expect("fails open");
    assert!(matches!(out, Message::ToolResult(r) if r == result));
    assert!(matches!(
        &ctx.decisions.last().unwrap().kind,
        DecisionKind::Failed { error, let_through: true } if error.contains("HTTP 503")
    ));
}
