//! A server that changes its tools without `list_changed`, behind a gateway on the paused
//! clock: with each of `refresh_interval`, `tool_ttl` and `refresh_on_error` the gateway finds
//! out, and without them it does not.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolgate_config::{InProcessConfig, Refresh, ServerConfig, TransportConfig};
use toolgate_core::mcp;
use toolgate_intercept::{CallContext, Pipeline, Principal};
use toolgate_upstream::{CallOptions, InProcessServer, StartupWait};

use crate::{Gateway, GatewayError};

/// A server whose tools the test changes behind the gateway's back.
#[derive(Clone, Default)]
struct Silent {
    tools: Arc<Mutex<Vec<String>>>,
    /// How many times it was asked `tools/list`.
    lists: Arc<AtomicUsize>,
}

impl Silent {
    fn with(tools: &[&str]) -> Silent {
        let silent = Silent::default();
        silent.set(tools);
        silent
    }

    fn set(&self, tools: &[&str]) {
        *self.tools.lock().expect("tools") = tools.iter().map(|t| (*t).to_owned()).collect();
    }

    fn lists(&self) -> usize {
        self.lists.load(Ordering::SeqCst)
    }
}

impl rmcp::ServerHandler for Silent {
    fn get_info(&self) -> mcp::ServerConfig {
        mcp::ServerConfig::new(mcp::ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<mcp::ListToolsResult, mcp::ErrorData> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        let names = self.tools.lock().expect("tools").clone();
        let tools = names
            .into_iter()
            .map(|name| mcp::Tool::new(name, "a tool", Arc::new(serde_json::Map::new())))
            .collect();
        Ok(mcp::ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: mcp::CallToolRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<mcp::CallToolResponse, mcp::ErrorData> {
        let name = request.name.to_string();
        if !self.tools.lock().expect("tools").contains(&name) {
            return Err(mcp::ErrorData::invalid_params(format!("Unknown tool: {name}"), None));
        }
        Ok(mcp::CallToolResult::success(vec![mcp::ContentBlock::text(format!("ran {name}"))])
            .into())
    }
}

struct Served(Silent);

impl InProcessServer for Served {
    fn serve(&self, stream: tokio::io::DuplexStream) {
        let server = self.0.clone();
        tokio::spawn(async move {
            if let Ok(service) = rmcp::ServiceExt::serve(server, stream).await {
                let _ = service.waiting().await;
            }
        });
    }
}

async fn gateway(server: &Silent, refresh: Refresh) -> Arc<Gateway> {
    let config = ServerConfig {
        name: "s".to_owned(),
        transport: TransportConfig::InProcess(InProcessConfig { origin: "test".into() }),
        prefix: "s".to_owned(),
        tools: Default::default(),
        protocol: Default::default(),
        startup_timeout: toolgate_config::DEFAULT_STARTUP_TIMEOUT,
        timeout: Duration::from_secs(10),
        restart_wait: toolgate_config::DEFAULT_RESTART_WAIT,
        required: true,
        enabled: true,
        integrity: None,
        response_format: Vec::new(),
        replica: None,
        refresh,
    };
    let served: Arc<dyn InProcessServer> = Arc::new(Served(server.clone()));
    let recorder = crate::Recorder::new(toolgate_audit::EventBus::new(), Vec::new());
    Gateway::start_with(
        &[],
        vec![(config, served)],
        StartupWait::All,
        Pipeline::default(),
        recorder,
        None,
    )
    .await
}

fn ctx() -> CallContext {
    CallContext::new(Principal::new("test", "alice"))
}

async fn listed(gateway: &Gateway) -> Vec<String> {
    let tools = gateway.list_tools(&mut ctx()).await.expect("listed");
    tools.into_iter().map(|tool| tool.name.to_string()).collect()
}

async fn call(gateway: &Gateway, name: &str) -> Result<mcp::CallToolResult, GatewayError> {
    let params = mcp::CallToolRequestParams::new(name.to_owned());
    gateway.call_tool(params, &CallOptions::default(), &mut ctx()).await
}

fn known(gateway: &Gateway) -> Vec<String> {
    gateway.inventory().tools().iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test(start_paused = true)]
async fn without_settings_a_tool_added_silently_stays_unknown() {
    let server = Silent::with(&["a"]);
    let gateway = gateway(&server, Refresh::default()).await;
    server.set(&["a", "b"]);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(listed(&gateway).await, ["s__a"]);
    assert!(matches!(call(&gateway, "s__b").await, Err(GatewayError::UnknownTool(_))));
    assert_eq!(server.lists(), 1, "listed once, when it connected");
}

#[tokio::test(start_paused = true)]
async fn refresh_interval_lists_again_on_its_own() {
    let server = Silent::with(&["a"]);
    let every = Duration::from_secs(60);
    let gateway = gateway(&server, Refresh { interval: Some(every), ..Refresh::default() }).await;
    server.set(&["a", "b"]);
    tokio::time::sleep(every / 2).await;
    assert_eq!(known(&gateway), ["s__a"], "not before its interval");
    tokio::time::sleep(every).await;
    assert_eq!(known(&gateway), ["s__a", "s__b"]);
    // Nothing new: listed again, and nothing announced.
    let before = server.lists();
    tokio::time::sleep(every).await;
    assert_eq!(server.lists(), before + 1);
    assert_eq!(known(&gateway), ["s__a", "s__b"]);
}

#[tokio::test(start_paused = true)]
async fn a_list_older_than_tool_ttl_is_listed_again_before_it_is_answered() {
    let server = Silent::with(&["a"]);
    let ttl = Duration::from_secs(300);
    let gateway = gateway(&server, Refresh { tool_ttl: Some(ttl), ..Refresh::default() }).await;
    server.set(&["a", "b"]);
    tokio::time::sleep(ttl / 2).await;
    assert_eq!(listed(&gateway).await, ["s__a"], "still fresh");
    assert_eq!(server.lists(), 1);
    tokio::time::sleep(ttl).await;
    // Concurrent list requests share one listing.
    let (one, two) = tokio::join!(listed(&gateway), listed(&gateway));
    assert_eq!(one, ["s__a", "s__b"]);
    assert_eq!(two, ["s__a", "s__b"]);
    assert_eq!(server.lists(), 2);
}

#[tokio::test(start_paused = true)]
async fn refresh_on_error_finds_a_new_tool_at_most_once_a_gap() {
    let server = Silent::with(&["a"]);
    let refresh = Refresh { on_error: Some(true), ..Refresh::default() };
    let gateway = gateway(&server, refresh).await;
    server.set(&["a", "b"]);
    let result = call(&gateway, "s__b").await.expect("found after listing again");
    assert_eq!(result.content[0].as_text().map(|t| t.text.as_str()), Some("ran b"));
    assert_eq!(server.lists(), 2);
    // Names made up by a client: listed again at most once per gap (the one just made counts),
    // and never for a name under no refreshing server's prefix.
    for _ in 0..20 {
        assert!(matches!(call(&gateway, "s__nope").await, Err(GatewayError::UnknownTool(_))));
        assert!(matches!(call(&gateway, "other__x").await, Err(GatewayError::UnknownTool(_))));
    }
    assert_eq!(server.lists(), 2, "no listing within the gap");
    tokio::time::sleep(toolgate_upstream::UNKNOWN_TOOL_GAP).await;
    for _ in 0..20 {
        let _ = call(&gateway, "s__nope").await;
    }
    assert_eq!(server.lists(), 3, "one more listing for all of them");
}

#[tokio::test(start_paused = true)]
async fn refresh_on_error_drops_a_tool_the_server_says_it_no_longer_has() {
    let server = Silent::with(&["a", "b"]);
    let refresh = Refresh { on_error: Some(true), ..Refresh::default() };
    let gateway = gateway(&server, refresh).await;
    server.set(&["a"]);
    let answered = call(&gateway, "s__b").await;
    assert!(answered.is_err(), "{answered:?}");
    for _ in 0..100 {
        if known(&gateway) == ["s__a"] {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("still listed: {:?}", known(&gateway));
}
