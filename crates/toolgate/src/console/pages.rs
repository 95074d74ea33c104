//! The console's read-only pages: the inventory, and the audit log.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;
use serde_json::Value;

use super::{Access, AuditFile, Console, layout};

/// How many audit records the audit page shows at most.
const AUDIT_RECORDS: usize = 100;

/// How much of the end of the audit log the page reads to find them.
const AUDIT_TAIL_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Deserialize, Default)]
pub(super) struct Search {
    #[serde(default)]
    q: String,
}

/// `GET /console/inventory?q=`: the exposed tools, searched by name, description and
/// annotations.
pub(super) async fn inventory(
    State(console): State<Console>,
    headers: HeaderMap,
    Query(search): Query<Search>,
) -> Response {
    let session = match console.gateway_admin(&headers) {
        Access::Allowed(session) => session,
        Access::Refused(response) => return response,
    };
    let inventory = console.admin.gateway.inventory();
    let needle = search.q.trim().to_lowercase();
    let rows: Vec<_> = inventory
        .tools()
        .iter()
        .map(|tool| {
            let annotations = tool
                .annotations
                .as_ref()
                .and_then(|a| serde_json::to_string(a).ok())
                .unwrap_or_default();
            let description = tool.description.as_deref().unwrap_or_default().to_owned();
            let server = inventory
                .tool_route(&tool.name)
                .map(|route| route.upstream.to_string())
                .unwrap_or_default();
            (tool.name.to_string(), server, description, annotations)
        })
        .filter(|(name, _, description, annotations)| {
            needle.is_empty()
                || [name, description, annotations]
                    .iter()
                    .any(|s| s.to_lowercase().contains(&needle))
        })
        .collect();
    let body = html! {
        form method="get" action="/console/inventory" role="search" {
            label for="q" { "Search tools" }
            " "
            input id="q" name="q" type="search" value=(search.q);
            " "
            button type="submit" { "Search" }
        }
        table {
            caption { (rows.len()) " of " (inventory.tools().len()) " tools" }
            thead { tr {
                th scope="col" { "Tool" } th scope="col" { "Server" }
                th scope="col" { "Description" } th scope="col" { "Annotations" }
            } }
            tbody {
                @for (name, server, description, annotations) in &rows {
                    tr {
                        th scope="row" { code { (name) } }
                        td { (server) }
                        td class="text" { (description) }
                        td { code { (annotations) } }
                    }
                }
            }
        }
    };
    layout("Inventory", Some(&session), body).into_response()
}

/// What the audit page found in the log.
struct AuditView {
    verdict: Result<(u64, String), String>,
    records: Vec<Value>,
}

/// Verifies the log at `path` and reads its last records that contain `needle`.
fn read_audit(path: &Path, needle: &str) -> AuditView {
    let verdict = toolgate_audit::verify(path)
        .map(|report| (report.records, report.head))
        .map_err(|error| error.to_string());
    let mut text = String::new();
    if let Ok(mut file) = std::fs::File::open(path) {
        let length = file.metadata().map(|m| m.len()).unwrap_or(0);
        let start = length.saturating_sub(AUDIT_TAIL_BYTES);
        let mut bytes = Vec::new();
        if file.seek(SeekFrom::Start(start)).is_ok() && file.read_to_end(&mut bytes).is_ok() {
            text = String::from_utf8_lossy(&bytes).into_owned();
            if start > 0 {
                // The first line is cut: drop it.
                text = text.split_once('\n').map(|(_, rest)| rest.to_owned()).unwrap_or_default();
            }
        }
    }
    let needle = needle.to_lowercase();
    let mut records: Vec<Value> = text
        .lines()
        .rev()
        .filter(|line| needle.is_empty() || line.to_lowercase().contains(&needle))
        .filter_map(|line| serde_json::from_str(line).ok())
        .take(AUDIT_RECORDS)
        .collect();
    records.reverse();
    AuditView { verdict, records }
}

/// `GET /console/audit?q=`: the chain verified, and the last records (matching `q`).
pub(super) async fn audit(
    State(console): State<Console>,
    headers: HeaderMap,
    file: Option<Extension<AuditFile>>,
    Query(search): Query<Search>,
) -> Response {
    let session = match console.gateway_admin(&headers) {
        Access::Allowed(session) => session,
        Access::Refused(response) => return response,
    };
    let Some(path) = file.and_then(|Extension(AuditFile(path))| path) else {
        let body = html! { p { "No audit log: " code { "[audit] file" } " is not set." } };
        return layout("Audit", Some(&session), body).into_response();
    };
    let needle = search.q.trim().to_owned();
    let view = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || read_audit(&path, &needle))
            .await
            .unwrap_or(AuditView { verdict: Err("reading failed".to_owned()), records: vec![] })
    };
    let body = html! {
        p { "File: " code { (path.display()) } }
        @match &view.verdict {
            Ok((records, head)) => p class="verified" role="status" id="verdict" {
                "Chain verified: " (records) " records, head " code { (head) }
            },
            Err(error) => p class="error" role="alert" id="verdict" {
                "Chain broken: " (error)
            },
        }
        form method="get" action="/console/audit" role="search" {
            label for="q" { "Search records" }
            " "
            input id="q" name="q" type="search" value=(search.q);
            " "
            button type="submit" { "Search" }
        }
        table {
            caption { "The last " (view.records.len()) " records" @if !search.q.is_empty() { " matching" } }
            thead { tr {
                th scope="col" { "Seq" } th scope="col" { "Time" }
                th scope="col" { "Kind" } th scope="col" { "Record" }
            } }
            tbody {
                @for record in &view.records {
                    tr {
                        td class="number" { (record.get("seq").map(|v| v.to_string()).unwrap_or_default()) }
                        td { (record.get("time").and_then(Value::as_str).unwrap_or_default()) }
                        th scope="row" { (record.get("kind").and_then(Value::as_str).unwrap_or_default()) }
                        td { code { (record.to_string()) } }
                    }
                }
            }
        }
    };
    layout("Audit", Some(&session), body).into_response()
}
