//! Which request a streamable HTTP server's log message was about: the response stream of
//! each request we POST carries what the server sends about that request, so the HTTP client
//! marks every log message it reads there with the request's id, and the handler reads the
//! mark to send the message to that request's caller only (its downstream session), not to
//! every session.
//!
//! The mark goes in the message's `_meta` under a key with a random part, chosen once per
//! upstream: a server cannot guess it, so it cannot forge a mark to send its logs to another
//! client's call. A log the client does not recognise as one (its method escaped, say) is
//! left unmarked, which only makes it a log that belongs to no call, the safe side. Messages
//! on the session's standalone GET stream belong to no request and are never marked.

#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577) but still spoken

use serde_json::Value;
use toolgate_core::mcp;

/// The method of a log message.
const LOG_METHOD: &str = "notifications/message";

/// The `_meta` key of one upstream's marks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StreamMark(String);

impl StreamMark {
    /// A key no server can guess.
    pub(crate) fn new() -> StreamMark {
        StreamMark(format!("io.toolgate/stream-of-{}", uuid::Uuid::new_v4().simple()))
    }

    /// `data`, an SSE event's data read on the response stream of `request`, with the mark
    /// added when it is a log message; unchanged otherwise.
    pub(crate) fn mark(&self, data: &str, request: &mcp::RequestId) -> Option<String> {
        if !data.contains(LOG_METHOD) {
            return None;
        }
        let mut message: Value = serde_json::from_str(data).ok()?;
        if message.get("method").and_then(Value::as_str) != Some(LOG_METHOD) {
            return None;
        }
        let params = message.get_mut("params")?.as_object_mut()?;
        let meta = params.entry("_meta").or_insert_with(|| Value::Object(Default::default()));
        let meta = meta.as_object_mut()?;
        meta.insert(self.0.clone(), serde_json::to_value(request).ok()?);
        Some(message.to_string())
    }

    /// The request a log message was marked with, taking the mark out of its `_meta` (which
    /// rmcp keeps in the message's extensions): it is toolgate's own, never passed on.
    pub(crate) fn take(
        &self,
        meta: Option<&mut mcp::NotificationMetaObject>,
    ) -> Option<mcp::RequestId> {
        let marked = meta?.remove(&self.0)?;
        serde_json::from_value(marked).ok()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The `_meta` of the log message `data`, as rmcp reads it.
    fn meta(data: &str) -> mcp::NotificationMetaObject {
        let message: mcp::ServerJsonRpcMessage = serde_json::from_str(data).expect("a message");
        let mcp::JsonRpcMessage::Notification(notification) = message else { panic!("{data}") };
        let mcp::ServerNotification::LoggingMessageNotification(log) = notification.notification
        else {
            panic!("not a log message: {data}")
        };
        log.extensions.get::<mcp::NotificationMetaObject>().cloned().unwrap_or_default()
    }

    #[test]
    fn a_log_on_a_request_stream_names_the_request_and_the_mark_is_taken_out() {
        let mark = StreamMark::new();
        let data = json!({
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": { "level": "info", "data": "working", "_meta": { "kept": 1 } }
        })
        .to_string();
        let marked = mark.mark(&data, &mcp::RequestId::Number(7)).expect("a log is marked");
        let mut meta = meta(&marked);
        assert_eq!(mark.take(Some(&mut meta)), Some(mcp::RequestId::Number(7)));
        assert_eq!(serde_json::to_value(&meta).expect("JSON"), json!({ "kept": 1 }));
        assert_eq!(mark.take(Some(&mut meta)), None, "taken once");
        assert_eq!(mark.take(None), None);
    }

    #[test]
    fn only_log_messages_are_marked() {
        let mark = StreamMark::new();
        let id = mcp::RequestId::String("a".into());
        let result = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"notifications/message"}]}}"#;
        assert_eq!(mark.mark(result, &id), None, "a result that mentions the method");
        let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#;
        assert_eq!(mark.mark(progress, &id), None);
        assert_eq!(mark.mark("not json notifications/message", &id), None);
    }

    #[test]
    fn a_mark_made_up_by_a_server_is_not_one() {
        let ours = StreamMark::new();
        let guessed = StreamMark::new();
        let data = json!({
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": { "level": "info", "data": "x" }
        })
        .to_string();
        let forged = guessed.mark(&data, &mcp::RequestId::Number(1)).expect("marked");
        assert_eq!(ours.take(Some(&mut meta(&forged))), None);
        let near = forged.replace("io.toolgate/stream-of", "io.toolgate/stream-of-");
        assert_eq!(ours.take(Some(&mut meta(&near))), None);
        assert_ne!(ours, guessed, "each upstream has its own key");
    }
}
