//! Scripts as a user meets them: a `.rn` file in `.toolgate/scripts/` beside the config acts on
//! the next call through `toolgate serve`; an edit is picked up without a restart; a version
//! that does not compile leaves the one before running; a deleted file leaves the pipeline and a
//! new one joins it; a script
//! that loops, panics or fails cannot take the gateway down. And the CLI: `script check`,
//! `test` and `new`.

use std::path::{Path, PathBuf};

use rmcp::model::CallToolRequestParams;
use serde_json::json;

use crate::support::*;

use crate::support::ScriptFolder as Folder;

fn version(n: u32) -> String {
    format!(
        r#"pub async fn before_call(call, ctx) {{
    if call.arguments.text == "no" {{ return #{{ deny: "v{n} says no" }}; }}
}}
pub async fn after_call(call, result, ctx) {{
    result.content.push(#{{ type: "text", text: "checked by v{n}" }});
    result
}}
"#
    )
}

async fn echo(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    text: &str,
) -> Vec<String> {
    let result = client
        .peer()
        .call_tool(
            CallToolRequestParams::new("fx__echo").with_arguments(object(json!({"text": text}))),
        )
        .await
        .expect("answered");
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect()
}

#[tokio::test]
async fn a_script_beside_the_config_acts_and_follows_its_file_without_a_restart() {
    let folder = Folder::new("");
    folder.save("guard.rn", &version(1));
    let gateway = HttpGateway::start(&folder.config()).await;
    let client = http_client(&gateway.url).await;
    assert_eq!(echo(&client, "hi").await, ["hi", "checked by v1"]);
    let refused = echo(&client, "no").await;
    assert!(refused.iter().any(|t| t.contains("v1 says no")), "{refused:?}");

    folder.save("guard.rn", &version(2));
    gateway.wait_for_log(&["script reloaded", "version=2"]).await;
    assert_eq!(echo(&client, "hi").await, ["hi", "checked by v2"], "the edit acts at once");

    folder.save("guard.rn", "pub async fn after_call(call, result, ctx) { result.content.push( }");
    let line = gateway.wait_for_log(&["does not compile", "guard.rn"]).await;
    assert!(line.contains("guard.rn"), "{line}");
    assert_eq!(echo(&client, "hi").await, ["hi", "checked by v2"], "the last good version runs on");

    std::fs::remove_file(folder.script("guard.rn")).expect("delete");
    gateway.wait_for_log(&["script removed from the pipeline", "guard.rn"]).await;
    assert_eq!(echo(&client, "hi").await, ["hi"], "a deleted script leaves the pipeline");

    folder.save("guard.rn", &version(3));
    gateway.wait_for_log(&["script added to the pipeline", "guard.rn"]).await;
    assert_eq!(echo(&client, "hi").await, ["hi", "checked by v3"], "and is back when its file is");

    // A file that was not there at start joins too.
    folder.save("second.rn", "pub async fn after_call(call, result, ctx) { result.content.push(#{ type: \"text\", text: \"second\" }); result }");
    gateway.wait_for_log(&["script added to the pipeline", "second.rn"]).await;
    assert_eq!(echo(&client, "hi").await, ["hi", "checked by v3", "second"]);
    let listed =
        run_toolgate(&["interceptors", "--config", &folder.config().to_string_lossy()]).await;
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("second"),
        "on disk, a restart lists it too"
    );
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn a_bad_script_cannot_take_the_gateway_down() {
    let folder = Folder::new("[scripts]\ninstructions = 100000\ntimeout = \"2s\"\n");
    // Only for `echo`: one loops, one panics, one allocates without end.
    folder.save("spin.rn", "pub fn meta() { #{ tools: [\"echo\"] } }\npub async fn before_call(call, ctx) { if call.arguments.text == \"spin\" { loop {} } }");
    folder.save(
        "boom.rn",
        "pub fn meta() { #{ tools: [\"echo\"] } }\npub async fn before_call(call, ctx) { if call.arguments.text == \"boom\" { panic(\"boom\") } }",
    );
    folder.save(
        "grow.rn",
        "pub fn meta() { #{ tools: [\"echo\"], fail_open: true } }\npub async fn before_call(call, ctx) { if call.arguments.text == \"grow\" { let v = []; loop { v.push(`${v}`); } } }",
    );
    let gateway = HttpGateway::start(&folder.config()).await;
    let client = http_client(&gateway.url).await;
    for (text, expected) in [("spin", "instructions"), ("boom", "boom")] {
        let answer = echo(&client, text).await;
        assert!(
            answer.iter().any(|t| t.contains("fails closed") && t.contains(expected)),
            "{text}: {answer:?}"
        );
    }
    assert_eq!(echo(&client, "grow").await, ["grow"], "a script that fails open lets it through");
    assert_eq!(echo(&client, "fine").await, ["fine"]);
    // Other tools and the gateway itself are untouched.
    let result = client
        .peer()
        .call_tool(
            CallToolRequestParams::new("fx__rich_echo")
                .with_arguments(object(json!({"text": "spin"}))),
        )
        .await
        .expect("answered");
    assert_eq!(first_text(&result), "spin");
    assert_http_healthy(&gateway.url).await;
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn a_script_named_in_the_pipeline_runs_once_with_the_entry_settings() {
    let folder = Folder::new(
        "[[pipeline]]\nkind = \"script\"\nfile = \".toolgate/scripts/guard.rn\"\nname = \"guard-entry\"\n",
    );
    folder.save("guard.rn", &version(1));
    let output =
        run_toolgate(&["interceptors", "--config", &folder.config().to_string_lossy()]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert_eq!(stdout.matches("guard-entry").count(), 2, "both phases, one entry: {stdout}");
    assert!(!stdout.contains("guard (script"), "not added a second time: {stdout}");
}

#[tokio::test]
async fn config_check_counts_the_scripts_found() {
    let folder = Folder::new("");
    folder.save("guard.rn", &version(1));
    let config = folder.config();
    let output = run_toolgate(&["config", "check", "--config", &config.to_string_lossy()]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("pipeline: script (1 entries)"), "{stdout}");
}

#[tokio::test]
async fn a_script_that_does_not_compile_at_start_is_a_config_error() {
    let folder = Folder::new("");
    folder.save("broken.rn", "pub async fn before_call(call, ctx) {\n  let x = ;\n}\n");
    let config = folder.config();
    let output = run_toolgate(&["config", "check", "--config", &config.to_string_lossy()]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "{stdout}{stderr}");
    let all = format!("{stdout}{stderr}");
    assert!(all.contains("scripts.broken.file") && all.contains("2:11"), "{all}");
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scripts")
}

#[tokio::test]
async fn script_check_test_and_new_work_on_the_examples() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(examples())
        .expect("examples")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rn"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    let mut args = vec!["script".to_owned(), "check".to_owned()];
    args.extend(files.iter().map(|f| f.to_string_lossy().into_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = run_toolgate(&args).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("compare.rn: ok (tools: side_by_side)"), "{stdout}");

    // A script's own tool runs too; without a gateway it cannot call others, and says so.
    let compare = examples().join("compare.rn");
    let output = run_toolgate(&[
        "script",
        "test",
        &compare.to_string_lossy(),
        "--call",
        r#"{"name": "compare__side_by_side", "arguments": {"first": {"tool": "a"}, "second": {"tool": "b"}}}"#,
        "--json",
    ])
    .await;
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let answer = &report["call_side_by_side"]["value"];
    assert_eq!(answer["isError"], true, "{report}");
    assert!(answer["content"][0]["text"].as_str().unwrap_or("").contains("needs the gateway"));

    let deny = examples().join("deny_by_argument.rn");
    let output = run_toolgate(&[
        "script",
        "test",
        &deny.to_string_lossy(),
        "--call",
        r#"{"name": "fs__write_file", "arguments": {"path": "/etc/passwd"}}"#,
        "--json",
    ])
    .await;
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(report["before_call"]["decision"], "deny", "{report}");

    let dir = tempfile::tempdir().expect("dir");
    let output =
        run_toolgate(&["script", "new", "mine", "--dir", &dir.path().to_string_lossy()]).await;
    assert!(output.status.success());
    let written = dir.path().join("mine.rn");
    let output = run_toolgate(&["script", "check", &written.to_string_lossy()]).await;
    assert!(
        output.status.success(),
        "the starting point compiles: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let again =
        run_toolgate(&["script", "new", "mine", "--dir", &dir.path().to_string_lossy()]).await;
    assert!(!again.status.success(), "never overwrites");
}
