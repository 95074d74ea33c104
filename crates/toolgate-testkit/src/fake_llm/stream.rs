//! Server-sent events as the providers write them, and the body that sends them: every event
//! in a write of its own (the body yields to the connection between events, so hyper flushes
//! each), and with [`Quirk::SplitUtf8`] an event holding a multi-byte character in two writes
//! cut inside that character.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::Stream;
use serde_json::Value;

use super::{Quirk, Reply};

/// The events of one streamed answer.
#[derive(Debug, Default)]
pub(super) struct Events {
    events: Vec<String>,
    /// `data:JSON` without the space.
    tight: bool,
    /// Send each event containing a multi-byte character in two writes.
    split_utf8: bool,
}

impl Events {
    /// Events written as `reply`'s quirks say.
    pub(super) fn for_reply(reply: &Reply) -> Events {
        Events {
            events: Vec::new(),
            tight: reply.has(Quirk::DataWithoutSpace),
            split_utf8: reply.has(Quirk::SplitUtf8),
        }
    }

    /// `data: <json>` (OpenAI Chat Completions names no events).
    pub(super) fn data(&mut self, data: &Value) {
        let space = if self.tight { "" } else { " " };
        self.events.push(format!("data:{space}{data}\n\n"));
    }

    /// `data: <text>` as is (`[DONE]`).
    pub(super) fn data_text(&mut self, text: &str) {
        let space = if self.tight { "" } else { " " };
        self.events.push(format!("data:{space}{text}\n\n"));
    }

    /// `event: <name>` then `data: <json>` (Responses, Anthropic).
    pub(super) fn named(&mut self, name: &str, data: &Value) {
        let space = if self.tight { "" } else { " " };
        self.events.push(format!("event:{space}{name}\ndata:{space}{data}\n\n"));
    }

    /// The events as written, for tests.
    #[cfg(test)]
    pub(super) fn text(&self) -> String {
        self.events.concat()
    }

    /// A `200` `text/event-stream` response sending the events.
    pub(super) fn into_response(self) -> Response {
        let pieces = pieces(self.events, self.split_utf8);
        let mut response = (StatusCode::OK, Body::from_stream(Paced::new(pieces))).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream; charset=utf-8"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        response
    }
}

/// `body` sent as `content_type`, in two writes cut inside its first multi-byte character when
/// `split_utf8` (else in one).
pub(super) fn body_response(
    status: StatusCode,
    content_type: &'static str,
    body: String,
    split_utf8: bool,
) -> Response {
    let pieces = pieces(vec![body], split_utf8);
    let mut response = (status, Body::from_stream(Paced::new(pieces))).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// The writes of `events`: one each, or two for those cut inside a character.
fn pieces(events: Vec<String>, split_utf8: bool) -> Vec<Bytes> {
    let mut out = Vec::with_capacity(events.len());
    for event in events {
        let bytes = Bytes::from(event);
        match split_utf8.then(|| mid_char(&bytes)).flatten() {
            Some(at) => {
                out.push(bytes.slice(..at));
                out.push(bytes.slice(at..));
            }
            None => out.push(bytes),
        }
    }
    out
}

/// A byte offset inside the first multi-byte UTF-8 character of `bytes` (just after its
/// lead byte).
fn mid_char(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b >= 0xC0).map(|lead| lead + 1)
}

/// Yields its pieces one by one, returning `Pending` once before each but the first, so that
/// the connection writes out (flushes) what it holds between pieces.
struct Paced {
    pieces: VecDeque<Bytes>,
    first: bool,
    yielded: bool,
}

impl Paced {
    fn new(pieces: Vec<Bytes>) -> Paced {
        Paced { pieces: pieces.into(), first: true, yielded: false }
    }
}

impl Stream for Paced {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.pieces.is_empty() {
            return Poll::Ready(None);
        }
        if !this.first && !this.yielded {
            this.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        this.first = false;
        this.yielded = false;
        Poll::Ready(this.pieces.pop_front().map(Ok))
    }
}

/// Pieces of `text` of about `size` characters, cut at character boundaries; at least two
/// when it has two characters or more (so that a client must join them), none when empty.
pub(super) fn split(text: &str, size: usize) -> Vec<&str> {
    let chars = text.chars().count();
    let size = size.clamp(1, chars.div_ceil(2).max(1));
    let mut out = Vec::new();
    let mut start = 0;
    for (n, (at, _)) in text.char_indices().enumerate() {
        if n > 0 && n % size == 0 {
            out.push(&text[start..at]);
            start = at;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use futures::StreamExt as _;

    use super::*;

    #[test]
    fn split_cuts_at_characters_into_two_pieces_or_more() {
        assert_eq!(split("", 4), Vec::<&str>::new());
        assert_eq!(split("a", 4), vec!["a"]);
        assert_eq!(split("ab", 4), vec!["a", "b"]);
        assert_eq!(split("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(split("héllo wörld", 3), vec!["hél", "lo ", "wör", "ld"]);
        assert_eq!(split("日本語", 8), vec!["日本", "語"]);
        let text = "{\"q\":\"ça va 🙂\"}";
        assert_eq!(split(text, 3).concat(), text);
    }

    #[test]
    fn events_are_written_with_or_without_the_space() {
        let mut events = Events::default();
        events.data(&serde_json::json!({"a": 1}));
        events.named("ping", &serde_json::json!({"type": "ping"}));
        events.data_text("[DONE]");
        assert_eq!(
            events.text(),
            "data: {\"a\":1}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\ndata: [DONE]\n\n"
        );
        let mut tight = Events { tight: true, ..Events::default() };
        tight.named("ping", &serde_json::json!({}));
        tight.data_text("[DONE]");
        assert_eq!(tight.text(), "event:ping\ndata:{}\n\ndata:[DONE]\n\n");
    }

    #[tokio::test]
    async fn split_utf8_cuts_an_event_inside_a_character_and_pauses_between_writes() {
        let events = vec!["data: plain\n\n".to_owned(), "data: é🙂\n\n".to_owned()];
        let cut = pieces(events.clone(), true);
        assert_eq!(cut.len(), 3, "{cut:?}");
        assert_eq!(&cut[1][..], b"data: \xC3");
        assert!(std::str::from_utf8(&cut[1]).is_err(), "cut inside é");
        assert!(std::str::from_utf8(&cut[2]).is_err(), "starts inside é");
        assert_eq!(pieces(events.clone(), false).len(), 2);

        // Between pieces the stream is pending once (the connection flushes then).
        let mut paced = Paced::new(cut);
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut seen = Vec::new();
        let mut pending = 0;
        loop {
            match Pin::new(&mut paced).poll_next(&mut cx) {
                Poll::Ready(Some(Ok(bytes))) => seen.push(bytes),
                Poll::Ready(None) => break,
                Poll::Pending => pending += 1,
            }
        }
        assert_eq!(pending, 2);
        assert_eq!(seen.concat(), events.concat().into_bytes());
        assert!(Paced::new(vec![]).next().await.is_none());
    }
}
