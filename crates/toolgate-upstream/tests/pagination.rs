//! An upstream that pages its lists: toolgate must see every page.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ListPromptsResult, ListToolsResult, PaginatedRequestParams, Prompt, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;
use toolgate_config::{HttpConfig, HttpTransport, ServerConfig as Server, TransportConfig};
use toolgate_upstream::Upstream;

const TOOLS: usize = 25;
const PAGE: usize = 4;

#[derive(Clone)]
struct Paging;

fn page<T: Clone>(
    items: &[T],
    request: Option<PaginatedRequestParams>,
) -> (Vec<T>, Option<String>) {
    let start: usize = request.and_then(|r| r.cursor).and_then(|c| c.parse().ok()).unwrap_or(0);
    let end = (start + PAGE).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    (items[start..end].to_vec(), next)
}

impl ServerHandler for Paging {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_prompts().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let all: Vec<Tool> = (0..TOOLS)
            .map(|i| Tool::new(format!("tool_{i:02}"), "paged", Arc::new(Default::default())))
            .collect();
        let (tools, next) = page(&all, request);
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next;
        Ok(result)
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let all: Vec<Prompt> =
            (0..9).map(|i| Prompt::new(format!("prompt_{i}"), None::<String>, None)).collect();
        let (prompts, next) = page(&all, request);
        let mut result = ListPromptsResult::with_all_items(prompts);
        result.next_cursor = next;
        Ok(result)
    }
}

#[tokio::test]
async fn every_page_of_every_list_is_fetched() {
    let shutdown = CancellationToken::new();
    let service = StreamableHttpService::new(
        || Ok(Paging),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_cancellation_token(shutdown.child_token()),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let app = axum::Router::new().nest_service("/mcp", service);
    let stop = shutdown.clone();
    tokio::spawn(async move {
        axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned()).await
    });

    let config = Server {
        prefix: "p".into(),
        startup_timeout: Duration::from_secs(20),
        timeout: Duration::from_secs(20),
        required: true,
        ..Server::new(
            "paging",
            TransportConfig::Http(HttpConfig {
                transport: HttpTransport::StreamableHttp,
                ..HttpConfig::new(format!("http://{address}/mcp").parse().expect("url"))
            }),
        )
    };
    let upstream = Upstream::connect(&config).await.expect("connects");
    let catalog = upstream.catalog();
    let tools: Vec<&str> = catalog.tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(tools.len(), TOOLS, "{tools:?}");
    assert_eq!(tools.last(), Some(&"tool_24"));
    assert_eq!(upstream.catalog().prompts.len(), 9);
    upstream.shutdown().await;
    shutdown.cancel();
}
