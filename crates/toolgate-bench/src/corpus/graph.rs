//! What the corpus asks `server-memory` to remember: toolgate's own crates, what each is
//! for, and how they depend on each other (as ARCHITECTURE.md describes them). The server's
//! answers (`create_entities`, `create_relations`, `read_graph`, `search_nodes`,
//! `open_nodes`) are uniform arrays of objects, the shape TOON is made for.

use serde_json::{Value, json};

/// (name, entity type, observations)
const ENTITIES: &[(&str, &str, &[&str])] = &[
    (
        "toolgate",
        "crate",
        &["the binary: CLI, config discovery, the demo server", "exit codes 0, 1 and 64"],
    ),
    (
        "toolgate-core",
        "crate",
        &[
            "vocabulary with no IO",
            "exposed-name rules and canonical JSON",
            "re-exports rmcp's model types",
        ],
    ),
    (
        "toolgate-config",
        "crate",
        &[
            "turns toolgate.toml or a client's JSON into a validated Config",
            "reports every problem at once with its path",
        ],
    ),
    (
        "toolgate-upstream",
        "crate",
        &[
            "connections to upstream servers over stdio, streamable HTTP and SSE",
            "supervised, reconnects with backoff",
            "merges catalogs into the Inventory",
        ],
    ),
    (
        "toolgate-intercept",
        "crate",
        &["the interceptor contract, shaped on SEP-2624", "runs the pipeline in both phases"],
    ),
    (
        "toolgate-interceptors",
        "crate",
        &["the built-in interceptors, one module each", "module name = config kind"],
    ),
    (
        "toolgate-server",
        "crate",
        &["the downstream side: stdio and streamable HTTP", "the admin API and the event recorder"],
    ),
    ("toolgate-audit", "crate", &["the event bus and the hash-chained audit log", "webhook sinks"]),
    ("toolgate-integrity", "crate", &["tool contracts, the lock file and the scanner"]),
    (
        "toolgate-llm",
        "crate",
        &["token counts in o200k_base and cl100k_base", "tool results in each LLM API's format"],
    ),
    ("toolgate-testkit", "crate", &["fixture MCP servers for tests and benchmarks"]),
    ("toolgate-bench", "crate", &["the benchmark harness: latency, startup, scale, tokens"]),
    ("toolgate-conformance", "crate", &["the client the conformance suite drives in client mode"]),
    ("rmcp", "library", &["the Rust MCP SDK", "model types, client and server"]),
    ("tokio", "library", &["the async runtime"]),
    ("jsonschema", "library", &["JSON Schema validation of arguments and results"]),
    ("bpe-openai", "library", &["linear-time BPE with OpenAI's encodings"]),
    (
        "policy",
        "interceptor",
        &["allow, deny or ask by server, tool and arguments", "trust levels per server"],
    ),
    ("approval", "interceptor", &["holds ask calls for a person", "elicit, external or deny"]),
    ("validate_args", "interceptor", &["checks arguments against the tool's input schema"]),
    ("limits", "interceptor", &["rate and concurrency limits, per-tool timeouts"]),
    ("integrity", "interceptor", &["pins tool definitions and refuses drift"]),
];

/// (from, to, relation type)
const RELATIONS: &[(&str, &str, &str)] = &[
    ("toolgate", "toolgate-server", "depends_on"),
    ("toolgate", "toolgate-config", "depends_on"),
    ("toolgate", "toolgate-upstream", "depends_on"),
    ("toolgate", "toolgate-interceptors", "depends_on"),
    ("toolgate", "toolgate-audit", "depends_on"),
    ("toolgate", "toolgate-integrity", "depends_on"),
    ("toolgate-server", "toolgate-upstream", "depends_on"),
    ("toolgate-server", "toolgate-intercept", "depends_on"),
    ("toolgate-server", "toolgate-audit", "depends_on"),
    ("toolgate-server", "rmcp", "depends_on"),
    ("toolgate-upstream", "toolgate-config", "depends_on"),
    ("toolgate-upstream", "toolgate-core", "depends_on"),
    ("toolgate-upstream", "rmcp", "depends_on"),
    ("toolgate-upstream", "tokio", "depends_on"),
    ("toolgate-config", "toolgate-core", "depends_on"),
    ("toolgate-intercept", "toolgate-core", "depends_on"),
    ("toolgate-interceptors", "toolgate-intercept", "depends_on"),
    ("toolgate-interceptors", "toolgate-llm", "depends_on"),
    ("toolgate-interceptors", "toolgate-integrity", "depends_on"),
    ("toolgate-interceptors", "jsonschema", "depends_on"),
    ("toolgate-llm", "bpe-openai", "depends_on"),
    ("toolgate-bench", "toolgate-upstream", "depends_on"),
    ("toolgate-bench", "toolgate-interceptors", "depends_on"),
    ("toolgate-conformance", "toolgate-upstream", "depends_on"),
    ("toolgate-testkit", "rmcp", "depends_on"),
    ("toolgate-interceptors", "policy", "contains"),
    ("toolgate-interceptors", "approval", "contains"),
    ("toolgate-interceptors", "validate_args", "contains"),
    ("toolgate-interceptors", "limits", "contains"),
    ("toolgate-interceptors", "integrity", "contains"),
    ("approval", "policy", "follows"),
    ("integrity", "toolgate-integrity", "built_on"),
    ("validate_args", "jsonschema", "built_on"),
];

/// The `create_entities` arguments.
pub(crate) fn entities() -> Value {
    let entities: Vec<Value> = ENTITIES
        .iter()
        .map(|(name, kind, observations)| {
            json!({"name": name, "entityType": kind, "observations": observations})
        })
        .collect();
    json!({ "entities": entities })
}

/// The `create_relations` arguments.
pub(crate) fn relations() -> Value {
    let relations: Vec<Value> = RELATIONS
        .iter()
        .map(|(from, to, kind)| json!({"from": from, "to": to, "relationType": kind}))
        .collect();
    json!({ "relations": relations })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_relation_joins_two_entities() {
        let known = |name: &str| ENTITIES.iter().any(|(n, _, _)| *n == name);
        for (from, to, _) in RELATIONS {
            assert!(known(from) && known(to), "{from} -> {to}");
        }
    }
}
