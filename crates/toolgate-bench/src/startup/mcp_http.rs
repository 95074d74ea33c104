//! A minimal MCP client on plain HTTP (streamable HTTP, 2025-11-25 sessions): `initialize`,
//! `notifications/initialized`, then requests carrying the `Mcp-Session-Id` header. Shared
//! with `scale`.
//!
//! It is this small so that a thousand sessions cost the bench a thousand session ids, not a
//! thousand rmcp clients with their tasks, and so that a request's time ends at the last byte
//! of its answer, before the answer is parsed.

use std::time::Duration;

use tokio::time::Instant;

use anyhow::{Context as _, bail};
use futures::StreamExt as _;
use serde_json::{Value, json};

/// The protocol version the sessions speak.
pub(crate) const PROTOCOL_VERSION: &str = "2025-11-25";
const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// An HTTP client for [`Session`]s: one connection pool for all of them.
pub(crate) fn http_client() -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .no_proxy()
        .build()
        .context("cannot build an HTTP client")
}

/// One MCP session with a streamable HTTP server.
#[derive(Debug)]
pub(crate) struct Session {
    http: reqwest::Client,
    url: String,
    id: String,
    next_request: u64,
}

/// An answer and how long it took to arrive (to its last byte).
#[derive(Debug)]
pub(crate) struct Timed<T> {
    pub(crate) value: T,
    pub(crate) elapsed: Duration,
    /// Size of the HTTP response body.
    pub(crate) bytes: usize,
}

impl Session {
    /// `initialize`, then `notifications/initialized`.
    pub(crate) async fn open(http: &reqwest::Client, url: &str) -> anyhow::Result<Session> {
        let initialize = json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": { "name": "toolgate-bench", "version": env!("CARGO_PKG_VERSION") },
            },
        });
        let response = post(http, url, None, &initialize).await.context("initialize")?;
        let id = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
            .context("initialize: the answer has no Mcp-Session-Id header")?
            .to_owned();
        let (answer, _) = read_answer(response, 0).await.context("initialize")?;
        result_of(answer.value).context("initialize")?;
        let session = Session { http: http.clone(), url: url.to_owned(), id, next_request: 1 };
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let response = post(http, url, Some(&session.id), &initialized).await?;
        if response.status() != reqwest::StatusCode::ACCEPTED {
            bail!("notifications/initialized: HTTP {} instead of 202", response.status());
        }
        Ok(session)
    }

    /// The session id the server gave.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Sends a request and returns its result (a JSON-RPC error is an `Err`).
    pub(crate) async fn request(
        &mut self,
        method: &str,
        params: Value,
    ) -> anyhow::Result<Timed<Value>> {
        let id = self.next_request;
        self.next_request += 1;
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let started = Instant::now();
        let response = post(&self.http, &self.url, Some(&self.id), &message)
            .await
            .with_context(|| method.to_owned())?;
        let (answer, last_byte) =
            read_answer(response, id).await.with_context(|| method.to_owned())?;
        let elapsed = last_byte.duration_since(started);
        let value = result_of(answer.value).with_context(|| method.to_owned())?;
        Ok(Timed { value, elapsed, bytes: answer.bytes })
    }

    /// `tools/list`, one page (toolgate does not paginate): the tools and the time taken.
    pub(crate) async fn list_tools(&mut self) -> anyhow::Result<Timed<Vec<Value>>> {
        let answer = self.request("tools/list", json!({})).await?;
        if answer.value.get("nextCursor").is_some_and(|cursor| !cursor.is_null()) {
            bail!("tools/list: the answer is paginated, which this bench does not follow");
        }
        let tools = match answer.value.get("tools") {
            Some(Value::Array(tools)) => tools.clone(),
            _ => bail!("tools/list: the result has no `tools` array"),
        };
        Ok(Timed { value: tools, elapsed: answer.elapsed, bytes: answer.bytes })
    }

    /// `tools/call` without arguments: the text of the first content block.
    pub(crate) async fn call_tool(&mut self, name: &str) -> anyhow::Result<Timed<String>> {
        let answer = self.request("tools/call", json!({ "name": name, "arguments": {} })).await?;
        if answer.value.get("isError") == Some(&Value::Bool(true)) {
            bail!("tools/call {name}: an error result: {}", answer.value);
        }
        let text = answer.value["content"][0]["text"].as_str().unwrap_or_default().to_owned();
        Ok(Timed { value: text, elapsed: answer.elapsed, bytes: answer.bytes })
    }
}

/// POSTs one JSON-RPC message; a status other than 2xx is an error.
async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    message: &Value,
) -> anyhow::Result<reqwest::Response> {
    let mut request = http
        .post(url)
        .header(reqwest::header::ACCEPT, "application/json, text/event-stream")
        .json(message);
    if let Some(session) = session {
        request = request.header(SESSION_HEADER, session).header(VERSION_HEADER, PROTOCOL_VERSION);
    }
    let response = request.send().await.with_context(|| format!("cannot POST to {url}"))?;
    if !response.status().is_success() {
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        bail!("HTTP {status}: {}", body.trim());
    }
    Ok(response)
}

/// Reads the whole body (a JSON message, or an SSE stream the server closes after the answer)
/// and returns the JSON-RPC answer to request `id` and when its last byte arrived.
async fn read_answer(response: reqwest::Response, id: u64) -> anyhow::Result<(Answer, Instant)> {
    let is_sse = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"));
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        body.extend_from_slice(&chunk.context("reading the answer failed")?);
    }
    let last_byte = Instant::now();
    let bytes = body.len();
    let text = String::from_utf8(body).context("the answer is not UTF-8")?;
    let value = if is_sse { answer_in_sse(&text, id)? } else { serde_json::from_str(&text)? };
    Ok((Answer { value, bytes }, last_byte))
}

/// A JSON-RPC answer and the size of the body it came in.
struct Answer {
    value: Value,
    bytes: usize,
}

/// The JSON-RPC answer to `id` among the `data:` events of an SSE body.
fn answer_in_sse(text: &str, id: u64) -> anyhow::Result<Value> {
    let mut data = String::new();
    // A blank line ends an event; so does the end of the stream.
    for line in text.lines().chain(std::iter::once("")) {
        if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        } else if line.is_empty() && !data.is_empty() {
            let message: Value = serde_json::from_str(&data).context("an SSE event is not JSON")?;
            data.clear();
            let answers_us = message.get("id").and_then(Value::as_u64) == Some(id)
                && (message.get("result").is_some() || message.get("error").is_some());
            if answers_us {
                return Ok(message);
            }
        }
    }
    bail!("the stream ended without an answer to request {id}")
}

/// The `result` of an answer, or its `error` as an `Err`.
fn result_of(message: Value) -> anyhow::Result<Value> {
    if let Some(error) = message.get("error") {
        bail!("JSON-RPC error: {error}");
    }
    message.get("result").cloned().context("the answer has neither result nor error")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_answer_in_an_sse_body() {
        let body = "id: 0\nretry: 3000\ndata: \n\n\
                    data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                    id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\n";
        let answer = answer_in_sse(body, 7).expect("found");
        assert_eq!(result_of(answer).expect("a result"), json!({ "ok": true }));
        assert!(answer_in_sse(body, 8).is_err());
    }

    #[test]
    fn errors_are_errors() {
        let error = json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32601 } });
        assert!(result_of(error).is_err());
    }
}
