//! `toolgate run` with real upstreams and the pipeline between: parallel calls, policy and
//! audit, rate limits, provider failures, bad arguments, timeouts and the turn limit.

use super::*;

// --- 2. real upstreams, parallel calls --------------------------------------------------

/// A temporary folder served by `server-filesystem` as `files`, holding `note.txt`.
fn filesystem_config(root: &Path, extra: &str) -> String {
    let server =
        deps::npm_stdio_server("files", "mcp-server-filesystem", &[&root.to_string_lossy()], &[]);
    format!("{server}\n[audit]\nfile = \"audit.jsonl\"\n\n{extra}")
}

#[tokio::test]
async fn server_filesystem_lists_and_reads_and_the_content_reaches_the_model() {
    let root = tempfile::tempdir().expect("temp dir");
    let root = root.path().canonicalize().expect("canonical");
    std::fs::write(root.join("note.txt"), "the kettle is on — ça chauffe").expect("write");
    let root_text = root.to_string_lossy().into_owned();
    let note = root.join("note.txt").to_string_lossy().into_owned();
    let agent = Agent::new([
        Turn::tool_call("files__list_directory", json!({ "path": root_text }).to_string()),
        Turn::tool_call("files__read_text_file", json!({ "path": note }).to_string()),
        Turn::text("The note says the kettle is on."),
    ])
    .await;
    let config = agent.config(&filesystem_config(&root, ""));
    let output = agent
        .run("openai", &["--no-save", "--config", &config.to_string_lossy(), "read my note"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("The note says the kettle is on."));

    let requests = agent.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let listed = only_result(&requests, 1);
    assert!(listed.content.contains("[FILE] note.txt"), "{listed:?}");
    let read = &results_of(&requests, 2)[1];
    assert!(read.content.contains("the kettle is on — ça chauffe"), "{read:?}");
    assert!(requests[2].tool_names().iter().any(|t| t == "files__write_file"));
}

#[tokio::test]
async fn server_memory_keeps_what_one_turn_created_for_the_next() {
    let agent = Agent::new([
        Turn::tool_call(
            "mem__create_entities",
            json!({"entities": [{"name": "toolgate", "entityType": "project",
                                 "observations": ["gates tools for agents"]}]})
            .to_string(),
        )
        .with_id("call_create"),
        Turn::tool_call("mem__read_graph", "{}").with_id("call_read"),
        Turn::text("toolgate gates tools."),
    ])
    .await;
    let memory = agent.dir().join("memory.jsonl");
    let server = deps::npm_stdio_server(
        "mem",
        "mcp-server-memory",
        &[],
        &[("MEMORY_FILE_PATH", &memory.to_string_lossy())],
    );
    let config = agent.config(&server);
    let output = agent
        .run("anthropic", &["--no-save", "--config", &config.to_string_lossy(), "remember"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let created = only_result(&requests, 1);
    assert_eq!(created.call_id, "call_create");
    assert!(!created.is_error, "{created:?}");
    let graph = results_of(&requests, 2).into_iter().find(|r| r.call_id == "call_read");
    let graph = graph.expect("the read_graph result");
    assert!(graph.content.contains("gates tools for agents"), "{graph:?}");
    assert!(std::fs::read_to_string(&memory).expect("the memory file").contains("toolgate"));
}

#[tokio::test]
async fn parallel_calls_run_together_and_their_results_keep_the_calls_order() {
    let agent = Agent::new([
        Turn::tool_call("fx__slow", json!({"steps": 3, "step_ms": 100}).to_string())
            .with_id("call_slow")
            .and_tool_call("fx__echo", json!({"text": "quick"}).to_string())
            .with_id("call_quick"),
        Turn::text("Both answered."),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run("openai", &["--no-save", "--config", &config.to_string_lossy(), "both"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = results_of(&agent.requests(), 1);
    let got: Vec<(&str, &str)> =
        results.iter().map(|r| (r.call_id.as_str(), r.content.as_str())).collect();
    assert_eq!(got, [("call_slow", "done 3"), ("call_quick", "quick")]);

    // In parallel: the quick call started and finished while the slow one ran.
    let audit = agent.audit();
    let position = |kind: &str, tool: &str| {
        audit
            .iter()
            .position(|r| r["kind"] == kind && r["tool"] == tool)
            .unwrap_or_else(|| panic!("no {kind} of {tool}: {audit:#?}"))
    };
    assert!(
        position("tools/call/finished", "echo") < position("tools/call/finished", "slow"),
        "{audit:#?}"
    );
    assert!(position("tools/call/started", "slow") < position("tools/call/finished", "echo"));
}

// --- 3. the pipeline applies --------------------------------------------------------------

#[tokio::test]
async fn the_policy_refuses_and_asks_nobody_and_the_audit_names_the_agent() {
    let root = tempfile::tempdir().expect("temp dir");
    let root = root.path().canonicalize().expect("canonical");
    let denied = root.join("denied.txt");
    let asked = root.join("asked");
    let policy = "[[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
        rules = [\n  { tools = [\"write_file\"], when = { path = \"path\", matches = \"denied\" }, \
        decision = \"deny\", reason = \"read-only here\" },\n  \
        { tools = [\"move_file\"], decision = \"deny\" },\n  \
        { tools = [\"create_directory\"], decision = \"ask\", reason = \"it changes the disk\" },\n]\n";
    let agent = Agent::new([
        Turn::tool_call(
            "files__write_file",
            json!({"path": denied.to_string_lossy(), "content": "should not be"}).to_string(),
        )
        .with_id("call_write")
        .and_tool_call(
            "files__create_directory",
            json!({"path": asked.to_string_lossy()}).to_string(),
        )
        .with_id("call_mkdir"),
        Turn::text("I was not allowed to."),
    ])
    .await;
    let config = agent.config(&filesystem_config(&root, policy));
    let output = agent
        .run("openai", &["--no-save", "--config", &config.to_string_lossy(), "write"], None)
        .await;
    assert!(output.status.success(), "the conversation goes on: {}", stderr(&output));
    assert!(stdout(&output).contains("I was not allowed to."), "{}", stdout(&output));
    assert!(!denied.exists(), "the denied call wrote {}", denied.display());
    assert!(!asked.exists(), "the unapproved call made {}", asked.display());

    let results = results_of(&agent.requests(), 1);
    assert_eq!(results.len(), 2, "{results:#?}");
    assert_eq!(results[0].call_id, "call_write");
    assert!(results[0].content.contains("refused by policy"), "{results:#?}");
    assert!(results[0].content.contains("read-only here"), "{results:#?}");
    assert_eq!(results[1].call_id, "call_mkdir");
    // Without a terminal nobody can approve: refused, saying so.
    assert!(results[1].content.contains("needs a person's approval"), "{results:#?}");
    assert!(results[1].content.contains("it changes the disk"), "{results:#?}");
    assert!(
        results[1].content.contains("nobody can be asked: the agent has no terminal"),
        "{results:#?}"
    );
    // A tool denied whatever its arguments is not offered; one denied by its arguments is.
    let offered = agent.requests()[0].tool_names();
    assert!(offered.iter().any(|t| t == "files__write_file"), "{offered:?}");
    assert!(!offered.iter().any(|t| t == "files__move_file"), "{offered:?}");

    let audit = agent.audit();
    let calls: Vec<&Value> = audit
        .iter()
        .filter(|r| r["kind"].as_str().is_some_and(|k| k.starts_with("tools/call")))
        .collect();
    let write = calls
        .iter()
        .find(|r| r["tool"] == "write_file")
        .unwrap_or_else(|| panic!("the refused call is audited: {audit:#?}"));
    assert_eq!(write["principal"], format!("agent:{USER}"), "{write}");
    assert!(
        !audit.iter().any(|r| r["kind"] == "tools/call/finished" && r["tool"] == "write_file"),
        "the upstream never ran it: {audit:#?}"
    );
}

// --- 4. errors ----------------------------------------------------------------------------

#[tokio::test]
async fn a_rate_limit_is_retried_after_the_wait_the_provider_asks_for() {
    let agent = Agent::new([
        Turn::error(ProviderError::for_status(429).with_retry_after(1)),
        Turn::text("Answered after the wait."),
    ])
    .await;
    let started = tokio::time::Instant::now();
    let output = agent.run("openai", &["--no-save", "hello"], None).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After: 1 was honoured");
    assert_eq!(stdout(&output).trim(), "Answered after the wait.");
    let notice = stderr(&output);
    assert!(notice.contains("try 1 failed"), "{notice}");
    assert!(notice.contains("429"), "{notice}");
    assert!(notice.contains("trying again in 1s"), "{notice}");
    let requests = agent.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(requests[0].body, requests[1].body, "the same request again");
}

#[tokio::test]
async fn a_provider_failing_every_try_exits_1_naming_the_host_and_the_status() {
    let failure = || {
        Turn::error(
            ProviderError::for_status(500).with_message("the fake is down").with_retry_after(0),
        )
    };
    let agent = Agent::new([failure(), failure(), failure(), failure()]).await;
    let output = agent.run("anthropic", &["--no-save", "hello"], None).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stdout(&output).is_empty(), "{}", stdout(&output));
    let said = stderr(&output);
    let last = said.lines().last().unwrap_or_default();
    assert!(last.contains(&host_of(&agent)), "names the host: {said}");
    assert!(last.contains("500"), "names the status: {said}");
    assert!(last.contains("the fake is down"), "gives the provider's message: {said}");
    assert!(!said.contains(KEY), "never the key: {said}");
    assert_eq!(agent.requests().len(), 4, "one try and three retries");
}

#[tokio::test]
async fn malformed_arguments_and_unknown_tools_get_error_results_and_the_talk_goes_on() {
    let agent = Agent::new([
        Turn::tool_call("fx__echo", r#"{"text": "unterminated"#)
            .with_id("call_bad")
            .and_tool_call("fx__no_such_tool", "{}")
            .with_id("call_unknown")
            .and_tool_call("fx__echo", "[1, 2]")
            .with_id("call_array"),
        Turn::tool_call("fx__echo", json!({"text": "fixed"}).to_string()).with_id("call_fixed"),
        Turn::text("Fixed it."),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run("anthropic", &["--no-save", "--config", &config.to_string_lossy(), "go"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "Fixed it.");
    let requests = agent.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let results = results_of(&requests, 1);
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["call_bad", "call_unknown", "call_array"]);
    assert!(results.iter().all(|r| r.is_error), "Anthropic's is_error is set: {results:#?}");
    assert!(results[0].content.contains("not made"), "{results:#?}");
    assert!(results[0].content.to_lowercase().contains("json"), "names the problem: {results:#?}");
    assert!(results[1].content.contains("no tool named fx__no_such_tool"), "{results:#?}");
    assert!(results[2].content.contains("not made"), "not an object: {results:#?}");
    let fixed = results_of(&requests, 2).into_iter().find(|r| r.call_id == "call_fixed");
    assert_eq!(fixed.map(|r| (r.content, r.is_error)), Some(("fixed".into(), false)));
    // Only the good call reached the upstream.
    let started: Vec<Value> =
        agent.audit().into_iter().filter(|r| r["kind"] == "tools/call/started").collect();
    assert_eq!(started.len(), 1, "{started:#?}");
}

/// One step of 10 s and no progress before it ends (progress would restart the timeout).
#[tokio::test]
async fn a_tool_over_its_timeout_gets_a_timed_out_result() {
    let agent = Agent::new([
        Turn::tool_call("fx__slow", json!({"steps": 1, "step_ms": 10_000}).to_string())
            .with_id("call_slow"),
        Turn::text("It took too long."),
    ])
    .await;
    let config = agent.config(&fixture_config("[agent]\ntool_timeout = \"300ms\"\n"));
    let output = agent
        .run("openai", &["--no-save", "--config", &config.to_string_lossy(), "wait"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let result = only_result(&agent.requests(), 1);
    assert_eq!(result.call_id, "call_slow");
    assert!(result.content.contains("timed out"), "{result:?}");
    assert!(stderr(&output).contains("timed out"), "{}", stderr(&output));
}

#[tokio::test]
async fn a_server_timeout_applies_to_the_agent_calls_too() {
    let agent = Agent::new([
        Turn::tool_call("fx__slow", json!({"steps": 1, "step_ms": 10_000}).to_string()),
        Turn::text("It took too long."),
    ])
    .await;
    let config =
        agent.config(&format!("{}timeout = \"300ms\"\n", fixture_server("fx", "stdio", None)));
    let output = agent
        .run("deepseek", &["--no-save", "--config", &config.to_string_lossy(), "wait"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let result = only_result(&agent.requests(), 1);
    assert!(result.content.contains("timed out"), "{result:?}");
}

#[tokio::test]
async fn the_turn_limit_stops_a_model_that_keeps_calling_tools() {
    let agent = Agent::with_script(Script::always(Turn::tool_call(
        "fx__echo",
        json!({"text": "again"}).to_string(),
    )))
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run(
            "openai",
            &["--no-save", "--max-turns", "3", "--config", &config.to_string_lossy(), "loop"],
            None,
        )
        .await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("stopped after 3 model turns without a final answer"),
        "{}",
        stderr(&output)
    );
    let requests = agent.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    assert_eq!(results_of(&requests, 2).len(), 2, "every call answered before the next turn");
}
