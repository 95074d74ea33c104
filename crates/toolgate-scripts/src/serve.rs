//! A script's own tools served as an MCP server: `tools/list` is what the current version's
//! `tools()` lists, `tools/call` runs its `call_<name>` in the sandbox, and a reload that
//! changes the list sends `notifications/tools/list_changed`.
//!
//! toolgate connects to it as an upstream inside the process, named after the file, so its
//! tools are `<file>__<tool>` and are listed, pinned, piped and audited like any server's.
//! It serves any rmcp transport: the gateway's is an in-memory pipe, and `toolgate script
//! serve FILE` serves one script alone on stdio.
//!
//! A call runs the version current when it starts, to its end. A failure of the script (its
//! instruction budget, memory limit, timeout, a panic, an error) is the call's error result
//! and publishes `script/failed` with the script, the function and the cause; a tool that
//! returns `Err(reason)` answers with an error result saying `reason`, and nothing is
//! published (that is the tool's answer, not a failure).

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::ServerHandler;
use rmcp::service::{RequestContext, RoleServer, ServiceExt as _};
use rmcp::transport::IntoTransport;
use serde_json::{Value, json};
use toolgate_audit::Event;
use toolgate_core::mcp;

use crate::calls::{Origin, ProgressSink, ToolAccess, ToolCaller};
use crate::registry::Scripts;
use crate::sandbox::Failure;
use crate::script::Script;
use crate::tools::{error_result, result_of};

/// One script's tools, as an MCP server.
pub struct ScriptServer {
    script: Arc<Script>,
    scripts: Arc<Scripts>,
    caller: Option<Arc<dyn ToolCaller>>,
    timeout: Duration,
}

impl std::fmt::Debug for ScriptServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptServer").field("script", &self.script.path()).finish_non_exhaustive()
    }
}

impl ScriptServer {
    /// Serves `script`'s tools; each call may take `timeout` (wall clock), and calls other
    /// tools through `caller` (none: `toolgate::call` is an error). What fails is published
    /// through `scripts`.
    pub fn new(
        script: Arc<Script>,
        scripts: Arc<Scripts>,
        caller: Option<Arc<dyn ToolCaller>>,
        timeout: Duration,
    ) -> Arc<ScriptServer> {
        Arc::new(ScriptServer { script, scripts, caller, timeout })
    }

    /// The script served.
    pub fn script(&self) -> &Arc<Script> {
        &self.script
    }

    /// Serves one connection on `transport` until the client goes away, telling it when the
    /// script's tools change.
    pub async fn serve<T, E, A>(self: Arc<Self>, transport: T) -> Result<(), String>
    where
        T: IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let mut changes = self.script.changes();
        let mut listed = self.listing();
        let service = Handler(self.clone()).serve(transport).await.map_err(|e| e.to_string())?;
        let peer = service.peer().clone();
        let follow = async {
            while changes.changed().await.is_ok() {
                let now = self.listing();
                if now != listed {
                    listed = now;
                    if peer.notify_tool_list_changed().await.is_err() {
                        break;
                    }
                }
            }
            std::future::pending::<()>().await;
        };
        tokio::select! {
            _ = service.waiting() => {}
            () = follow => {}
        }
        Ok(())
    }

    /// The tools listed now.
    fn tools(&self) -> Vec<mcp::Tool> {
        self.script
            .current()
            .map(|c| c.tools().iter().map(|t| t.tool.as_ref().clone()).collect())
            .unwrap_or_default()
    }

    /// The tools listed now, as text to compare.
    fn listing(&self) -> String {
        serde_json::to_string(&self.tools()).unwrap_or_default()
    }

    async fn call(
        &self,
        params: mcp::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResult, mcp::ErrorData> {
        let name = params.name.to_string();
        let Some(compiled) = self.script.current() else {
            return Ok(error_result(format!(
                "the script {} is gone (its file was deleted)",
                self.script.name()
            )));
        };
        let Some(tool) = compiled.tool(&name) else {
            return Err(mcp::ErrorData::invalid_params(
                format!("the script {} has no tool {name}", self.script.name()),
                None,
            ));
        };
        let meta = params.meta.as_ref().map(|m| &m.0.0).unwrap_or(&context.meta.0.0);
        let origin = Origin::from_meta(meta);
        let ctx = json!({
            "server": self.script.name(),
            "tool": name,
            // A caller nobody vouched for (no gateway in between) is anonymous, as the gateway
            // would call it.
            "principal": origin
                .principal
                .as_ref()
                .map_or_else(|| "anonymous:anonymous".to_owned(), |p| format!("{}:{}", p.kind, p.id)),
            "session": origin.session,
            "request_id": request_id(&context.id),
            "depth": origin.depth,
        });
        let arguments = Value::Object(params.arguments.unwrap_or_default());
        let progress = progress_sink(&context);
        let access = self.caller.clone().map(|caller| ToolAccess { caller, origin, progress });
        let limits = crate::Limits { timeout: self.timeout, ..self.script.engine().limits() };
        let function = tool.function.clone();
        let running = compiled.call_with(&function, vec![arguments, ctx], limits, access);
        let outcome = tokio::select! {
            outcome = running => outcome,
            () = context.ct.cancelled() => {
                return Ok(error_result(format!("{name} was cancelled")));
            }
        };
        Ok(match outcome {
            Ok(value) => result_of(value),
            Err(Failure::Returned(reason)) => error_result(reason),
            Err(failure) => {
                self.failed(&function, &failure);
                error_result(format!("the script tool {name} failed: {failure}"))
            }
        })
    }

    fn failed(&self, function: &str, failure: &Failure) {
        let file = self.script.path().display().to_string();
        tracing::warn!(script = %file, function, cause = failure.cause(), error = %failure, "script tool failed");
        self.scripts.publish(
            Event::new("script/failed")
                .with("script", self.script.name())
                .with("function", function)
                .with("cause", failure.cause())
                .with("error", failure.to_string()),
        );
    }
}

/// The progress of the calls a tool makes, as the tool's own, when its caller asked for
/// progress: one step per notification whatever call it came from, so that it only grows
/// (each call counts from its own start), with the call's message.
fn progress_sink(context: &RequestContext<RoleServer>) -> Option<ProgressSink> {
    let token = context.meta.get_progress_token()?;
    let peer = context.peer.clone();
    let steps = Arc::new(std::sync::atomic::AtomicU64::new(0));
    Some(Arc::new(move |message: Option<String>| {
        let step = steps.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let mut params = mcp::ProgressNotificationParam::new(token.clone(), step as f64);
        params.message = message;
        let peer = peer.clone();
        Box::pin(async move {
            let _ = peer.notify_progress(params).await;
        })
    }))
}

fn request_id(id: &mcp::RequestId) -> Value {
    serde_json::to_value(id).unwrap_or_default()
}

/// The rmcp handler over a [`ScriptServer`].
#[derive(Clone)]
struct Handler(Arc<ScriptServer>);

impl ServerHandler for Handler {
    fn get_info(&self) -> mcp::ServerConfig {
        let capabilities =
            mcp::ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build();
        mcp::ServerConfig::new(capabilities).with_server_info(mcp::Implementation::new(
            format!("toolgate-script-{}", self.0.script.name()),
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<mcp::PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<mcp::ListToolsResult, mcp::ErrorData> {
        Ok(mcp::ListToolsResult::with_all_items(self.0.tools()))
    }

    async fn call_tool(
        &self,
        request: mcp::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<mcp::CallToolResponse, mcp::ErrorData> {
        self.0.call(request, context).await.map(Into::into)
    }

    fn get_tool(&self, name: &str) -> Option<mcp::Tool> {
        self.0.script.current()?.tool(name).map(|t| t.tool.as_ref().clone())
    }
}

#[cfg(test)]
mod tests;
