//! Answering a POSTed request with one JSON body when its SSE stream would carry nothing but
//! the answer.
//!
//! rmcp's streamable HTTP server answers every POSTed request with `text/event-stream`: a
//! priming event, the answer, the end of a chunked body. The specification lets a server pick
//! either that or `application/json` when the client accepts both (and rmcp refuses clients
//! that do not), and a single JSON body is cheaper for both sides: fewer writes, no event
//! parsing, no chunk framing. The benchmark harness measured the difference in the client's
//! CPU per call (see docs/benchmarks.md).
//!
//! [`prefer_json`] waits for the first message of such a stream, for at most [`WINDOW`]. If it
//! is the answer (a JSON-RPC result or error), it becomes the body, as `application/json`. If it
//! is anything else (a progress notification, an elicitation request, ...), if the stream ends
//! or fails first, if it is written in any way other than rmcp writes it, or if nothing came
//! within the window (a slow tool keeps its stream, and with it the keep-alive comments and
//! the priming event a client can resume from), the stream is passed on unchanged, from its
//! first byte. Nothing is lost either way.

use std::ops::Range;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt as _;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use http_body_util::BodyExt as _;

/// How long the first message of an answer's stream is waited for before the stream is passed
/// on as it is.
pub(crate) const WINDOW: Duration = Duration::from_secs(1);

/// Middleware: see the module documentation.
pub(crate) async fn prefer_json(request: Request, next: Next) -> Response {
    let posted = request.method() == Method::POST;
    let response = next.run(request).await;
    if !posted || response.status() != StatusCode::OK || !is_event_stream(response.headers()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    match first_message(body).await {
        Peeked::Answer(json) => {
            parts.headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            parts.headers.remove(CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(json))
        }
        Peeked::Stream { seen, rest } => {
            let replay = futures::stream::iter((!seen.is_empty()).then_some(Ok(seen)));
            Response::from_parts(parts, Body::from_stream(replay.chain(rest.into_data_stream())))
        }
    }
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("text/event-stream"))
}

/// What the start of an answer's stream turned out to be.
enum Peeked {
    /// The stream's first message, a JSON-RPC result or error.
    Answer(Bytes),
    /// Anything else: the bytes read so far and the rest of the stream.
    Stream { seen: Bytes, rest: Body },
}

async fn first_message(mut body: Body) -> Peeked {
    let deadline = tokio::time::Instant::now() + WINDOW;
    let mut seen = Bytes::new();
    loop {
        match scan(&seen) {
            Scan::Answer(range) => return Peeked::Answer(seen.slice(range)),
            Scan::Other => return Peeked::Stream { seen, rest: body },
            Scan::Incomplete => {}
        }
        let data = match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) => data,
                // A trailers frame: not something an event stream has; pass the stream on.
                Err(_) => return Peeked::Stream { seen, rest: body },
            },
            // Ended, failed or slow: whatever follows (if anything) is passed on as it comes.
            Ok(None) | Ok(Some(Err(_))) | Err(_) => return Peeked::Stream { seen, rest: body },
        };
        seen = if seen.is_empty() { data } else { [seen, data].concat().into() };
    }
}

/// What the bytes of a stream read so far hold.
#[derive(Debug, PartialEq, Eq)]
enum Scan {
    /// Events without data (priming, keep-alive comments), then one whose data (at this range)
    /// is a JSON-RPC answer.
    Answer(Range<usize>),
    /// Something else first, or something not written the way rmcp writes events (which
    /// includes any carriage return).
    Other,
    /// Only events without data so far, then perhaps part of an event.
    Incomplete,
}

/// Reads the events of `bytes` up to the first one with data.
fn scan(bytes: &[u8]) -> Scan {
    if memchr::memchr(b'\r', bytes).is_some() {
        return Scan::Other;
    }
    let mut start = 0;
    while let Some(length) = memchr::memmem::find(&bytes[start..], b"\n\n") {
        match event_data(bytes, start..start + length) {
            Err(()) => return Scan::Other,
            Ok(None) => start += length + 2,
            Ok(Some(data)) if is_answer(&bytes[data.clone()]) => return Scan::Answer(data),
            Ok(Some(_)) => return Scan::Other,
        }
    }
    Scan::Incomplete
}

/// The range of the one data line of the event in `bytes[event]` (without the blank line that
/// ends it); `None` for an event with no or empty data; `Err` for anything unusual (several
/// data lines, a named event, a line that is no field).
fn event_data(bytes: &[u8], event: Range<usize>) -> Result<Option<Range<usize>>, ()> {
    let mut data = None;
    let ends = memchr::memchr_iter(b'\n', &bytes[event.clone()]).map(|end| event.start + end);
    let mut line_start = event.start;
    for line_end in ends.chain([event.end]) {
        let range = line_start..line_end;
        let line = &bytes[range.clone()];
        line_start = line_end + 1;
        if line.starts_with(b":") || line.starts_with(b"id:") || line.starts_with(b"retry:") {
            continue;
        }
        if data.is_some() {
            return Err(());
        }
        let value = line.strip_prefix(b"data:").ok_or(())?;
        let skip = line.len() - value.len() + usize::from(value.starts_with(b" "));
        data = Some(range.start + skip..range.end);
    }
    Ok(data.filter(|data| !data.is_empty()))
}

/// Whether `json` is a JSON-RPC result or error as rmcp serializes one: the members in the
/// order `jsonrpc`, `id`, `result` or `error`, no whitespace. A request or a notification has
/// `method` where this looks for `result` or `error`.
fn is_answer(json: &[u8]) -> bool {
    let Some(rest) = json.strip_prefix(br#"{"jsonrpc":"2.0","id":"#) else {
        return false;
    };
    let id_length = match rest.first() {
        Some(b'"') => {
            let mut escaped = false;
            let end = rest[1..].iter().position(|&b| {
                let closes = b == b'"' && !escaped;
                escaped = b == b'\\' && !escaped;
                closes
            });
            match end {
                Some(end) => end + 2,
                None => return false,
            }
        }
        _ => rest.iter().take_while(|b| b.is_ascii_digit() || **b == b'-').count(),
    };
    let after = &rest[id_length..];
    id_length > 0 && (after.starts_with(br#","result":"#) || after.starts_with(br#","error":"#))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#;

    fn answer_of(stream: &str) -> Option<&str> {
        match scan(stream.as_bytes()) {
            Scan::Answer(range) => Some(&stream[range]),
            _ => None,
        }
    }

    #[test]
    fn the_answer_after_a_priming_event_is_found() {
        let stream = format!("data: \nid: 0\nretry: 3000\n\ndata: {ANSWER}\nid: 1\n\n");
        assert_eq!(answer_of(&stream), Some(ANSWER));
        // Without the space after the colon, and after a keep-alive comment.
        let stream = format!(":ping\n\ndata:{ANSWER}\n\n");
        assert_eq!(answer_of(&stream), Some(ANSWER));
    }

    #[test]
    fn errors_and_string_ids_are_answers() {
        for json in [
            r#"{"jsonrpc":"2.0","id":"a\"b","error":{"code":-32602,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","id":-1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"","result":{}}"#,
        ] {
            assert!(is_answer(json.as_bytes()), "{json}");
        }
    }

    #[test]
    fn requests_notifications_and_other_shapes_are_not_answers() {
        for json in [
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{}}"#,
            r#"{"id":1,"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc": "2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"unterminated"#,
            r#"{"jsonrpc":"2.0","id":,"result":{}}"#,
        ] {
            assert!(!is_answer(json.as_bytes()), "{json}");
        }
    }

    #[test]
    fn a_first_message_that_is_not_the_answer_keeps_the_stream() {
        let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;
        let stream = format!("data: \nid: 0\n\ndata: {progress}\n\ndata: {ANSWER}\n\n");
        assert_eq!(scan(stream.as_bytes()), Scan::Other);
    }

    #[test]
    fn unusual_events_keep_the_stream() {
        for stream in [
            format!("data: {ANSWER}\ndata: more\n\n"),
            format!("event: answer\ndata: {ANSWER}\n\n"),
            format!("data: {ANSWER}\r\n\r\n"),
            format!("what: {ANSWER}\n\n"),
        ] {
            assert_eq!(scan(stream.as_bytes()), Scan::Other, "{stream:?}");
        }
    }

    #[test]
    fn a_stream_cut_before_its_first_message_ends_is_incomplete() {
        assert_eq!(scan(b""), Scan::Incomplete);
        assert_eq!(scan(b"data: \nid: 0\n\n"), Scan::Incomplete);
        let cut = format!("data: \n\ndata: {ANSWER}\n");
        assert_eq!(scan(cut.as_bytes()), Scan::Incomplete);
    }

    async fn through_layer(frames: Vec<&'static str>, content_type: &'static str) -> Response {
        let app = axum::Router::new()
            .route(
                "/",
                axum::routing::any(move || async move {
                    let stream = futures::stream::iter(frames)
                        .map(|frame| Ok::<_, std::io::Error>(Bytes::from(frame)));
                    Response::builder()
                        .header(CONTENT_TYPE, content_type)
                        .header("mcp-session-id", "s1")
                        .body(Body::from_stream(stream))
                        .unwrap()
                }),
            )
            .layer(axum::middleware::from_fn(prefer_json));
        let request = |method| Request::builder().method(method).uri("/").body(Body::empty());
        tower::ServiceExt::oneshot(app, request(Method::POST).unwrap()).await.unwrap()
    }

    async fn text(response: Response) -> String {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn an_answer_alone_becomes_a_json_body_with_the_other_headers_kept() {
        let frames = vec!["data: \nid: 0\nretry: 3000\n\n", "data: ", ANSWER, "\nid: 1\n\n"];
        let response = through_layer(frames, "text/event-stream").await;
        assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
        assert_eq!(response.headers()["mcp-session-id"], "s1");
        assert_eq!(text(response).await, ANSWER);
    }

    #[tokio::test]
    async fn a_stream_that_is_not_an_answer_alone_passes_unchanged() {
        let frames = vec![
            "data: \nid: 0\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n",
            "data: ",
            ANSWER,
            "\n\n",
        ];
        let whole: String = frames.concat();
        let response = through_layer(frames, "text/event-stream").await;
        assert_eq!(response.headers()[CONTENT_TYPE], "text/event-stream");
        assert_eq!(text(response).await, whole);
        // A stream that ends before any message.
        let response = through_layer(vec!["data: \nid: 0\n\n"], "text/event-stream").await;
        assert_eq!(text(response).await, "data: \nid: 0\n\n");
    }

    #[tokio::test]
    async fn json_bodies_are_left_alone() {
        let response = through_layer(vec![ANSWER], "application/json").await;
        assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
        assert_eq!(text(response).await, ANSWER);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_silent_for_the_window_is_passed_on_as_it_comes() {
        let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
        let stream = tokio_stream::wrappers::ReceiverStream::new(receiver);
        let body = std::sync::Arc::new(std::sync::Mutex::new(Some(Body::from_stream(stream))));
        let app = axum::Router::new()
            .route(
                "/",
                axum::routing::post(move || {
                    let body = body.lock().unwrap().take().unwrap();
                    async move {
                        Response::builder()
                            .header(CONTENT_TYPE, "text/event-stream")
                            .body(body)
                            .unwrap()
                    }
                }),
            )
            .layer(axum::middleware::from_fn(prefer_json));
        sender.send(Ok(Bytes::from_static(b"data: \nid: 0\n\n"))).await.unwrap();
        let request = Request::builder().method(Method::POST).uri("/").body(Body::empty());
        // Nothing more is sent within the window: the stream is handed on.
        let response = tower::ServiceExt::oneshot(app, request.unwrap()).await.unwrap();
        assert_eq!(response.headers()[CONTENT_TYPE], "text/event-stream");
        sender.send(Ok(Bytes::from(format!("data: {ANSWER}\n\n")))).await.unwrap();
        drop(sender);
        assert_eq!(text(response).await, format!("data: \nid: 0\n\ndata: {ANSWER}\n\n"));
    }
}
