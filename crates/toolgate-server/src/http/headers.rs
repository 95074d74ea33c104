//! The MCP headers of a request, checked against its body: `MCP-Protocol-Version` (a version
//! toolgate speaks; for a request that names its version in `_meta`, the same one), and from
//! 2026-07-28 on the SEP-2243 headers that let a proxy route without reading the body:
//! `Mcp-Method`, `Mcp-Name` (the tool, prompt or resource) and `Mcp-Param-<Name>` (tool
//! arguments whose schema property carries `x-mcp-header`). A header that contradicts the body
//! is refused (`-32020`, HTTP 400): something in between may have routed on it.

#![allow(deprecated)] // the session era's requests are legacy in 2026-07-28 but still spoken

use base64::Engine as _;
use http::HeaderMap;
use rmcp::model::GetMeta as _;
use serde_json::Value;
use toolgate_core::mcp;

/// `MCP-Protocol-Version`.
pub(crate) const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method` (SEP-2243).
const METHOD: &str = "mcp-method";
/// `Mcp-Name` (SEP-2243).
const NAME: &str = "mcp-name";
/// The prefix of `Mcp-Param-<Name>` (SEP-2243).
const PARAM_PREFIX: &str = "mcp-param-";

/// The version the request's `MCP-Protocol-Version` names, if any; `Err` when it is not text.
pub(crate) fn protocol_version(headers: &HeaderMap) -> Result<Option<&str>, &'static str> {
    match headers.get(PROTOCOL_VERSION) {
        None => Ok(None),
        Some(value) => {
            value.to_str().map(Some).map_err(|_| "the MCP-Protocol-Version header is not text")
        }
    }
}

/// Whether toolgate speaks `version`.
pub(crate) fn is_known(version: &str) -> bool {
    toolgate_gateway::protocol::supported_versions().iter().any(|known| known.as_str() == version)
}

/// A request that names its version in `_meta` must name the same one in the header; a
/// request whose header names 2026-07-28 or later (or `server/discover`) must carry that era's
/// `_meta`.
pub(crate) fn check_meta_version(
    header: Option<&str>,
    request: &mcp::ClientRequest,
) -> Result<(), mcp::ErrorData> {
    if matches!(request, mcp::ClientRequest::InitializeRequest(_)) {
        return Ok(());
    }
    let meta = request.get_meta();
    match (meta.protocol_version(), header) {
        (None, header) => {
            let discover = matches!(request, mcp::ClientRequest::DiscoverRequest(_));
            let modern_header =
                header.is_some_and(|v| v >= mcp::ProtocolVersion::V_2026_07_28.as_str());
            if discover || modern_header {
                let missing = meta.missing_required_keys(&mcp::ProtocolVersion::V_2026_07_28);
                return Err(toolgate_gateway::protocol::malformed_meta(&missing));
            }
            Ok(())
        }
        (Some(_), None) => Err(mcp::ErrorData::header_mismatch(
            "the request names a protocol version in _meta, so it must send the \
             MCP-Protocol-Version header too",
            None,
        )),
        (Some(named), Some(header)) if named.as_str() != header => {
            Err(mcp::ErrorData::header_mismatch(
                format!(
                    "the MCP-Protocol-Version header ({header}) does not match the version in _meta \
                 ({named})"
                ),
                None,
            ))
        }
        (Some(_), Some(_)) => Ok(()),
    }
}

/// The SEP-2243 headers, when the request's header names 2026-07-28 or later. `tool_schema`
/// finds the input schema of a tool by its exposed name (for `Mcp-Param-*`).
pub(crate) fn check_standard_headers(
    headers: &HeaderMap,
    header_version: Option<&str>,
    request: &mcp::ClientRequest,
    tool_schema: impl FnOnce(&str) -> Option<std::sync::Arc<mcp::JsonObject>>,
) -> Result<(), mcp::ErrorData> {
    if header_version.is_none_or(|v| v < mcp::ProtocolVersion::V_2026_07_28.as_str()) {
        return Ok(());
    }
    let mismatch = |why: String| mcp::ErrorData::header_mismatch(why, None);
    let method = request.method();
    if matches!(request, mcp::ClientRequest::InitializeRequest(_)) {
        // The handshake may leave it out, but one it sends must say `initialize`.
        return match single(headers, METHOD).map_err(mismatch)? {
            None => Ok(()),
            Some("initialize") => Ok(()),
            Some(other) => Err(mismatch(format!(
                "Mcp-Method header `{other}` does not match body method `initialize`"
            ))),
        };
    }
    match single(headers, METHOD).map_err(mismatch)? {
        None => return Err(mismatch("missing required Mcp-Method header".to_owned())),
        Some(value) if value != method => {
            return Err(mismatch(format!(
                "Mcp-Method header `{value}` does not match body method `{method}`"
            )));
        }
        Some(_) => {}
    }
    if let Some(expected) = routed_name(request) {
        let raw = single(headers, NAME)
            .map_err(mismatch)?
            .ok_or_else(|| mismatch(format!("missing required Mcp-Name header for `{method}`")))?;
        let named = decode(raw)
            .ok_or_else(|| mismatch("Mcp-Name header is not valid Base64".to_owned()))?;
        if named != expected {
            return Err(mismatch(format!(
                "Mcp-Name header `{named}` does not match body value `{expected}`"
            )));
        }
    }
    if let mcp::ClientRequest::CallToolRequest(call) = request
        && let Some(schema) = tool_schema(&call.params.name)
    {
        check_param_headers(headers, &schema, call.params.arguments.as_ref()).map_err(mismatch)?;
    }
    Ok(())
}

/// What `Mcp-Name` must say for `request`: the tool's or prompt's name, the resource's URI,
/// the task's id.
fn routed_name(request: &mcp::ClientRequest) -> Option<String> {
    match request {
        mcp::ClientRequest::CallToolRequest(call) => Some(call.params.name.to_string()),
        mcp::ClientRequest::GetPromptRequest(get) => Some(get.params.name.clone()),
        mcp::ClientRequest::ReadResourceRequest(read) => Some(read.params.uri.clone()),
        mcp::ClientRequest::SubscribeRequest(subscribe) => Some(subscribe.params.uri.clone()),
        mcp::ClientRequest::UnsubscribeRequest(unsubscribe) => Some(unsubscribe.params.uri.clone()),
        mcp::ClientRequest::GetTaskRequest(_)
        | mcp::ClientRequest::UpdateTaskRequest(_)
        | mcp::ClientRequest::CancelTaskRequest(_) => serde_json::to_value(request)
            .ok()?
            .pointer("/params/taskId")
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    }
}

/// Each argument whose schema property is annotated `x-mcp-header: Name` must travel in
/// `Mcp-Param-Name` too, with the same value; and no such header without the argument.
fn check_param_headers(
    headers: &HeaderMap,
    schema: &mcp::JsonObject,
    arguments: Option<&mcp::JsonObject>,
) -> Result<(), String> {
    let mut annotated = Vec::new();
    annotations(schema.get("properties"), &mut Vec::new(), &mut annotated);
    for (path, name) in annotated {
        let property = path.join(".");
        let header = format!("{PARAM_PREFIX}{name}");
        let sent = single(headers, &header)?;
        let value = arguments
            .and_then(|arguments| {
                let (first, rest) = path.split_first()?;
                rest.iter().try_fold(arguments.get(*first)?, |value, key| value.get(key))
            })
            .filter(|value| !value.is_null())
            .and_then(primitive);
        match (sent, value) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(format!(
                    "unexpected Mcp-Param-{name} header for absent or null `{property}`"
                ));
            }
            (None, Some(_)) => {
                return Err(format!("missing Mcp-Param-{name} header for `{property}`"));
            }
            (Some(raw), Some(expected)) => {
                let sent = decode(raw)
                    .ok_or_else(|| format!("Mcp-Param-{name} header is not valid Base64"))?;
                if sent != expected {
                    return Err(format!(
                        "Mcp-Param-{name} header `{sent}` does not match body value `{expected}`"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The `x-mcp-header` annotations reached from the root through `properties` alone, with the
/// property path of each.
fn annotations<'a>(
    properties: Option<&'a Value>,
    path: &mut Vec<&'a str>,
    out: &mut Vec<(Vec<&'a str>, &'a str)>,
) {
    let Some(Value::Object(properties)) = properties else { return };
    for (name, schema) in properties {
        path.push(name);
        if let Some(Value::String(header)) = schema.get("x-mcp-header")
            && !header.is_empty()
        {
            out.push((path.clone(), header));
        }
        annotations(schema.get("properties"), path, out);
        path.pop();
    }
}

/// A JSON primitive as a header carries it.
fn primitive(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// A header value, unwrapped from `=?base64?...?=` when the client had to wrap it.
fn decode(raw: &str) -> Option<String> {
    match raw.strip_prefix("=?base64?").and_then(|inner| inner.strip_suffix("?=")) {
        Some(inner) => {
            let bytes = base64::engine::general_purpose::STANDARD.decode(inner).ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(raw.to_owned()),
    }
}

/// The one value of header `name`: these headers are singletons, and a duplicate could let
/// something in between route on a value this request does not carry.
fn single<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, String> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(format!("duplicate {name} header"));
    }
    value.to_str().map(Some).map_err(|_| format!("{name} header contains invalid characters"))
}

#[cfg(test)]
mod tests;
