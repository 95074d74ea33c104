//! The `script` interceptor's bench: what a script costs a call when its hooks do nothing
//! (the target: an empty `before_call` and `after_call` at most 20 µs per call
//! together), and when they do a typical small thing (read an argument, add a text block).
//! And what one call of a script's own tool costs, from an MCP client through the in-process
//! pipe the gateway uses to the script's answer.

use super::*;

/// One call's request phase then its response phase through a pipeline of one script entry.
pub(super) fn script_call(c: &mut Criterion) {
    let runtime = runtime();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let scripts = [
        (
            "empty_hooks",
            "pub async fn before_call(call, ctx) { }\npub async fn after_call(call, result, ctx) { }\n",
        ),
        (
            "small_hooks",
            "pub async fn before_call(call, ctx) { if call.arguments.path == \"/etc/shadow\" { return #{ deny: \"no\" }; } #{ keep: call.arguments.path } }\n\
             pub async fn after_call(call, result, ctx) { result.content.push(#{ type: \"text\", text: `read ${ctx.kept}` }); result }\n",
        ),
    ];
    let call = Call::new(false);
    let result = mcp::CallToolResult::success(vec![mcp::ContentBlock::text("# todo\n- bench")]);
    let mut group = c.benchmark_group("script");
    for (name, text) in scripts {
        let path = dir.path().join(format!("{name}.rn"));
        std::fs::write(&path, text).expect("write the script");
        let services = Services::new(EventBus::new());
        let options = json!({ "file": path.to_string_lossy() });
        let pipeline = build_pipeline(&[entry("script", 0, options)], &services).expect("valid");
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter_batched(
                || (Message::CallTool(call.params.clone()), call.context()),
                |(message, mut ctx)| {
                    let (pipeline, result) = (&pipeline, result.clone());
                    async move {
                        let request =
                            pipeline.request(InterceptionEvent::ToolsCall, message, &mut ctx).await;
                        let response = pipeline
                            .response(
                                InterceptionEvent::ToolsCall,
                                Message::ToolResult(result),
                                &mut ctx,
                            )
                            .await;
                        black_box((request.is_ok(), response))
                    }
                },
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

/// One `tools/call` of a script's own tool, from rmcp's client over a `tokio::io::duplex`
/// pipe to the `ScriptServer` and back: what the gateway's hop to a script tool costs.
pub(super) fn script_tool_call(c: &mut Criterion) {
    use rmcp::ServiceExt as _;
    use toolgate_scripts::serve::ScriptServer;

    let runtime = runtime();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let tools = [
        ("empty", "pub fn tools() { [#{ name: \"t\" }] }\npub async fn call_t(args, ctx) { }\n"),
        (
            "small",
            "pub fn tools() { [#{ name: \"t\", input_schema: #{ properties: #{ who: #{ type: \"string\" } } } }] }\n\
             pub async fn call_t(args, ctx) { `Hello, ${args.who}!` }\n",
        ),
    ];
    let mut group = c.benchmark_group("script_tool");
    for (name, text) in tools {
        let path = dir.path().join(format!("{name}.rn"));
        std::fs::write(&path, text).expect("write the script");
        let scripts = toolgate_scripts::Scripts::new(None, toolgate_scripts::Limits::default());
        let script = scripts.load(&path).expect("compiles");
        let server = ScriptServer::new(script, scripts, None, Duration::from_secs(5));
        let client = runtime.block_on(async {
            let (ours, theirs) = tokio::io::duplex(256 * 1024);
            tokio::spawn(server.serve(theirs));
            ().serve(ours).await.expect("handshake")
        });
        let params = mcp::CallToolRequestParams::new("t")
            .with_arguments(json!({"who": "Ann"}).as_object().cloned().unwrap_or_default());
        let check = runtime.block_on(client.peer().call_tool(params.clone())).expect("answered");
        assert_ne!(check.is_error, Some(true), "{check:?}");
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter(|| {
                let (peer, params) = (client.peer(), params.clone());
                async move { black_box(peer.call_tool(params).await.is_ok()) }
            });
        });
    }
    group.finish();
}
