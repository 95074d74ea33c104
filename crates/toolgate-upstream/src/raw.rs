//! Tool results kept as the JSON the upstream wrote.
//!
//! When nothing between the upstream and the client reads a call's result (no interceptor of
//! the response phase applies to it), parsing it into rmcp's types only to write it again is
//! wasted work, and the bigger the result the more it costs. A caller that can take the JSON as
//! it is asks for it ([`crate::Upstream::call_tool_answer`]); the stdio transport then keeps
//! the `result` of that request's answer as written ([`capture`]), after a check of its shape
//! that reads no more than it must, and hands rmcp an empty result in its place, which rmcp
//! routes to the waiting request as it would any answer.
//!
//! What is checked, so that what is passed on is a `CallToolResult` a client can read:
//! `content` is an array; `isError`, when present, is a boolean or `null`; `resultType`, when
//! present, is `"complete"` (an `input_required` round is parsed, because toolgate answers it).
//! Anything else is parsed the usual way, with the errors that gives.

use std::sync::Mutex;

use serde::Deserialize;
use serde_json::value::RawValue;
use toolgate_core::mcp;

/// A tool's result as the upstream wrote it.
#[derive(Debug, Clone)]
pub struct RawToolResult {
    json: Box<RawValue>,
    is_error: bool,
    result_type: bool,
}

impl RawToolResult {
    /// The result's JSON, as the upstream wrote it (one object).
    pub fn json(&self) -> &str {
        self.json.get()
    }

    /// Whether the upstream said the call failed (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// Whether the result names its `resultType` (only `"complete"` is kept raw): a 2026-07-28
    /// upstream's results do, and a client of an older era may not expect it.
    pub fn has_result_type(&self) -> bool {
        self.result_type
    }

    /// The result parsed.
    pub fn parse(&self) -> Result<mcp::CallToolResult, serde_json::Error> {
        serde_json::from_str(self.json.get())
    }

    /// The result as written, without its top-level `resultType` (for a client of an older
    /// era): its other members are copied byte for byte, not parsed, so a large result costs
    /// a scan rather than a parse and a second serialisation.
    pub fn without_result_type(&self) -> Result<Vec<u8>, serde_json::Error> {
        // rmcp's servers, among others, write it first: then it is cut off without a scan.
        // (A quote inside a string is escaped, so these bytes can only be the member itself.)
        let json = self.json.get();
        if let Some(rest) = json.strip_prefix(r#"{"resultType":"complete""#) {
            let rest = rest.strip_prefix(',').unwrap_or(rest);
            let mut out = Vec::with_capacity(json.len());
            out.push(b'{');
            out.extend_from_slice(rest.as_bytes());
            return Ok(out);
        }
        let Members(members) = serde_json::from_str(json)?;
        let mut out = Vec::with_capacity(self.json.get().len());
        out.push(b'{');
        for (key, value) in members.iter().filter(|(key, _)| key != "resultType") {
            if out.len() > 1 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, key)?;
            out.push(b':');
            out.extend_from_slice(value.get().as_bytes());
        }
        out.push(b'}');
        Ok(out)
    }
}

/// An object's members in their order, each value as written.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, &'de RawValue>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

/// A tool's result: parsed, or as the upstream wrote it.
#[derive(Debug, Clone)]
pub enum ToolAnswer {
    /// Parsed (an upstream whose transport does not keep results raw, an interceptor's own
    /// answer, or a result someone had to read).
    Parsed(mcp::CallToolResult),
    /// As the upstream wrote it.
    Raw(RawToolResult),
}

impl ToolAnswer {
    /// Whether the call failed as a tool call (`isError`).
    pub fn is_error(&self) -> bool {
        match self {
            ToolAnswer::Parsed(result) => result.is_error.unwrap_or(false),
            ToolAnswer::Raw(raw) => raw.is_error,
        }
    }

    /// The result, parsed.
    pub fn into_result(self) -> Result<mcp::CallToolResult, serde_json::Error> {
        match self {
            ToolAnswer::Parsed(result) => Ok(result),
            ToolAnswer::Raw(raw) => raw.parse(),
        }
    }
}

/// Where the transport leaves the raw result of the request that asked for one.
#[derive(Debug, Default)]
pub(crate) struct RawSlot(Mutex<Option<RawToolResult>>);

impl RawSlot {
    pub(crate) fn put(&self, raw: RawToolResult) {
        *self.0.lock().expect("raw slot lock must not be poisoned") = Some(raw);
    }

    pub(crate) fn take(&self) -> Option<RawToolResult> {
        self.0.lock().expect("raw slot lock must not be poisoned").take()
    }
}

/// What of a JSON-RPC message is read to tell an answer with a result.
#[derive(Deserialize)]
struct Envelope<'a> {
    id: Option<mcp::RequestId>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    method: Option<serde::de::IgnoredAny>,
    error: Option<serde::de::IgnoredAny>,
}

/// What of a result is read to know it is a complete `CallToolResult`.
#[derive(Deserialize)]
struct ResultShape<'a> {
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(rename = "isError")]
    is_error: Option<bool>,
    #[serde(rename = "resultType", borrow)]
    result_type: Option<std::borrow::Cow<'a, str>>,
}

/// The id of the answer on `line` and the raw result it carries, when `line` is an answer with
/// a result (not an error, request or notification) and `wanted` says the request with that id
/// asked for its result raw, and the result has the shape of a complete `CallToolResult`.
/// `None` sends the line the usual way.
pub(crate) fn capture<S>(
    line: &[u8],
    wanted: impl FnOnce(&mcp::RequestId) -> Option<S>,
) -> Option<(mcp::RequestId, S, RawToolResult)> {
    let envelope: Envelope<'_> = serde_json::from_slice(line).ok()?;
    let (Some(id), Some(result), None, None) =
        (envelope.id, envelope.result, envelope.method, envelope.error)
    else {
        return None;
    };
    if !result.get().starts_with('{') {
        return None;
    }
    let slot = wanted(&id)?;
    let shape: ResultShape<'_> = serde_json::from_str(result.get()).ok()?;
    if !shape.content.is_some_and(|content| content.get().starts_with('[')) {
        return None;
    }
    if shape.result_type.as_deref().is_some_and(|t| t != "complete") {
        return None;
    }
    let raw = RawToolResult {
        json: result.to_owned(),
        is_error: shape.is_error.unwrap_or(false),
        result_type: shape.result_type.is_some(),
    };
    Some((id, slot, raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(line: &str) -> Option<RawToolResult> {
        capture(line.as_bytes(), |_| Some(())).map(|(_, (), raw)| raw)
    }

    #[test]
    fn a_result_type_is_left_out_and_the_rest_kept_as_written() {
        let line = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\nb \u00e9"}],"resultType":"complete","x\"y":{"z": [1, 2]}}}"#;
        let raw = captured(line).expect("captured");
        let written = String::from_utf8(raw.without_result_type().expect("an object")).unwrap();
        assert_eq!(
            written,
            r#"{"content":[{"type":"text","text":"a\nb \u00e9"}],"x\"y":{"z": [1, 2]}}"#
        );
        let only =
            captured(r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}"#)
                .expect("captured");
        assert_eq!(only.without_result_type().unwrap(), br#"{"content":[]}"#);
        let spaced = captured(
            r#"{"jsonrpc":"2.0","id":1,"result":{ "content":[], "resultType" : "complete" }}"#,
        )
        .expect("captured");
        assert_eq!(spaced.without_result_type().unwrap(), br#"{"content":[]}"#);
    }

    #[test]
    fn a_tool_result_is_kept_as_written() {
        let line = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"h\u00e9"}],"isError":true,"x":{"y":1}}}"#;
        let (id, (), raw) = capture(line.as_bytes(), |_| Some(())).expect("captured");
        assert_eq!(id, mcp::NumberOrString::Number(7));
        assert_eq!(
            raw.json(),
            r#"{"content":[{"type":"text","text":"h\u00e9"}],"isError":true,"x":{"y":1}}"#,
            "byte for byte, escapes and unknown fields too"
        );
        assert!(raw.is_error());
        assert!(!raw.has_result_type());
        let parsed = raw.parse().expect("parses");
        assert_eq!(parsed.is_error, Some(true));
    }

    #[test]
    fn string_ids_and_complete_results_are_kept() {
        let line =
            r#"{"result":{"resultType":"complete","content":[]},"id":"a-1","jsonrpc":"2.0"}"#;
        let (id, (), raw) = capture(line.as_bytes(), |_| Some(())).expect("captured");
        assert_eq!(id, mcp::NumberOrString::String("a-1".into()));
        assert!(raw.has_result_type());
        assert!(!raw.is_error());
    }

    #[test]
    fn only_answers_the_request_wanted_raw_are_kept() {
        let line = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
        assert!(capture(line.as_bytes(), |_| None::<()>).is_none());
        let mut asked = None;
        let _ = capture(line.as_bytes(), |id| {
            asked = Some(id.clone());
            None::<()>
        });
        assert_eq!(asked, Some(mcp::NumberOrString::Number(7)));
    }

    #[test]
    fn anything_else_is_left_to_the_usual_parse() {
        for line in [
            // Not an answer with a result.
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            // A round toolgate answers, and results that are not a CallToolResult.
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":"text"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":"yes"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":[1]}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":[[]]}"#,
            // Not JSON, or an id that is no id.
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]"#,
            r#"{"jsonrpc":"2.0","id":{"a":1},"result":{"content":[]}}"#,
        ] {
            assert!(captured(line).is_none(), "{line}");
        }
    }

    #[test]
    fn is_error_null_is_not_an_error() {
        let raw = captured(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":null}}"#)
            .expect("captured");
        assert!(!raw.is_error());
    }
}
