//! `tools/list` written once: each tool of an inventory is serialized the first time it is
//! listed and its JSON kept until the inventory changes, so a list of 10,000 tools costs
//! copying bytes, not serializing 1.8 MB every time.
//!
//! What the pipeline makes of a list may differ from the inventory (tools hidden, reordered, a
//! description overridden, an argument renamed): a listed tool whose definition is still the
//! inventory's (compared field by field; the schemas by pointer first) uses the kept JSON, any
//! other is serialized as it is. Without a pipeline the whole array is kept.
//!
//! What is kept is each tool's JSON, never a list as the pipeline left it for one caller: the
//! pipeline runs for every request, so each caller gets the list it may see (`policy` rules
//! can name principals and groups).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use toolgate_core::mcp;
use toolgate_upstream::Inventory;

/// The kept JSON of one inventory's tools.
#[derive(Debug, Default)]
pub(crate) struct ToolJson {
    kept: Mutex<Option<Kept>>,
}

#[derive(Debug)]
struct Kept {
    /// The inventory the JSON is of (held, so that its address names it).
    inventory: Arc<Inventory>,
    /// Each tool's JSON, by exposed name.
    tools: HashMap<String, Bytes>,
    /// The whole array in the inventory's order, once written.
    whole: Option<Bytes>,
}

impl ToolJson {
    /// The JSON array of `inventory`'s tools, as listed without a pipeline.
    pub(crate) fn whole(&self, inventory: &Arc<Inventory>) -> Bytes {
        let mut kept = self.lock(inventory);
        let kept = kept.as_mut().expect("lock() keeps one");
        if let Some(whole) = &kept.whole {
            return whole.clone();
        }
        let whole = kept.array(inventory.tools().iter(), inventory);
        kept.whole = Some(whole.clone());
        whole
    }

    /// The JSON array of `tools`, as the pipeline left `inventory`'s list.
    pub(crate) fn array(&self, inventory: &Arc<Inventory>, tools: &[mcp::Tool]) -> Bytes {
        let mut kept = self.lock(inventory);
        kept.as_mut().expect("lock() keeps one").array(tools.iter(), inventory)
    }

    /// The kept JSON, emptied first if it is of another inventory.
    fn lock(&self, inventory: &Arc<Inventory>) -> std::sync::MutexGuard<'_, Option<Kept>> {
        let mut kept = self.kept.lock().expect("tool JSON lock must not be poisoned");
        if !kept.as_ref().is_some_and(|kept| Arc::ptr_eq(&kept.inventory, inventory)) {
            *kept = Some(Kept {
                inventory: inventory.clone(),
                tools: HashMap::with_capacity(inventory.tools().len()),
                whole: None,
            });
        }
        kept
    }
}

impl Kept {
    fn array<'a>(
        &mut self,
        tools: impl ExactSizeIterator<Item = &'a mcp::Tool>,
        inventory: &Inventory,
    ) -> Bytes {
        let mut out = Vec::with_capacity(tools.len() * 192 + 2);
        out.push(b'[');
        for (i, tool) in tools.enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let name: &str = &tool.name;
            match inventory.tool_definition(name).filter(|listed| listed.as_ref() == tool) {
                Some(_) => {
                    let json = self.tools.entry(name.to_owned()).or_insert_with(|| encode(tool));
                    out.extend_from_slice(json);
                }
                // Changed by the pipeline, or not the inventory's (a tool an interceptor serves).
                None => out.extend_from_slice(&encode(tool)),
            }
        }
        out.push(b']');
        out.into()
    }
}

fn encode(tool: &mcp::Tool) -> Bytes {
    serde_json::to_vec(tool).map(Bytes::from).unwrap_or_else(|error| {
        // A tool is plain data that came to us as JSON; this does not happen.
        tracing::warn!(tool = %tool.name, %error, "a tool could not be written as JSON");
        Bytes::from_static(b"{}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_upstream::{Catalog, Contribution};

    fn tool(name: &str, description: &str) -> mcp::Tool {
        serde_json::from_value(serde_json::json!({
            "name": name, "description": description,
            "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}
        }))
        .expect("a tool")
    }

    fn inventory(tools: Vec<mcp::Tool>) -> Arc<Inventory> {
        let catalog = Catalog { tools, ..Catalog::default() };
        let filter = toolgate_config::ToolFilter::default();
        Arc::new(Inventory::build([Contribution {
            upstream: "s",
            prefix: "",
            filter: &filter,
            catalog: &catalog,
        }]))
    }

    fn parsed(bytes: &Bytes) -> serde_json::Value {
        serde_json::from_slice(bytes).expect("JSON")
    }

    #[test]
    fn the_kept_json_is_what_serializing_gives() {
        let inventory = inventory(vec![tool("a", "first"), tool("b", "second")]);
        let json = ToolJson::default();
        let expected = serde_json::to_value(inventory.tools()).unwrap();
        assert_eq!(parsed(&json.whole(&inventory)), expected);
        assert_eq!(parsed(&json.whole(&inventory)), expected, "and again, from what was kept");
        assert_eq!(parsed(&json.array(&inventory, inventory.tools())), expected);
    }

    #[test]
    fn a_tool_the_pipeline_changed_is_written_as_it_is_now() {
        let inventory = inventory(vec![tool("a", "first"), tool("b", "second")]);
        let json = ToolJson::default();
        json.whole(&inventory);
        let mut changed = inventory.tools()[1].clone();
        changed.description = Some("overridden".into());
        let shown = vec![changed.clone()];
        assert_eq!(parsed(&json.array(&inventory, &shown)), serde_json::to_value(&shown).unwrap());
    }

    /// These tools, served in this process.
    #[derive(Clone)]
    struct Served(Vec<mcp::Tool>);

    impl rmcp::ServerHandler for Served {
        fn get_info(&self) -> mcp::ServerConfig {
            mcp::ServerConfig::new(mcp::ServerCapabilities::builder().enable_tools().build())
        }

        async fn list_tools(
            &self,
            _request: Option<mcp::PaginatedRequestParams>,
            _context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<mcp::ListToolsResult, mcp::ErrorData> {
            Ok(mcp::ListToolsResult::with_all_items(self.0.clone()))
        }
    }

    impl toolgate_upstream::InProcessServer for Served {
        fn serve(&self, stream: tokio::io::DuplexStream) {
            let served = self.clone();
            tokio::spawn(async move {
                if let Ok(service) = rmcp::ServiceExt::serve(served, stream).await {
                    let _ = service.waiting().await;
                }
            });
        }
    }

    /// Shows each caller only the tools whose names start with its id.
    struct Mine(toolgate_intercept::Descriptor);

    impl toolgate_intercept::Interceptor for Mine {
        fn descriptor(&self) -> &toolgate_intercept::Descriptor {
            &self.0
        }

        fn intercept<'a>(
            &'a self,
            _event: toolgate_intercept::InterceptionEvent,
            _phase: toolgate_intercept::Phase,
            message: &'a toolgate_intercept::Message,
            ctx: &'a mut toolgate_intercept::CallContext,
        ) -> futures::future::BoxFuture<
            'a,
            Result<toolgate_intercept::Outcome, toolgate_intercept::InterceptError>,
        > {
            use toolgate_intercept::{Message, Outcome};
            let outcome = match message {
                Message::Tools(tools) => {
                    let id = &ctx.principal.id;
                    let mine = tools.iter().filter(|l| l.original.starts_with(id.as_str()));
                    Outcome::Rewrite(Message::Tools(mine.cloned().collect()))
                }
                _ => Outcome::Continue,
            };
            Box::pin(async move { Ok(outcome) })
        }
    }

    /// The dispatcher keeps one `ToolJson` for every caller: what it keeps is each tool's JSON,
    /// never a list the pipeline filtered for one caller, so each caller gets its own list
    /// (here an interceptor that shows each only its own tools, as `policy` with `principals`
    /// does).
    #[tokio::test]
    async fn a_list_filtered_for_one_caller_is_never_served_to_another() {
        use toolgate_intercept::{CallContext, Hook, Phase, Pipeline, Principal};
        let tools = vec![tool("alice_a", "1"), tool("alice_b", "2"), tool("bob_a", "3")];
        let config = toolgate_config::ServerConfig {
            timeout: std::time::Duration::from_secs(10),
            required: true,
            ..toolgate_config::ServerConfig::new(
                "s".to_owned(),
                toolgate_config::TransportConfig::InProcess(toolgate_config::InProcessConfig {
                    origin: "test".into(),
                }),
            )
        };
        let server: Arc<dyn toolgate_upstream::InProcessServer> = Arc::new(Served(tools));
        let hooks = vec![Hook::new(["tools/list"], Phase::Response).expect("a literal event")];
        let mine = Mine(toolgate_intercept::Descriptor::new(
            "mine",
            "mine",
            toolgate_intercept::InterceptorType::Mutation,
            hooks,
        ));
        let pipeline = Pipeline::new(vec![Arc::new(mine)]).expect("one interceptor");
        let recorder = crate::Recorder::new(toolgate_audit::EventBus::new(), Vec::new());
        let gateway = crate::Gateway::start_with(
            &[],
            vec![(config, server)],
            toolgate_upstream::StartupWait::All,
            pipeline,
            recorder,
            None,
        )
        .await;
        assert_eq!(gateway.inventory().tools().len(), 3, "the server is listed");
        let json = ToolJson::default();
        let names = async |id: &str| {
            let mut ctx = CallContext::new(Principal::new("jwt", id));
            let listed = gateway.list_tools_json(&json, &mut ctx).await.expect("listed");
            let listed = parsed(&listed);
            let names = listed.as_array().expect("an array").iter();
            names.map(|t| t["name"].as_str().expect("a name").to_owned()).collect::<Vec<_>>()
        };
        for _ in 0..2 {
            assert_eq!(names("alice").await, ["s__alice_a", "s__alice_b"]);
            assert_eq!(names("bob").await, ["s__bob_a"]);
            assert_eq!(names("carol").await, Vec::<String>::new());
        }
    }

    #[test]
    fn another_inventory_starts_afresh() {
        let json = ToolJson::default();
        let old = inventory(vec![tool("a", "first")]);
        json.whole(&old);
        let new = inventory(vec![tool("a", "changed")]);
        let listed = parsed(&json.whole(&new));
        assert_eq!(listed[0]["description"], "changed");
    }
}
