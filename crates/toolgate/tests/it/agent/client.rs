//! `toolgate run` as the MCP client of its upstreams: sampling, roots, elicitation and
//! progress without a terminal.

use super::*;

// --- 6. the MCP client: sampling, roots, elicitation, progress ------------------------------

#[tokio::test]
async fn sampling_is_answered_by_the_agent_model_with_allow_sampling() {
    let agent = Agent::new([
        Turn::tool_call("fx__test_sampling", json!({"prompt": "What is 2+2?"}).to_string())
            .with_id("call_s"),
        Turn::text("Four."),
        Turn::text("The server's model said four."),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run(
            "anthropic",
            &["--no-save", "--allow-sampling", "--config", &config.to_string_lossy(), "sample"],
            None,
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("allowed by --allow-sampling"), "{}", stderr(&output));
    let requests = agent.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let sampling = &requests[1];
    assert_eq!(sampling.last_user_text().as_deref(), Some("What is 2+2?"));
    assert!(sampling.tool_names().is_empty(), "a sampling request offers no tools");
    assert!(sampling.tool_results().is_empty());
    assert_eq!(sampling.body["max_tokens"], 100, "the server's maxTokens");
    let result = only_result(&requests, 2);
    assert_eq!(result.call_id, "call_s");
    assert_eq!(result.content, "LLM response: Four.");
}

#[tokio::test]
async fn sampling_without_a_terminal_or_the_flag_is_refused() {
    let agent = Agent::new([
        Turn::tool_call("fx__test_sampling", json!({"prompt": "What is 2+2?"}).to_string()),
        Turn::text("It was refused."),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run("openai", &["--no-save", "--config", &config.to_string_lossy(), "sample"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    assert_eq!(requests.len(), 2, "the model was not asked for the server: {requests:#?}");
    let result = only_result(&requests, 1);
    assert!(!result.content.contains("LLM response"), "{result:?}");
    assert!(result.content.contains("sampling"), "says what was refused: {result:?}");
    assert!(result.content.contains("nobody could be asked"), "and why: {result:?}");
    assert!(result.content.contains("--allow-sampling"), "and what allows it: {result:?}");
}

#[tokio::test]
async fn roots_elicitation_and_progress_as_a_client_without_a_terminal() {
    let extra = tempfile::tempdir().expect("temp dir");
    let extra = extra.path().canonicalize().expect("canonical").join("a dir");
    std::fs::create_dir(&extra).expect("mkdir");
    // One at a time: on stdio, a server's request is matched to the only call in flight.
    let agent = Agent::new([
        Turn::tool_call("fx__list_roots", "{}").with_id("call_roots"),
        Turn::tool_call("fx__test_elicitation", json!({"message": "Who are you?"}).to_string())
            .with_id("call_form"),
        Turn::tool_call("fx__test_tool_with_progress", "{}")
            .with_id("call_progress")
            .and_tool_call("fx__echo", json!({"text": "alongside"}).to_string())
            .with_id("call_echo"),
        Turn::text("Done."),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run(
            "openai-responses",
            &[
                "--no-save",
                "--root",
                &extra.to_string_lossy(),
                "--config",
                &config.to_string_lossy(),
                "client things",
            ],
            None,
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    let roots = only_result(&requests, 1);
    let form = results_of(&requests, 2).into_iter().find(|r| r.call_id == "call_form");
    let form = form.expect("the form's result");
    let last = results_of(&requests, 3);
    let progress = last.iter().find(|r| r.call_id == "call_progress").expect("progress result");

    assert_eq!(roots.call_id, "call_roots");
    let roots: Value = serde_json::from_str(&roots.content).expect("roots as JSON");
    let uris: Vec<&str> = roots["roots"]
        .as_array()
        .expect("roots")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    let cwd = format!("file://{}", agent.dir().to_string_lossy());
    let extra_uri = format!("file://{}", extra.to_string_lossy().replace(' ', "%20"));
    assert_eq!(uris, [cwd.as_str(), extra_uri.as_str()], "{roots}");

    assert!(form.content.to_lowercase().contains("decline"), "{form:?}");
    assert_eq!(progress.content, "Progress test completed");
}

#[tokio::test]
async fn a_server_asking_during_parallel_calls_of_the_agent_is_answered() {
    // Two calls in flight on one stdio server: its `roots/list` cannot say which call it
    // belongs to, and both are the agent's, so either answers it.
    let agent = Agent::new([
        Turn::tool_call("fx__list_roots", "{}")
            .with_id("call_a")
            .and_tool_call("fx__list_roots", "{}")
            .with_id("call_b")
            .and_tool_call("fx__slow", json!({"steps": 2, "step_ms": 50}).to_string())
            .with_id("call_slow"),
        Turn::text("Done."),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let output = agent
        .run("openai", &["--no-save", "--config", &config.to_string_lossy(), "roots twice"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = results_of(&agent.requests(), 1);
    let cwd = format!("file://{}", agent.dir().to_string_lossy());
    for id in ["call_a", "call_b"] {
        let result = results.iter().find(|r| r.call_id == id).expect("each call's result");
        assert!(result.content.contains(&cwd), "{id} got the roots: {result:?}");
    }
}
