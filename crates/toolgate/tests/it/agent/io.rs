//! `toolgate run`'s inputs and outputs: prompts from arguments and stdin, `--json`, client
//! JSON configs, plain chat, `[agent]`, and the runs it stores.

use super::*;

// --- 5. --json, stdin, --mcp-config, plain chat, [agent] ---------------------------------

/// No flags: provider, base URL and key variable from `[agent]`, the model from
/// `TOOLGATE_MODEL` over the config's.
#[tokio::test]
async fn the_agent_table_and_toolgate_model_choose_the_model() {
    let agent = Agent::new([Turn::text("Configured.")]).await;
    let config = agent.config(&format!(
        "[agent]\nprovider = \"compatible\"\nbase_url = {}\nmodel = \"from-config\"\n\
         api_key_env = \"LOCAL_LLM_KEY\"\nsystem = \"Be terse.\"\n",
        toml_str(&agent.fake.base_url())
    ));
    let env = [("LOCAL_LLM_KEY", "local-key-1"), ("TOOLGATE_MODEL", "from-env")];
    let args = ["run", "--no-save", "--config", &config.to_string_lossy(), "hello"];
    let output = agent.toolgate_with(&args, None, &env).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Configured.\n");
    let requests = agent.requests();
    assert_eq!(requests[0].model(), Some("from-env"));
    assert_eq!(requests[0].bearer(), Some("local-key-1"));
    let messages = requests[0].messages();
    assert_eq!((messages[0].role.as_str(), messages[0].content.as_str()), ("system", "Be terse."));
}

#[tokio::test]
async fn a_prompt_argument_with_a_socket_for_stdin_that_never_closes_does_not_wait_for_it() {
    // As under `ssh host toolgate run "..."`: stdin is open and nobody writes to it.
    let agent = Agent::new([Turn::text("Answered.")]).await;
    let (kept_open, stdin) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
    let home = agent.dir();
    let base_url = agent.fake.base_url();
    let child = Command::new(toolgate_bin())
        .args(["run", "--provider", "compatible", "--model", "test-model", "--no-save"])
        .args(["--base-url", &base_url, "only the argument"])
        .current_dir(&home)
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("TOOLGATE_CONFIG")
        .env_remove("TOOLGATE_MCP_CONFIG")
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(stdin)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn toolgate");
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("toolgate does not wait for a stdin nobody closes")
        .expect("run toolgate");
    drop(kept_open);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Answered.\n");
    assert_eq!(agent.requests()[0].last_user_text().as_deref(), Some("only the argument"));
}

#[tokio::test]
async fn the_json_transcript_of_a_prompt_read_from_stdin() {
    let agent = Agent::new([
        Turn::tool_call("fx__echo", json!({"text": WORLD}).to_string())
            .with_id("call_j")
            .with_usage(40, 8),
        Turn::text("Echoed.").with_usage(60, 3),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let prompt = "Echo this, please:\nline two — ünïcode\n";
    let output = agent
        .run(
            "openai",
            &["--json", "--no-save", "--config", &config.to_string_lossy()],
            Some(prompt),
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let transcript: Value = serde_json::from_slice(&output.stdout).expect("stdout is the JSON");
    assert_eq!(transcript["status"], "answered");
    assert_eq!(transcript["error"], Value::Null);
    assert_eq!(transcript["answer"], "Echoed.");
    assert_eq!(transcript["provider"], "openai");
    assert_eq!(transcript["model"], "test-model");
    assert_eq!(transcript["turns"], 2);
    assert_eq!(transcript["tool_calls"], 1);
    assert_eq!(transcript["usage"]["input_tokens"], 100);
    assert_eq!(transcript["usage"]["output_tokens"], 11);
    let messages = transcript["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool_result", "assistant"]);
    assert_eq!(messages[0]["content"][0]["text"], prompt);
    assert_eq!(messages[1]["tool_calls"][0]["id"], "call_j");
    assert_eq!(messages[1]["tool_calls"][0]["name"], "fx__echo");
    assert_eq!(messages[2]["call_id"], "call_j");
    assert_eq!(messages[2]["content"][0]["text"], WORLD);
    assert_eq!(messages[2]["is_error"], false);
    assert_eq!(agent.requests()[0].last_user_text().as_deref(), Some(prompt));
}

#[tokio::test]
async fn a_failed_prompt_in_json_says_failed_and_exits_1() {
    let agent = Agent::new([Turn::error(ProviderError::for_status(401))]).await;
    let output = agent.run("openai", &["--json", "--no-save", "hello"], None).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let transcript: Value = serde_json::from_slice(&output.stdout).expect("stdout is the JSON");
    assert_eq!(transcript["status"], "failed");
    let error = transcript["error"].as_str().expect("an error");
    assert!(error.contains("401") && error.contains(&host_of(&agent)), "{error}");
    assert_eq!(transcript["answer"], Value::Null);
    assert_eq!(agent.requests().len(), 1, "401 is not retried");
}

#[tokio::test]
async fn servers_from_a_claude_desktop_file_without_any_toolgate_toml() {
    let agent = Agent::new([
        Turn::tool_call("desk__echo", json!({"text": "from the desktop file"}).to_string()),
        Turn::text("Done."),
    ])
    .await;
    let file = agent.dir().join("claude_desktop_config.json");
    let desktop = json!({"mcpServers": {"desk": {"command": fixture_bin(), "args": []}}});
    std::fs::write(&file, desktop.to_string()).expect("write the desktop file");
    let output = agent
        .run("openai", &["--no-save", "--mcp-config", &file.to_string_lossy(), "go"], None)
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    assert!(
        requests[0].tool_names().iter().any(|t| t == "desk__echo"),
        "{:?}",
        requests[0].tool_names()
    );
    assert_eq!(only_result(&requests, 1).content, "from the desktop file");
}

#[tokio::test]
async fn with_no_config_and_no_servers_it_is_a_plain_chat() {
    let agent = Agent::new([Turn::text("Just talking. Ünïcode too.")]).await;
    let output = agent.run("anthropic", &["--no-save", "hi there"], None).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Just talking. Ünïcode too.\n", "the answer alone on stdout");
    let requests = agent.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].tool_names().is_empty(), "no tools: {:?}", requests[0].body);
    assert_eq!(requests[0].last_user_text().as_deref(), Some("hi there"));
    assert!(!agent.dir().join("data").exists(), "--no-save wrote nothing");
}

// --- 7. sessions ---------------------------------------------------------------------------

#[tokio::test]
async fn a_run_is_stored_and_listed_shown_and_exported() {
    let agent = Agent::new([
        Turn::tool_call("fx__echo", json!({"text": WORLD}).to_string())
            .with_id("call_kept")
            .with_usage(30, 5),
        Turn::text("Stored answer.").with_usage(50, 4),
    ])
    .await;
    let config = agent.config(&fixture_config(""));
    let sessions = agent.sessions();
    let sessions = sessions.to_string_lossy().into_owned();
    let output = agent
        .run(
            "openai",
            &["--sessions", &sessions, "--config", &config.to_string_lossy(), "keep this"],
            None,
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!agent.dir().join("data").exists(), "--sessions: nothing in the data folder");

    let listed =
        agent.toolgate(&["sessions", "list", "--json", "--sessions", &sessions], None).await;
    assert!(listed.status.success(), "{}", stderr(&listed));
    let list: Value = serde_json::from_slice(&listed.stdout).expect("JSON list");
    let rows = list.as_array().expect("an array");
    assert_eq!(rows.len(), 1, "{list}");
    let row = &rows[0];
    assert_eq!(row["messages"], 4, "{row}");
    assert_eq!(row["tool_calls"], 1, "{row}");
    assert_eq!(row["usage"]["input_tokens"], 80, "{row}");
    assert_eq!(row["usage"]["output_tokens"], 9, "{row}");
    assert_eq!((&row["provider"], &row["model"]), (&json!("openai"), &json!("test-model")));
    assert_eq!(row["title"], "keep this", "{row}");
    let id = row["id"].as_str().expect("an id").to_owned();

    let exported = agent
        .toolgate(&["sessions", "export", &id, "--format", "json", "--sessions", &sessions], None)
        .await;
    assert!(exported.status.success(), "{}", stderr(&exported));
    let export: Value = serde_json::from_slice(&exported.stdout).expect("JSON export");
    let text = export.to_string();
    for wanted in ["keep this", "call_kept", WORLD, "Stored answer."] {
        assert!(text.contains(wanted), "{wanted} in the export: {export:#}");
    }

    let shown =
        agent.toolgate(&["sessions", "show", &id[..8], "--sessions", &sessions], None).await;
    assert!(shown.status.success(), "{}", stderr(&shown));
    let markdown = stdout(&shown);
    assert!(markdown.starts_with("# keep this\n"), "a Markdown transcript:\n{markdown}");
    for wanted in ["keep this", "fx__echo", "Stored answer."] {
        assert!(markdown.contains(wanted), "{wanted} in:\n{markdown}");
    }
}
