//! `tools/list` written once: each tool of an inventory is serialized the first time it is
//! listed and its JSON kept until the inventory changes, so a list of 10,000 tools costs
//! copying bytes, not serializing 1.8 MB every time.
//!
//! What the pipeline makes of a list may differ from the inventory (tools hidden, reordered, a
//! description overridden, an argument renamed): a listed tool whose definition is still the
//! inventory's (compared field by field; the schemas by pointer first) uses the kept JSON, any
//! other is serialized as it is. Without a pipeline the whole array is kept.

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
