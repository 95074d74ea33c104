//! What a request is answered with, and that answer written as one JSON-RPC message: the
//! same bytes whichever front sends them.

use toolgate_core::mcp;
use toolgate_upstream::RawToolResult;

/// The answer to request `id` as one JSON-RPC message, written (a result written already is
/// put in as it is).
pub fn written_message(id: mcp::RequestId, answered: Result<Answer, mcp::ErrorData>) -> Vec<u8> {
    let written = match answered {
        Ok(Answer::Result(result)) => {
            serde_json::to_vec(&mcp::ServerJsonRpcMessage::response(result, id))
        }
        Ok(Answer::Written(result)) => response(&id, &result),
        Ok(Answer::Raw(raw)) => response(&id, raw.json().as_bytes()),
        Err(error) => serde_json::to_vec(&mcp::ServerJsonRpcMessage::error(error, Some(id))),
    };
    written.unwrap_or_else(|error| {
        // Results are plain data that came as JSON; this does not happen.
        tracing::warn!(%error, "an answer could not be written");
        br#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"the answer could not be written"}}"#
            .to_vec()
    })
}

/// `{"jsonrpc":"2.0","id":<id>,"result":<result>}`, as serde writes a response, around a
/// result already written.
fn response(id: &mcp::RequestId, result: &[u8]) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(id).map(|id| {
        let mut out = Vec::with_capacity(result.len() + id.len() + 40);
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        out.extend_from_slice(&id);
        out.extend_from_slice(br#","result":"#);
        out.extend_from_slice(result);
        out.push(b'}');
        out
    })
}

/// What a request is answered with.
#[derive(Debug)]
// The result is the common case: boxing it would cost an allocation per request to save
// moving a few hundred bytes twice.
#[allow(clippy::large_enum_variant)]
pub enum Answer {
    /// A result.
    Result(mcp::ServerResult),
    /// A result already written as JSON (a `tools/list` result, from what is kept of each
    /// tool).
    Written(Vec<u8>),
    /// A tool's result as the upstream wrote it, shaped for the request's era.
    Raw(RawToolResult),
}
