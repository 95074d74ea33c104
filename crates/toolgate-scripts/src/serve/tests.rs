//! A script's tools served over an in-memory pipe to rmcp's own client.

use std::sync::Mutex;

use futures::future::BoxFuture;
use rmcp::ClientHandler;
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use serde_json::Map;
use toolgate_audit::EventBus;

use super::*;
use crate::calls::{CALLER_META, MAX_DEPTH, PrincipalName};
use crate::sandbox::Limits;

/// A client that counts `tools/list_changed`.
#[derive(Clone, Default)]
struct Client {
    changed: Arc<tokio::sync::Notify>,
    count: Arc<std::sync::atomic::AtomicUsize>,
}

impl ClientHandler for Client {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.changed.notify_one();
    }
}

/// Answers every call with its name, arguments and origin, as text.
#[derive(Default)]
struct Echo {
    seen: Mutex<Vec<Origin>>,
}

impl ToolCaller for Echo {
    fn call(
        &self,
        origin: Origin,
        name: String,
        arguments: Map<String, Value>,
        _progress: Option<crate::calls::ProgressSink>,
    ) -> BoxFuture<'static, Result<mcp::CallToolResult, String>> {
        self.seen.lock().unwrap().push(origin);
        Box::pin(async move {
            if name == "refused" {
                return Err("refused by policy".to_owned());
            }
            if name == "broken" {
                return Ok(error_result("it broke"));
            }
            let text = format!("{name} {}", Value::Object(arguments));
            Ok(mcp::CallToolResult::success(vec![mcp::ContentBlock::text(text)]))
        })
    }
}

struct Served {
    client: RunningService<RoleClient, Client>,
    changed: Arc<tokio::sync::Notify>,
    count: Arc<std::sync::atomic::AtomicUsize>,
    script: Arc<Script>,
    events: EventBus,
    _dir: tempfile::TempDir,
}

async fn serve(text: &str, caller: Option<Arc<dyn ToolCaller>>) -> Served {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("tools.rn");
    std::fs::write(&path, text).expect("write");
    let events = EventBus::new();
    let limits = Limits { instructions: 200_000, ..Limits::default() };
    let scripts = Scripts::new(Some(events.clone()), limits);
    let script = scripts.load(&path).expect("loads");
    let server = ScriptServer::new(script.clone(), scripts, caller, Duration::from_secs(5));
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    tokio::spawn(server.serve(theirs));
    let handler = Client::default();
    let (changed, count) = (handler.changed.clone(), handler.count.clone());
    let client = handler.serve(ours).await.expect("handshake");
    Served { client, changed, count, script, events, _dir: dir }
}

const TOOLS: &str = r#"
pub fn tools() {
    [
        #{ name: "greet", description: "Says hello", input_schema: #{ properties: #{ who: #{ type: "string" } } } },
        #{ name: "sum", inputSchema: #{ type: "object" } },
        #{ name: "refuse" },
        #{ name: "spin" },
        #{ name: "relay" },
    ]
}
pub async fn call_greet(args, ctx) { `Hello, ${args.who}! (${ctx.server}/${ctx.tool})` }
pub async fn call_sum(args, ctx) { #{ sum: args.a + args.b } }
pub async fn call_refuse(args, ctx) { Err("not today") }
pub async fn call_spin(args, ctx) { loop {} }
pub async fn call_relay(args, ctx) {
    let first = toolgate::call(args.target, #{ n: 1 }).await?;
    Ok(`${toolgate::text(first)?} at depth ${ctx.depth}`)
}
"#;

async fn call(served: &Served, name: &str, args: Value) -> mcp::CallToolResult {
    let params = mcp::CallToolRequestParams::new(name.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    served.client.peer().call_tool(params).await.expect("answered")
}

fn text(result: &mcp::CallToolResult) -> String {
    crate::tools::text_of(result)
}

#[tokio::test]
async fn tools_are_listed_and_called() {
    let served = serve(TOOLS, None).await;
    let tools = served.client.peer().list_all_tools().await.expect("listed");
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["greet", "sum", "refuse", "spin", "relay"]);
    assert_eq!(tools[0].description.as_deref(), Some("Says hello"));

    let greeted = call(&served, "greet", json!({"who": "Ann"})).await;
    assert_eq!(text(&greeted), "Hello, Ann! (tools/greet)");
    assert_eq!(greeted.is_error, Some(false));
    let sum = call(&served, "sum", json!({"a": 2, "b": 3})).await;
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));
    let refused = call(&served, "refuse", json!({})).await;
    assert_eq!((refused.is_error, text(&refused)), (Some(true), "not today".to_owned()));
    let unknown = served
        .client
        .peer()
        .call_tool(mcp::CallToolRequestParams::new("nope"))
        .await
        .expect_err("no such tool");
    assert!(unknown.to_string().contains("has no tool nope"), "{unknown}");
}

#[tokio::test]
async fn a_failing_tool_answers_with_an_error_and_publishes_why() {
    let served = serve(TOOLS, None).await;
    let pattern = toolgate_audit::EventPattern::parse("script/failed").expect("pattern");
    let mut failures = served.events.subscribe(pattern, 16);
    let spun = call(&served, "spin", json!({})).await;
    assert_eq!(spun.is_error, Some(true));
    assert!(text(&spun).contains("budget of 200000 instructions"), "{}", text(&spun));
    let event = failures.recv().await.expect("published");
    assert_eq!(event.fields["script"], json!("tools"));
    assert_eq!(event.fields["function"], json!("call_spin"));
    assert_eq!(event.fields["cause"], json!("budget"));
    // The server goes on serving.
    assert_eq!(
        text(&call(&served, "greet", json!({"who": "Bo"})).await),
        "Hello, Bo! (tools/greet)"
    );
}

#[tokio::test]
async fn a_tool_calls_through_the_caller_as_its_own_caller_one_level_deeper() {
    let echo = Arc::new(Echo::default());
    let served = serve(TOOLS, Some(echo.clone())).await;
    let origin = Origin {
        principal: Some(PrincipalName {
            kind: "local".into(),
            id: "ann".into(),
            groups: vec![],
            tenant: None,
        }),
        session: Some("s1".into()),
        depth: 0,
        asker: None,
    };
    let mut meta = Map::new();
    meta.insert(CALLER_META.into(), origin.to_meta());
    let mut params = mcp::CallToolRequestParams::new("relay")
        .with_arguments(json!({"target": "fs__read"}).as_object().cloned().unwrap());
    params.meta = Some(mcp::RequestMetaObject(mcp::MetaObject(meta)));
    let relayed = served.client.peer().call_tool(params).await.expect("answered");
    assert_eq!(text(&relayed), r#"fs__read {"n":1} at depth 0"#);
    assert_eq!(echo.seen.lock().unwrap().clone(), [Origin { depth: 1, ..origin }]);

    let refused = call(&served, "relay", json!({"target": "refused"})).await;
    assert_eq!((refused.is_error, text(&refused)), (Some(true), "refused by policy".to_owned()));
    let broken = call(&served, "relay", json!({"target": "broken"})).await;
    assert_eq!(text(&broken), "broken answered with an error: it broke");
}

#[tokio::test]
async fn calls_nest_only_so_deep() {
    let echo = Arc::new(Echo::default());
    let served = serve(TOOLS, Some(echo.clone())).await;
    let mut meta = Map::new();
    meta.insert(CALLER_META.into(), Origin { depth: MAX_DEPTH, ..Origin::default() }.to_meta());
    let mut params = mcp::CallToolRequestParams::new("relay")
        .with_arguments(json!({"target": "tools__relay"}).as_object().cloned().unwrap());
    params.meta = Some(mcp::RequestMetaObject(mcp::MetaObject(meta)));
    let deep = served.client.peer().call_tool(params).await.expect("answered");
    assert_eq!(deep.is_error, Some(true));
    assert!(text(&deep).contains("nest at most 4 deep"), "{}", text(&deep));
    assert!(echo.seen.lock().unwrap().is_empty(), "the call was not made");
}

#[tokio::test]
async fn without_a_caller_a_tool_cannot_call() {
    let served = serve(TOOLS, None).await;
    let relayed = call(&served, "relay", json!({"target": "fs__read"})).await;
    assert_eq!(relayed.is_error, Some(true));
    assert!(text(&relayed).contains("toolgate::call needs the gateway"), "{}", text(&relayed));
}

#[tokio::test]
async fn a_reload_that_changes_the_tools_tells_the_client() {
    let served = serve(TOOLS, None).await;
    // A reload that lists the same tools says nothing.
    served.script.reload().expect("reloads");
    let path = served.script.path().to_owned();
    std::fs::write(
        &path,
        "pub fn tools() { [#{ name: \"only\" }] }\npub fn call_only(args, ctx) { \"the new one\" }",
    )
    .expect("write");
    served.script.reload().expect("reloads");
    served.changed.notified().await;
    let tools = served.client.peer().list_all_tools().await.expect("listed");
    assert_eq!(tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>(), ["only"]);
    assert_eq!(served.count.load(std::sync::atomic::Ordering::SeqCst), 1, "one change, one notice");
    assert_eq!(text(&call(&served, "only", json!({})).await), "the new one");
    served.script.unload();
    served.changed.notified().await;
    assert!(served.client.peer().list_all_tools().await.expect("listed").is_empty());
    let gone = call(&served, "only", json!({})).await;
    assert!(text(&gone).contains("is gone"), "{}", text(&gone));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_reloads_while_calls_run_never_show_a_half_loaded_script() {
    let version = |n: u32| {
        format!(
            "pub fn tools() {{ [#{{ name: \"which\" }}] }}\npub async fn call_which(args, ctx) {{ \"v{n}\" }}"
        )
    };
    let served = serve(&version(0), None).await;
    let path = served.script.path().to_owned();
    let calling = async {
        let mut answers = 0;
        for _ in 0..300 {
            let result = call(&served, "which", json!({})).await;
            assert_ne!(result.is_error, Some(true), "{result:?}");
            let text = text(&result);
            assert!(text.len() >= 2 && text.starts_with('v'), "{text}");
            answers += 1;
        }
        answers
    };
    let reloading = async {
        for n in 1..=100 {
            std::fs::write(&path, version(n)).expect("write");
            served.script.reload().expect("every version compiles");
            tokio::task::yield_now().await;
        }
    };
    let (answers, ()) = tokio::join!(calling, reloading);
    assert_eq!(answers, 300);
    assert_eq!(text(&call(&served, "which", json!({})).await), "v100");
    assert_eq!(served.count.load(std::sync::atomic::Ordering::SeqCst), 0, "the list never changed");
}
