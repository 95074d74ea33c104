//! A script's own tools as a user meets them: a `.rn` file with `tools()` in the script
//! folder serves `<file>__<tool>` over HTTP and stdio; its calls of other tools pass the
//! pipeline as the caller's own calls (policy, audit) and nest only so deep; its tools follow
//! the file (an edit, a new file, a deleted one reach the client as `list_changed`); a client
//! cannot pose as someone else through the caller's `_meta`.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::CallToolRequestParams;
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};

use crate::support::*;

const HELLO: &str = r#"
pub fn tools() {
    [#{ name: "greet", description: "Says hello", input_schema: #{ properties: #{ who: #{ type: "string" } } } }]
}
pub async fn call_greet(args, ctx) { `Hello, ${args.who}! (${ctx.principal})` }
"#;

/// Calls itself: only the depth limit ends it.
const DEEP: &str = r#"
pub fn tools() { [#{ name: "dive" }] }
pub async fn call_dive(args, ctx) {
    let below = toolgate::call("deep__dive", #{}).await?;
    Ok(`${ctx.depth} ${toolgate::text(below)?}`)
}
"#;

/// A config folder serving the fixture as `fx`, with the `compare.rn` example and a small
/// `hello.rn` in its script folder, a policy that denies `fx__large`, and an audit log.
fn folder() -> ScriptFolder {
    let folder = ScriptFolder::new(
        "[audit]\nfile = \"audit.jsonl\"\n\n[[pipeline]]\nkind = \"policy\"\n\
         default = \"allow\"\nrules = [{ servers = [\"fx\"], tools = [\"large\"], \
         decision = \"deny\", reason = \"too large for scripts\" }]\n",
    );
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/scripts");
    std::fs::copy(example.join("compare.rn"), folder.script("compare.rn")).expect("copy");
    folder.save("hello.rn", HELLO);
    folder
}

/// The audit log's records.
fn audit(folder: &ScriptFolder) -> Vec<Value> {
    let text = std::fs::read_to_string(folder.dir().join("audit.jsonl")).expect("audit log");
    text.lines().map(|line| serde_json::from_str(line).expect("a JSON record")).collect()
}

async fn call<H: rmcp::service::Service<RoleClient>>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    arguments: Value,
) -> rmcp::model::CallToolResult {
    client
        .peer()
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(object(arguments)))
        .await
        .expect("answered")
}

fn texts(result: &rmcp::model::CallToolResult) -> Vec<String> {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect()
}

async fn tool_names<H: rmcp::service::Service<RoleClient>>(
    client: &RunningService<RoleClient, H>,
) -> Vec<String> {
    let tools = client.peer().list_all_tools().await.expect("listed");
    tools.into_iter().map(|t| t.name.to_string()).filter(|n| !n.starts_with("fx__")).collect()
}

fn side_by_side(first: Value, second: Value) -> Value {
    json!({"first": first, "second": second})
}

#[tokio::test]
async fn a_script_tool_calls_two_tools_through_the_pipeline_over_http() {
    let folder = folder();
    let gateway = HttpGateway::start(&folder.config()).await;
    let client = http_client(&gateway.url).await;
    assert_eq!(tool_names(&client).await, ["compare__side_by_side", "hello__greet"]);

    let compared = call(
        &client,
        "compare__side_by_side",
        side_by_side(
            json!({"tool": "fx__echo", "arguments": {"text": "one two three"}}),
            json!({"tool": "hello__greet", "arguments": {"who": "Ann"}}),
        ),
    )
    .await;
    assert_ne!(compared.is_error, Some(true), "{compared:?}");
    assert_eq!(
        texts(&compared),
        [
            "## fx__echo (3 tokens)\none two three",
            "## hello__greet (9 tokens)\nHello, Ann! (anonymous:anonymous)",
        ]
    );
    assert_eq!(
        compared.structured_content,
        Some(json!({"first": {"tool": "fx__echo", "tokens": 3},
                     "second": {"tool": "hello__greet", "tokens": 9}}))
    );

    // The policy applies to a script's calls as to the caller's own.
    let refused = call(
        &client,
        "compare__side_by_side",
        side_by_side(
            json!({"tool": "fx__echo", "arguments": {"text": "x"}}),
            json!({"tool": "fx__large", "arguments": {"bytes": 10}}),
        ),
    )
    .await;
    assert_eq!(refused.is_error, Some(true));
    assert!(texts(&refused)[0].contains("too large for scripts"), "{refused:?}");

    // A tool that calls itself ends at the depth limit, through the real gateway.
    folder.save("deep.rn", DEEP);
    gateway.wait_for_log(&["a script's tools joined the gateway", "deep"]).await;
    let deep = call(&client, "deep__dive", json!({})).await;
    assert_eq!(deep.is_error, Some(true));
    assert!(texts(&deep)[0].contains("nest at most 4 deep"), "{deep:?}");

    // The caller's `_meta` cannot make a script tool call as someone else.
    let mut forged =
        CallToolRequestParams::new("hello__greet").with_arguments(object(json!({"who": "Eve"})));
    let meta = json!({"io.toolgate/caller": {"principal": {"kind": "admin", "id": "root"}}});
    forged.meta = Some(serde_json::from_value(meta).expect("meta"));
    let answer = client.peer().call_tool(forged).await.expect("answered");
    assert_eq!(texts(&answer), ["Hello, Eve! (anonymous:anonymous)"]);

    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());

    // Audited like any call: the script tool's call and the two it made, as the same caller.
    let finished: Vec<(String, String)> = audit(&folder)
        .iter()
        .filter(|r| r["kind"] == "tools/call/finished")
        .map(|r| (r["exposed"].as_str().unwrap_or("").to_owned(), r["principal"].to_string()))
        .collect();
    for tool in ["compare__side_by_side", "fx__echo", "hello__greet"] {
        assert!(
            finished.iter().any(|(t, p)| t == tool && p == "\"anonymous:anonymous\""),
            "{tool} in {finished:?}"
        );
    }
    let denied = audit(&folder).into_iter().filter(|r| r["kind"] == "tools/call/denied").count();
    assert_eq!(denied, 1, "the script's call of fx__large was denied and recorded");
}

#[tokio::test]
async fn a_script_tool_that_times_out_cancels_the_call_it_was_waiting_for() {
    let folder = ScriptFolder::new("[scripts]\ntool_timeout = \"1s\"\n");
    folder.save(
        "waits.rn",
        "pub fn tools() { [#{ name: \"long\" }] }\n\
         pub async fn call_long(args, ctx) { toolgate::call(\"fx__slow\", #{ steps: 600, step_ms: 100 }).await }\n",
    );
    let gateway = HttpGateway::start(&folder.config()).await;
    let client = http_client(&gateway.url).await;
    let answer = call(&client, "waits__long", json!({})).await;
    assert_eq!(answer.is_error, Some(true));
    assert!(texts(&answer)[0].contains("did not finish within 1s"), "{answer:?}");
    // The upstream was told, and stopped.
    gateway.wait_for_log(&["slow: cancelled", "fx"]).await;
    assert_http_healthy(&gateway.url).await;
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

/// Burns the CPU in a native function until something stops it: its budget is far more
/// than it can spend before its deadline.
const BURN: &str = r#"
pub fn tools() { [#{ name: "spin", input_schema: #{ properties: #{ n: #{ type: "integer" } } } }] }
pub async fn call_spin(args, ctx) {
    let text = "many words ";
    for _ in 0..16 { text = text + text; }
    toolgate::log::info(`spin ${args.n} started`);
    loop { toolgate::tokens(text); }
}
"#;

const BURNING: &str =
    "[scripts]\ninstructions = 1000000000000\ntimeout = \"1s\"\ntool_timeout = \"2s\"\n";

/// Two script calls that burn the CPU until their `tool_timeout` while another call is
/// made: the scripts hold no worker of the gateway, so the other call answers at once, and
/// both scripts end as errors at their deadline. `started` is when both scripts run.
async fn burning_scripts_hold_nothing_else_up(
    spin: [rmcp::Peer<RoleClient>; 2],
    other: rmcp::Peer<RoleClient>,
    started: impl std::future::Future<Output = ()>,
) {
    let began = tokio::time::Instant::now();
    let [first, second] = spin;
    let burning = [(first, 1), (second, 2)].map(|(peer, n)| {
        tokio::spawn(async move {
            let params =
                CallToolRequestParams::new("burn__spin").with_arguments(object(json!({"n": n})));
            (peer.call_tool(params).await.expect("answered"), began.elapsed())
        })
    });
    started.await;
    let asked = tokio::time::Instant::now();
    let params = CallToolRequestParams::new("fx__echo")
        .with_arguments(object(json!({"text": "still here"})));
    let echoed = other.call_tool(params).await.expect("answered");
    let took = asked.elapsed();
    assert_eq!(texts(&echoed), ["still here"]);
    assert!(burning.iter().all(|b| !b.is_finished()), "the scripts ended before the other call");
    // Milliseconds when nothing holds it up (it took 12.8 s with the scripts on the gateway's
    // workers); the bound leaves room for a loaded machine.
    assert!(took < std::time::Duration::from_millis(1500), "the other call took {took:?}");
    for task in burning {
        let (answer, ended) = task.await.expect("the call ran");
        assert_eq!(answer.is_error, Some(true), "{answer:?}");
        assert!(texts(&answer)[0].contains("did not finish within 2s"), "{answer:?}");
        // At the 2 s tool_timeout, give or take a loaded machine's scheduling (it ran 13 s
        // before the deadline could stop it).
        assert!(ended < std::time::Duration::from_secs(6), "a script ran {ended:?}");
    }
}

#[tokio::test]
async fn scripts_burning_the_cpu_hold_up_no_other_session_over_http() {
    let folder = ScriptFolder::new(BURNING);
    folder.save("burn.rn", BURN);
    let gateway = HttpGateway::start(&folder.config()).await;
    let clients = [
        http_client(&gateway.url).await,
        http_client(&gateway.url).await,
        http_client(&gateway.url).await,
    ];
    let started = async {
        gateway.wait_for_log(&["spin 1 started"]).await;
        gateway.wait_for_log(&["spin 2 started"]).await;
    };
    let [a, b, c] = clients.each_ref().map(|client| client.peer().clone());
    burning_scripts_hold_nothing_else_up([a, b], c, started).await;
    assert_http_healthy(&gateway.url).await;
    for client in clients {
        client.cancel().await.expect("close");
    }
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn scripts_burning_the_cpu_hold_up_no_other_call_over_stdio() {
    let folder = ScriptFolder::new(BURNING);
    folder.save("burn.rn", BURN);
    let mut command = tokio::process::Command::new(toolgate_bin());
    command.args(["serve", "--stdio", "--config"]).arg(folder.config());
    command.env("TOOLGATE_LOG", "info");
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn toolgate --stdio");
    let client = ().serve(transport).await.expect("client connects over stdio");
    let mut log =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stderr.expect("stderr")));
    // One session, three calls at once.
    let peer = client.peer().clone();
    let started = async {
        let mut seen = 0;
        while seen < 2 {
            let line = log.next_line().await.expect("read").expect("the gateway runs");
            seen += usize::from(line.contains("started") && line.contains("spin "));
        }
    };
    burning_scripts_hold_nothing_else_up([peer.clone(), peer.clone()], peer, started).await;
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn config_check_warns_about_scripts_whose_tools_cannot_be_served() {
    let folder = folder();
    let tool = "pub fn tools() { [#{ name: \"t\" }] }\npub fn call_t(a, c) { 1 }";
    folder.save("fx.rn", tool);
    folder.save("two.words.rn", tool);
    let config = folder.config().to_string_lossy().into_owned();
    let checked = run_toolgate(&["config", "check", "--json", "--config", &config]).await;
    let report: Value = serde_json::from_slice(&checked.stdout).expect("JSON");
    assert_eq!(report["ok"], true, "a warning, not a problem: {report}");
    let warnings: Vec<&str> =
        report["warnings"].as_array().expect("warnings").iter().filter_map(Value::as_str).collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("fx.rn") && w.contains("configured server")));
    assert!(warnings.iter().any(|w| w.contains("two.words.rn") && w.contains("letters, digits")));

    // `serve` leaves them out and serves the rest.
    let gateway = HttpGateway::start(&folder.config()).await;
    let client = http_client(&gateway.url).await;
    assert_eq!(tool_names(&client).await, ["compare__side_by_side", "hello__greet"]);
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn the_progress_of_a_script_tools_calls_reaches_its_caller_as_the_tools_own() {
    use crate::recorder::{Note, recording_stdio_client};
    use rmcp::model::{CallToolRequest, ClientRequest, ServerResult};
    use rmcp::service::PeerRequestOptions;

    let folder = folder();
    folder.save(
        "twice.rn",
        "pub fn tools() { [#{ name: \"slow\" }] }\n\
         pub async fn call_slow(args, ctx) {\n\
             toolgate::call(\"fx__slow\", #{ steps: 3, step_ms: 20 }).await?;\n\
             toolgate::call(\"fx__slow\", #{ steps: 2, step_ms: 20 }).await?;\n\
             Ok(\"both done\")\n\
         }\n",
    );
    let (client, mut notes, _pid) = recording_stdio_client(&folder.config()).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new(
        "twice__slow",
    )));
    let handle = client
        .peer()
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    let token = handle.progress_token.clone();
    match handle.await_response().await.expect("answered") {
        ServerResult::CallToolResult(result) => assert_eq!(texts(&result), ["both done"]),
        other => panic!("unexpected {other:?}"),
    }
    let mut seen = Vec::new();
    while seen.len() < 5 {
        let progress = notes
            .next_matching(|n| match n {
                Note::Progress(p) => Some(p.clone()),
                _ => None,
            })
            .await;
        assert_eq!(progress.progress_token, token, "under the caller's own token");
        seen.push(progress.progress);
    }
    assert_eq!(seen, [1.0, 2.0, 3.0, 4.0, 5.0], "one step per notification, always growing");
    client.cancel().await.expect("close");
}

/// A client whose user allows every approval asked of them, and counts the questions.
#[derive(Clone, Default)]
struct Approver {
    asked: Arc<std::sync::Mutex<Vec<String>>>,
}

impl ClientHandler for Approver {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut capabilities = rmcp::model::ClientCapabilities::default();
        capabilities.elicitation = Some(
            rmcp::model::ElicitationCapability::new()
                .with_form(rmcp::model::FormElicitationCapability::new()),
        );
        rmcp::model::ClientConfig::new(
            capabilities,
            rmcp::model::Implementation::new("approver", "1"),
        )
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let asked = serde_json::to_value(&request).expect("serializes");
        self.asked.lock().unwrap().push(asked["message"].as_str().unwrap_or("").to_owned());
        Ok(serde_json::from_value(
            json!({"action": "accept", "content": {"decision": "allow once"}}),
        )
        .expect("a valid result"))
    }
}

#[tokio::test]
async fn an_approval_of_a_script_tools_call_asks_the_person_who_called_it() {
    let folder = ScriptFolder::new(
        "[[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
         rules = [{ tools = [\"env_get\"], decision = \"ask\", reason = \"it reads the environment\" }]\n\n\
         [[pipeline]]\nkind = \"approval\"\nvia = \"elicit\"\n",
    );
    folder.save(
        "env.rn",
        "pub fn tools() { [#{ name: \"home\" }] }\n\
         pub async fn call_home(args, ctx) { toolgate::call(\"fx__env_get\", #{ name: \"HOME\" }).await }\n",
    );
    let mut command = tokio::process::Command::new(toolgate_bin());
    command.args(["serve", "--stdio", "--config"]).arg(folder.config());
    let transport = TokioChildProcess::new(command).expect("spawn toolgate --stdio");
    let approver = Approver::default();
    let client = approver.clone().serve(transport).await.expect("connects");
    let answer = call(&client, "env__home", json!({})).await;
    assert_ne!(answer.is_error, Some(true), "approved: {answer:?}");
    let asked = approver.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("fx__env_get") && asked[0].contains("HOME"), "{}", asked[0]);
    client.cancel().await.expect("close");

    // A client that cannot be asked: the approval's fallback (deny) refuses the script's call.
    let plain = stdio_client(&folder.config()).await;
    let refused = call(&plain, "env__home", json!({})).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(texts(&refused)[0].contains("does not support elicitation"), "{refused:?}");
    plain.cancel().await.expect("close");
}

#[tokio::test]
async fn script_serve_serves_one_scripts_tools_alone_and_follows_its_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("hello.rn");
    std::fs::write(&file, HELLO).expect("write");
    let mut command = tokio::process::Command::new(toolgate_bin());
    command.args(["script", "serve"]).arg(&file);
    let transport = TokioChildProcess::new(command).expect("spawn toolgate script serve");
    let watching = Watching::default();
    let client = watching.clone().serve(transport).await.expect("connects");
    let tools = client.peer().list_all_tools().await.expect("listed");
    assert_eq!(tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>(), ["greet"]);
    assert_eq!(
        texts(&call(&client, "greet", json!({"who": "Cy"})).await),
        ["Hello, Cy! (anonymous:anonymous)"]
    );

    let temporary = file.with_extension("rn.tmp");
    std::fs::write(
        &temporary,
        HELLO.replace("\"greet\"", "\"greet\" }, #{ name: \"bye\"").replace(
            "pub async fn call_greet",
            "pub fn call_bye(args, ctx) { \"bye\" }\npub async fn call_greet",
        ),
    )
    .expect("write");
    std::fs::rename(&temporary, &file).expect("rename");
    let wait = async {
        loop {
            let changed = watching.changed.notified();
            let tools = client.peer().list_all_tools().await.expect("listed");
            if tools.iter().any(|t| t.name == "bye") {
                break;
            }
            changed.await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), wait).await.expect("reloaded");
    assert_eq!(texts(&call(&client, "bye", json!({})).await), ["bye"]);
    client.cancel().await.expect("close");
}

/// A stdio client that counts `tools/list_changed`.
#[derive(Clone, Default)]
struct Watching {
    changed: Arc<tokio::sync::Notify>,
}

impl ClientHandler for Watching {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }
}

#[tokio::test]
async fn script_tools_are_served_on_stdio_and_follow_their_files() {
    let folder = folder();
    let mut command = tokio::process::Command::new(toolgate_bin());
    command.args(["serve", "--stdio", "--config"]).arg(folder.config());
    let transport = TokioChildProcess::new(command).expect("spawn toolgate --stdio");
    let watching = Watching::default();
    let client = watching.clone().serve(transport).await.expect("client connects over stdio");
    assert_eq!(tool_names(&client).await, ["compare__side_by_side", "hello__greet"]);
    assert_eq!(
        texts(&call(&client, "hello__greet", json!({"who": "Bo"})).await),
        [format!("Hello, Bo! (local:{})", whoami())]
    );
    let compared = call(
        &client,
        "compare__side_by_side",
        side_by_side(
            json!({"tool": "fx__echo", "arguments": {"text": "a"}}),
            json!({"tool": "fx__echo", "arguments": {"text": "b"}}),
        ),
    )
    .await;
    assert_eq!(texts(&compared), ["## fx__echo (1 tokens)\na", "## fx__echo (1 tokens)\nb"]);

    // An edit that adds a tool.
    folder.save(
        "hello.rn",
        &format!(
            "{}\npub fn call_wave(args, ctx) {{ \"o/\" }}",
            HELLO.replace("[#{ name: \"greet\"", "[#{ name: \"wave\" }, #{ name: \"greet\"")
        ),
    );
    let names = listed_when(&client, &watching, |n| n.iter().any(|n| n == "hello__wave")).await;
    assert_eq!(names, ["compare__side_by_side", "hello__greet", "hello__wave"]);
    assert_eq!(texts(&call(&client, "hello__wave", json!({})).await), ["o/"]);

    // A version that does not compile keeps the last one serving (seen once a file saved
    // after it has joined).
    folder.save("hello.rn", "pub fn tools() { [ }");
    folder.save("extra.rn", "pub fn tools() { [#{ name: \"x\" }] }\npub fn call_x(a, c) { 1 }");
    listed_when(&client, &watching, |n| n.iter().any(|n| n == "extra__x")).await;
    assert_eq!(texts(&call(&client, "hello__wave", json!({})).await), ["o/"]);
    assert_eq!(texts(&call(&client, "extra__x", json!({})).await), ["1"]);

    // A deleted file leaves.
    std::fs::remove_file(folder.script("extra.rn")).expect("delete");
    listed_when(&client, &watching, |n| !n.iter().any(|n| n == "extra__x")).await;
    let gone = client
        .peer()
        .call_tool(CallToolRequestParams::new("extra__x"))
        .await
        .expect_err("no such tool any more");
    assert!(gone.to_string().contains("extra__x"), "{gone}");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn pin_and_servers_include_the_scripts_tools() {
    let folder = folder();
    let config = folder.config().to_string_lossy().into_owned();
    let pinned = run_toolgate(&["pin", "--config", &config]).await;
    assert!(pinned.status.success(), "{}", String::from_utf8_lossy(&pinned.stderr));
    let stdout = String::from_utf8_lossy(&pinned.stdout);
    assert!(stdout.contains("hello: pinned 1 tool "), "{stdout}");
    assert!(stdout.contains("compare: pinned 1 tool "), "{stdout}");

    folder.save("hello.rn", &HELLO.replace("Says hello", "Says hello; also reads your mail"));
    let checked = run_toolgate(&["pin", "--check", "--config", &config]).await;
    assert!(!checked.status.success(), "a changed description is drift");
    assert!(String::from_utf8_lossy(&checked.stdout).contains("hello"));

    let servers = run_toolgate(&["servers", "--json", "--config", &config]).await;
    let rows: Vec<Value> = serde_json::from_slice(&servers.stdout).expect("json");
    let hello = rows.iter().find(|r| r["name"] == "hello").expect("hello is listed");
    assert_eq!(
        (hello["state"].as_str(), hello["transport"].as_str()),
        (Some("connected"), Some("script"))
    );
    assert_eq!(hello["tools"], 1);
}

/// The tools listed (other than the fixture's) once `wanted` holds of them, waiting (at most
/// 20 s) for `list_changed` until it does.
async fn listed_when(
    client: &RunningService<RoleClient, Watching>,
    watching: &Watching,
    wanted: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let wait = async {
        loop {
            let changed = watching.changed.notified();
            let names = tool_names(client).await;
            if wanted(&names) {
                return names;
            }
            changed.await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), wait)
        .await
        .expect("the tools changed as expected")
}

fn whoami() -> String {
    std::env::var("USER").or_else(|_| std::env::var("USERNAME")).unwrap_or_else(|_| "local".into())
}
