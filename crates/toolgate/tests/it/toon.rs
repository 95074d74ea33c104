//! `toon` through the real gateway, in front of the official memory server: the knowledge
//! graph it returns as JSON reaches the client as TOON that decodes to the very JSON the
//! server sent, with `structuredContent` untouched; JSON that TOON does not shorten arrives
//! compact; a server the entry does not name, and a result too small to gain, pass
//! unchanged.

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use serde_json::{Value, json};

use crate::deps;
use crate::support::*;

/// One memory file served twice: `mem_toon` (the `toon` entry names it) and `mem_plain`.
fn config(memory_file: &std::path::Path) -> ConfigDir {
    let file = memory_file.to_string_lossy();
    let env = [("MEMORY_FILE_PATH", file.as_ref())];
    let mut config = deps::npm_stdio_server("mem_toon", "mcp-server-memory", &[], &env);
    config.push_str(&deps::npm_stdio_server("mem_plain", "mcp-server-memory", &[], &env));
    config.push_str("\n[[pipeline]]\nkind = \"toon\"\nservers = [\"mem_toon\"]\n");
    ConfigDir::new(&config)
}

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(object(args)))
        .await
        .expect("a tool result");
    assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
    result
}

/// The text blocks, as JSON (text and `_meta`).
fn text_blocks(result: &CallToolResult) -> Vec<Value> {
    result
        .content
        .iter()
        .filter(|block| matches!(block, ContentBlock::Text(_)))
        .map(|block| serde_json::to_value(block).expect("serializes"))
        .collect()
}

fn decode_toon(text: &str) -> Value {
    toon_format::decode(text, &toon_format::DecodeOptions::default())
        .unwrap_or_else(|e| panic!("the TOON decodes ({e}):\n{text}"))
}

/// 24 people, each with observations, who know each other.
fn people() -> (Value, Value) {
    let entities: Vec<Value> = (0..24)
        .map(|i| {
            json!({
                "name": format!("person_{i}"),
                "entityType": "person",
                "observations": [format!("works on project {}", i % 5), "likes tea, not coffee"],
            })
        })
        .collect();
    let relations: Vec<Value> = (0..24)
        .map(|i| {
            json!({"from": format!("person_{i}"), "to": format!("person_{}", (i + 7) % 24), "relationType": "knows"})
        })
        .collect();
    (json!({ "entities": entities }), json!({ "relations": relations }))
}

#[tokio::test]
async fn server_memory_json_reaches_the_client_as_toon_that_decodes_to_the_same_json() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(&dir.path().join("memory.jsonl"));
    let client = stdio_client(&config.path()).await;
    let (entities, relations) = people();

    // create_entities answers with the created entities, as pretty JSON; each holds a list,
    // so TOON would cost more than compact JSON: the client gets compact JSON.
    let created = call(&client, "mem_toon__create_entities", entities.clone()).await;
    let blocks = text_blocks(&created);
    assert_eq!(blocks.len(), 1, "no note without TOON: {blocks:#?}");
    assert_eq!(blocks[0]["_meta"]["io.toolgate/format"], "json");
    assert_eq!(blocks[0]["text"], entities["entities"].to_string());
    assert_eq!(created.structured_content, Some(entities.clone()), "structuredContent stays JSON");
    call(&client, "mem_toon__create_relations", relations.clone()).await;

    // The same graph, read through both servers: one with the transform, one without.
    let with_toon = call(&client, "mem_toon__read_graph", json!({})).await;
    let plain = call(&client, "mem_plain__read_graph", json!({})).await;
    let plain_blocks = text_blocks(&plain);
    assert_eq!(plain_blocks.len(), 1);
    assert!(plain_blocks[0].get("_meta").is_none(), "{plain_blocks:#?}");
    let sent: Value =
        serde_json::from_str(plain_blocks[0]["text"].as_str().expect("text")).expect("JSON");
    assert_eq!(sent["relations"], relations["relations"]);

    let blocks = text_blocks(&with_toon);
    assert_eq!(blocks.len(), 2, "{blocks:#?}");
    let toon = blocks[1]["text"].as_str().expect("text");
    assert!(toon.contains("relations[24]{from,to,relationType}:\n"), "a table:\n{toon}");
    assert_eq!(decode_toon(toon), sent, "the TOON is the JSON the server sent");
    assert_eq!(with_toon.structured_content, plain.structured_content);
    assert_eq!(with_toon.structured_content.as_ref(), Some(&sent));

    // And it costs fewer tokens, note included.
    let encoding = toolgate_llm::tokens::Encoding::O200kBase;
    let before = encoding.count(&sent.to_string());
    let after = encoding.count(toon) + encoding.count(blocks[0]["text"].as_str().expect("note"));
    assert!(after < before, "{after} tokens with TOON, {before} as compact JSON");

    // A result too small to gain passes unchanged.
    let one = call(&client, "mem_toon__open_nodes", json!({"names": ["person_3"]})).await;
    let blocks = text_blocks(&one);
    assert_eq!(blocks.len(), 1);
    assert!(blocks[0].get("_meta").is_none(), "{blocks:#?}");
    serde_json::from_str::<Value>(blocks[0]["text"].as_str().expect("text")).expect("still JSON");
    client.cancel().await.expect("close");
}
