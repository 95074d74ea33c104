//! The answer to a request toolgate does not serve as it came: a method it serves with
//! parameters of the wrong shape (`-32602`, which rmcp's types parse as a custom request), a
//! method of another protocol era, or a method nobody serves (`-32601`).

#![allow(deprecated)] // legacy-era request types are still served

use serde_json::{Value, json};
use toolgate_core::mcp;

/// The answer to a request rmcp's types did not recognise: `-32602` when it is a method the
/// gateway serves whose parameters did not fit (rmcp parses those as custom requests), else
/// `-32601`.
///
/// `protocol` is the version the request's `_meta` names (requests of 2026-07-28 name theirs).
pub(crate) fn unrecognised_request(
    method: &str,
    params: Option<&Value>,
    protocol: Option<&str>,
) -> mcp::ErrorData {
    if REMOVED_IN_2026.contains(&method) && protocol.is_some_and(|v| v >= "2026-07-28") {
        // Not a request of this era at all (rmcp answers -32601 over HTTP with 404).
        return mcp::ErrorData::new(
            mcp::ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method} (removed in protocol 2026-07-28)"),
            Some(json!({ "method": method })),
        );
    }
    match params_problem(method, params) {
        Some(problem) => mcp::ErrorData::invalid_params(
            format!("Invalid params for `{method}`: {problem}"),
            None,
        ),
        None => mcp::ErrorData::new(
            mcp::ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
            Some(json!({ "method": method })),
        ),
    }
}

/// Methods of the handshake era that protocol 2026-07-28 removed: on a request of that era
/// they are unknown methods, not methods with bad parameters.
const REMOVED_IN_2026: [&str; 4] =
    ["initialize", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"];

/// Why `params` do not fit `method`, for the methods the gateway serves; `None` for others.
pub fn params_problem(method: &str, params: Option<&Value>) -> Option<String> {
    let request = json!({ "method": method, "params": params.cloned().unwrap_or(json!({})) });
    macro_rules! check {
        ($($method:literal => $request:ty),* $(,)?) => {
            match method {
                $($method => Some(
                    serde_json::from_value::<$request>(request)
                        .err()
                        .map_or_else(|| "parameters of the wrong shape".to_owned(), |e| e.to_string()),
                ),)*
                _ => None,
            }
        };
    }
    check! {
        "initialize" => mcp::InitializeRequest,
        "server/discover" => mcp::DiscoverRequest,
        "ping" => mcp::PingRequest,
        "completion/complete" => mcp::CompleteRequest,
        "logging/setLevel" => mcp::SetLevelRequest,
        "prompts/get" => mcp::GetPromptRequest,
        "prompts/list" => mcp::ListPromptsRequest,
        "resources/list" => mcp::ListResourcesRequest,
        "resources/templates/list" => mcp::ListResourceTemplatesRequest,
        "resources/read" => mcp::ReadResourceRequest,
        "resources/subscribe" => mcp::SubscribeRequest,
        "resources/unsubscribe" => mcp::UnsubscribeRequest,
        "subscriptions/listen" => mcp::SubscriptionsListenRequest,
        "tools/call" => mcp::CallToolRequest,
        "tools/list" => mcp::ListToolsRequest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_methods_with_bad_params_are_invalid_params_and_others_not_found() {
        let error = unrecognised_request("tools/call", Some(&json!({"name": 5})), None);
        assert_eq!(error.code, mcp::ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("invalid type"), "{}", error.message);
        let error = unrecognised_request("resources/read", None, None);
        assert_eq!(error.code, mcp::ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("uri"), "{}", error.message);
        let error = unrecognised_request("nope/nope", Some(&json!({})), None);
        assert_eq!(error.code, mcp::ErrorCode::METHOD_NOT_FOUND);
        assert_eq!(error.message, "Method not found: nope/nope");
    }

    #[test]
    fn a_method_2026_07_28_removed_is_unknown_on_a_request_of_that_era() {
        for method in
            ["initialize", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"]
        {
            let error = unrecognised_request(method, Some(&json!({})), Some("2026-07-28"));
            assert_eq!(error.code, mcp::ErrorCode::METHOD_NOT_FOUND, "{method}: {error:?}");
            assert!(error.message.contains("removed in protocol 2026-07-28"), "{error:?}");
        }
        // Of the era before, the same shape of parameters is a request that does not fit.
        let error =
            unrecognised_request("resources/subscribe", Some(&json!({})), Some("2025-11-25"));
        assert_eq!(error.code, mcp::ErrorCode::INVALID_PARAMS, "{error:?}");
        let error = unrecognised_request("resources/subscribe", None, None);
        assert_eq!(error.code, mcp::ErrorCode::INVALID_PARAMS, "{error:?}");
    }
}
