//! Server-sent events: how a message is written as an event, the streams a session keeps so a
//! client can resume one after losing its connection (`Last-Event-ID`), and the response body
//! that carries a stream to the client, with keep-alive comments while nothing happens.
//!
//! Event ids are `<stream>/<index>`: stream 0 is a session's standalone (GET) stream, the
//! others are answers to requests. A session whose id is sealed (replicas) marks them with its
//! copy (`<mark>:<stream>/<index>`, the mark in hex), so that a replica tells another's
//! streams from its own. A stream keeps its last [`KEPT_EVENTS`] events; a client that
//! reconnects with the id of the last event it saw gets those after it, then whatever comes
//! next.
//!
//! What waits for a reader is bounded ([`Queue`]): a client that does not read cannot make
//! the gateway hold ever more of its events. When a reader falls behind, progress is dropped
//! first; when even a message it needs finds no room, its stream ends, and the client, once it
//! reads again, resumes from the last event it saw. A standing stream (GET, listen) also ends
//! after a while ([`EventBody::lasting`]), so that holding one open cannot keep a session (or a
//! listen stream's place) for ever; clients open another.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use futures::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard, WaitForCancellationFutureOwned};
use toolgate_core::mcp;

/// Events a stream keeps for a client that reconnects.
pub(crate) const KEPT_EVENTS: usize = 32;

/// How often a comment is sent on a stream with nothing to say, so that proxies and clients do
/// not take a quiet stream for a dead one.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long a client waits before reconnecting to a stream that ended early (the `retry` field
/// of the priming event).
pub(crate) const RETRY: Duration = Duration::from_secs(3);

/// One message (JSON) as an event, always on one `data:` line.
///
/// A message is not always JSON that toolgate wrote: a raw result is passed on as its
/// upstream wrote it, and JSON may have a carriage return or a line feed as whitespace between
/// tokens. Either ends an SSE line, so left in place it would cut the message in two and the
/// client would read half of it (the Python SDK: "Failed to parse SSE message"). Each one is
/// written as a space instead. The SSE format would also allow the message split over several
/// `data:` lines, but a space says the same in JSON (the two can only be whitespace there:
/// inside a string they must be escaped), keeps the event on the one line that clients which
/// read an event's first `data:` line only expect, and keeps the length, so nothing moves.
pub(crate) fn event(id: Option<&str>, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 32);
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    let start = out.len();
    out.extend_from_slice(data);
    for byte in &mut out[start..] {
        if matches!(*byte, b'\r' | b'\n') {
            *byte = b' ';
        }
    }
    out.extend_from_slice(b"\n\n");
    out.into()
}

/// The first event of a resumable stream: an id to resume from before any message came, and
/// how long to wait before reconnecting.
fn priming(id: &str) -> Bytes {
    format!("id: {id}\nretry: {}\ndata: \n\n", RETRY.as_millis()).into()
}

/// A comment, which clients ignore.
fn keep_alive() -> Bytes {
    Bytes::from_static(b": keep-alive\n\n")
}

/// Where an event id points: a stream and an index in it.
pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, index) = id.trim().split_once('/')?;
    Some((stream.parse().ok()?, index.parse().ok()?))
}

/// Where a marked event id (`<mark>:<stream>/<index>`) points: the copy's mark, a stream and
/// an index in it.
pub(crate) fn parse_marked_event_id(id: &str) -> Option<(u64, u64, u64)> {
    let (mark, rest) = id.trim().split_once(':')?;
    let (stream, index) = parse_event_id(rest)?;
    Some((u64::from_str_radix(mark, 16).ok()?, stream, index))
}

/// The id of event `index` of stream `number`, marked with `mark` when there is one.
fn event_id(mark: Option<u64>, number: u64, index: u64) -> String {
    match mark {
        Some(mark) => format!("{mark:x}:{number}/{index}"),
        None => format!("{number}/{index}"),
    }
}

/// Whether an event may be dropped for a reader that falls behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Urgency {
    /// Progress: the next one says more, and the answer says all.
    Droppable,
    /// Anything else: the answer, a question, a notification.
    Needed,
}

impl Urgency {
    /// How urgent `message` is.
    pub(crate) fn of(message: &mcp::ServerJsonRpcMessage) -> Urgency {
        match message {
            mcp::ServerJsonRpcMessage::Notification(notification)
                if matches!(
                    notification.notification,
                    mcp::ServerNotification::ProgressNotification(_)
                ) =>
            {
                Urgency::Droppable
            }
            _ => Urgency::Needed,
        }
    }
}

/// The events waiting for one reader: at most `bound` of them (beyond the kept events a
/// reader that resumes is given at once). Progress finds room only while at least half of
/// `bound` is free, so that what a client needs still finds some when progress floods in.
#[derive(Debug)]
pub(crate) struct Queue {
    sender: mpsc::Sender<Bytes>,
    bound: usize,
}

/// What became of an event offered to a reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offered {
    /// It waits for the reader.
    Queued,
    /// It was progress, and the reader is behind: dropped.
    Dropped,
    /// It was needed, and there is no room: the reader must be let go (its stream ends).
    Full,
    /// The reader went away.
    Gone,
}

impl Queue {
    /// A queue of `bound` events (at least one), with room for `replayed` more given at once.
    pub(crate) fn new(bound: usize, replayed: usize) -> (Queue, mpsc::Receiver<Bytes>) {
        let bound = bound.max(1);
        let (sender, receiver) = mpsc::channel(bound + replayed);
        (Queue { sender, bound }, receiver)
    }

    /// Offers `event` to the reader.
    pub(crate) fn offer(&self, event: Bytes, urgency: Urgency) -> Offered {
        if urgency == Urgency::Droppable && self.sender.capacity() * 2 <= self.bound {
            return if self.sender.is_closed() { Offered::Gone } else { Offered::Dropped };
        }
        match self.sender.try_send(event) {
            Ok(()) => Offered::Queued,
            Err(mpsc::error::TrySendError::Full(_)) => Offered::Full,
            Err(mpsc::error::TrySendError::Closed(_)) => Offered::Gone,
        }
    }

    /// Whether the reader went away.
    pub(crate) fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }
}

/// One resumable stream of a session: the events it sent, the last [`KEPT_EVENTS`] of which
/// are kept, and the client reading it now, if any.
#[derive(Debug)]
pub(crate) struct EventStream {
    number: u64,
    /// The mark of the session's copy its event ids carry, if any.
    mark: Option<u64>,
    /// How many events may wait for its reader.
    bound: usize,
    state: Mutex<StreamState>,
}

#[derive(Debug, Default)]
struct StreamState {
    /// The index of the next event.
    next: u64,
    kept: VecDeque<(u64, Bytes)>,
    /// The reader of the live stream; `None` when nobody reads it.
    live: Option<Queue>,
    /// No more events will come.
    ended: bool,
}

impl EventStream {
    /// [`EventStream::marked`] without a mark.
    #[cfg(test)]
    pub(crate) fn new(number: u64, bound: usize) -> EventStream {
        EventStream::marked(None, number, bound)
    }

    /// A stream numbered `number` (0: the standalone stream) that starts with a priming event,
    /// its event ids marked with `mark` when there is one; at most `bound` events wait for its
    /// reader.
    pub(crate) fn marked(mark: Option<u64>, number: u64, bound: usize) -> EventStream {
        let stream = EventStream { number, mark, bound, state: Mutex::default() };
        {
            let mut state = stream.state();
            let id = event_id(mark, number, 0);
            state.next = 1;
            state.kept.push_back((0, priming(&id)));
        }
        stream
    }

    fn state(&self) -> std::sync::MutexGuard<'_, StreamState> {
        self.state.lock().expect("event stream lock must not be poisoned")
    }

    /// Sends `message` (JSON) as the next event: to the reader if there is one (a reader too
    /// far behind is let go: its stream ends and it resumes), and into what is kept for one who
    /// reconnects.
    pub(crate) fn push(&self, message: &[u8], urgency: Urgency) {
        let mut state = self.state();
        if state.ended {
            return;
        }
        let index = state.next;
        state.next += 1;
        let event = event(Some(&event_id(self.mark, self.number, index)), message);
        if let Some(live) = &state.live {
            match live.offer(event.clone(), urgency) {
                Offered::Queued | Offered::Dropped => {}
                Offered::Full => {
                    tracing::debug!(
                        stream = self.number,
                        "a client reads too slowly; its stream ends so that it resumes"
                    );
                    state.live = None;
                }
                Offered::Gone => state.live = None,
            }
        }
        if state.kept.len() == KEPT_EVENTS {
            state.kept.pop_front();
        }
        state.kept.push_back((index, event));
    }

    /// No more events: the reader's stream ends after what it has.
    pub(crate) fn end(&self) {
        let mut state = self.state();
        state.ended = true;
        state.live = None;
    }

    /// The stream's number.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Whether someone reads the stream now.
    pub(crate) fn is_read(&self) -> bool {
        self.state().live.as_ref().is_some_and(|live| !live.is_closed())
    }

    /// A reader from the start (the kept events, then what comes), replacing any other.
    pub(crate) fn read(&self) -> mpsc::Receiver<Bytes> {
        self.read_after(None)
    }

    /// A reader that gets the kept events after index `after` (all of them for `None`), then
    /// what comes next; the stream ends at once if it has ended.
    pub(crate) fn read_after(&self, after: Option<u64>) -> mpsc::Receiver<Bytes> {
        let (reader, receiver) = Queue::new(self.bound, KEPT_EVENTS);
        let mut state = self.state();
        for (index, event) in &state.kept {
            if after.is_none_or(|after| *index > after) {
                let _ = reader.sender.try_send(event.clone());
            }
        }
        if !state.ended {
            state.live = Some(reader);
        }
        receiver
    }
}

/// A response body of events: what `events` yields, with a comment every [`KEEP_ALIVE`] while
/// it is quiet; it ends when `events` ends, `closed` fires, or its time is up.
pub(crate) struct EventBody {
    events: Option<mpsc::Receiver<Bytes>>,
    keep_alive: tokio::time::Interval,
    closed: Pin<Box<WaitForCancellationFutureOwned>>,
    /// When a standing stream ends, so that its client opens another.
    lasts: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Fired when the body is dropped (the client went away), for whoever must know.
    _dropped: Option<DropGuard>,
    /// Kept alive as long as the body (a session's "busy" mark).
    _held: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl EventBody {
    /// A body of `events` (`None`: keep-alive comments only) that ends when `closed` fires.
    pub(crate) fn new(
        events: Option<mpsc::Receiver<Bytes>>,
        closed: CancellationToken,
    ) -> EventBody {
        let start = tokio::time::Instant::now() + KEEP_ALIVE;
        let mut keep_alive = tokio::time::interval_at(start, KEEP_ALIVE);
        keep_alive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        EventBody {
            events,
            keep_alive,
            closed: Box::pin(closed.cancelled_owned()),
            lasts: None,
            _dropped: None,
            _held: None,
        }
    }

    /// Ends the body `max_age` from now (a client of a standing stream reconnects, with
    /// `Last-Event-ID` where it can resume).
    pub(crate) fn lasting(mut self, max_age: Duration) -> EventBody {
        self.lasts = Some(Box::pin(tokio::time::sleep(max_age)));
        self
    }

    /// Keeps `value` until the body is dropped.
    pub(crate) fn holding(mut self, value: impl Send + Sync + 'static) -> EventBody {
        self._held = Some(Box::new(value));
        self
    }

    /// Cancels `token` when the body is dropped.
    pub(crate) fn on_drop(mut self, token: CancellationToken) -> EventBody {
        self._dropped = Some(token.drop_guard());
        self
    }
}

impl Stream for EventBody {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(events) = &mut this.events {
            match events.poll_recv(cx) {
                Poll::Ready(Some(event)) => {
                    this.keep_alive.reset();
                    return Poll::Ready(Some(Ok(event)));
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => {}
            }
        }
        if this.closed.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        if let Some(lasts) = &mut this.lasts
            && lasts.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(None);
        }
        match this.keep_alive.poll_tick(cx) {
            Poll::Ready(_) => Poll::Ready(Some(Ok(keep_alive()))),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt as _;

    fn text(bytes: &Bytes) -> &str {
        std::str::from_utf8(bytes).expect("utf-8")
    }

    #[test]
    fn an_event_is_an_id_and_one_data_line() {
        let written = event(Some("3/7"), br#"{"a":1}"#);
        assert_eq!(text(&written), "id: 3/7\ndata: {\"a\":1}\n\n");
        assert_eq!(text(&event(None, b"{}")), "data: {}\n\n");
        assert_eq!(parse_event_id("3/7"), Some((3, 7)));
        assert_eq!(parse_event_id(" 0/12 "), Some((0, 12)));
        for bad in ["", "3", "a/1", "1/-2", "1/2/3"] {
            assert_eq!(parse_event_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn line_breaks_in_a_message_never_break_its_event() {
        // A raw result as an upstream may write it: CR, LF and CRLF between tokens.
        let raw = b"{\r\"a\":\n[1,\r\n2] ,\"b\":\"x\\ny\"}\r";
        let written = event(Some("1/2"), raw);
        let text = text(&written);
        assert_eq!(text, "id: 1/2\ndata: { \"a\": [1,  2] ,\"b\":\"x\\ny\"} \n\n");
        let data = text.strip_prefix("id: 1/2\ndata: ").unwrap().strip_suffix("\n\n").unwrap();
        assert!(!data.contains(['\r', '\n']), "one line: {data:?}");
        let parsed: serde_json::Value = serde_json::from_str(data).expect("still the same JSON");
        assert_eq!(parsed, serde_json::json!({"a": [1, 2], "b": "x\ny"}));
        assert_eq!(event(None, b"\n"), "data:  \n\n");
    }

    #[test]
    fn a_reader_that_reconnects_gets_what_came_after_the_last_event_it_saw() {
        let stream = EventStream::new(2, 16);
        let mut first = stream.read();
        stream.push(b"{\"n\":1}", Urgency::Needed);
        stream.push(b"{\"n\":2}", Urgency::Needed);
        let seen: Vec<Bytes> = std::iter::from_fn(|| first.try_recv().ok()).collect();
        assert_eq!(seen.len(), 3, "priming and two events");
        assert!(text(&seen[0]).starts_with("id: 2/0\nretry: "));
        assert_eq!(text(&seen[2]), "id: 2/2\ndata: {\"n\":2}\n\n");

        drop(first);
        stream.push(b"{\"n\":3}", Urgency::Needed);
        let mut again = stream.read_after(Some(1));
        stream.push(b"{\"n\":4}", Urgency::Needed);
        stream.end();
        let resumed: Vec<Bytes> = std::iter::from_fn(|| again.try_recv().ok()).collect();
        let ids: Vec<&str> = resumed.iter().map(|e| &text(e)[4..7]).collect();
        assert_eq!(ids, ["2/2", "2/3", "2/4"]);
        assert!(again.try_recv().is_err(), "ended");
    }

    #[test]
    fn a_stream_keeps_only_its_last_events() {
        let stream = EventStream::new(0, 16);
        for n in 0..(KEPT_EVENTS + 10) {
            stream.push(format!("{{\"n\":{n}}}").as_bytes(), Urgency::Needed);
        }
        stream.end();
        let mut reader = stream.read_after(None);
        let kept: Vec<Bytes> = std::iter::from_fn(|| reader.try_recv().ok()).collect();
        assert_eq!(kept.len(), KEPT_EVENTS);
        assert!(text(kept.last().unwrap()).contains(&format!("\"n\":{}", KEPT_EVENTS + 9)));
        assert!(!stream.is_read());
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_body_sends_comments_and_ends_when_closed() {
        let (sender, receiver) = mpsc::channel(4);
        let closed = CancellationToken::new();
        let mut body = EventBody::new(Some(receiver), closed.clone());
        sender.try_send(Bytes::from_static(b"data: {}\n\n")).unwrap();
        assert_eq!(body.next().await.unwrap().unwrap(), "data: {}\n\n");
        let comment = body.next().await.unwrap().unwrap();
        assert!(text(&comment).starts_with(':'), "after {KEEP_ALIVE:?} of quiet: a comment");
        closed.cancel();
        assert!(body.next().await.is_none());
    }
}

#[cfg(test)]
mod bounded_tests {
    use super::*;
    use futures::StreamExt as _;

    fn progress() -> mcp::ServerJsonRpcMessage {
        mcp::ServerJsonRpcMessage::notification(mcp::ServerNotification::ProgressNotification(
            mcp::ProgressNotification::new(mcp::ProgressNotificationParam::new(
                mcp::ProgressToken(mcp::NumberOrString::Number(1)),
                1.0,
            )),
        ))
    }

    #[test]
    fn only_progress_may_be_dropped() {
        assert_eq!(Urgency::of(&progress()), Urgency::Droppable);
        let listed = mcp::ServerJsonRpcMessage::notification(
            mcp::ServerNotification::ToolListChangedNotification(Default::default()),
        );
        assert_eq!(Urgency::of(&listed), Urgency::Needed);
    }

    #[test]
    fn a_reader_that_falls_behind_loses_progress_first_then_its_stream() {
        let stream = EventStream::new(1, 8);
        let mut reader = stream.read();
        // The priming event waits too; then a flood of progress nobody reads.
        for _ in 0..10_000 {
            stream.push(b"{\"progress\":1}", Urgency::Droppable);
        }
        let waiting = 8 + KEPT_EVENTS - reader.capacity();
        assert!(waiting <= KEPT_EVENTS + 4, "progress stops at half the bound: {waiting}");
        assert!(stream.is_read(), "dropping progress keeps the reader");
        // Needed messages fill the rest, then the reader is let go.
        let mut n = 0;
        while stream.is_read() {
            assert!(n < 8, "a reader with no room is let go");
            stream.push(format!("{{\"n\":{n}}}").as_bytes(), Urgency::Needed);
            n += 1;
        }
        stream.push(b"{\"after\":1}", Urgency::Needed);
        let mut got = Vec::new();
        while let Ok(event) = reader.try_recv() {
            got.push(event);
        }
        assert!(got.len() <= KEPT_EVENTS + 8, "{}", got.len());
        assert!(reader.try_recv().is_err(), "and its stream ends");
        // It resumes from the last event it saw and gets the rest.
        let index_of = |event: &Bytes| {
            let text = std::str::from_utf8(event).unwrap();
            let id = text.strip_prefix("id: ").unwrap().split('\n').next().unwrap();
            parse_event_id(id).unwrap().1
        };
        let index = index_of(got.last().unwrap());
        let mut resumed = stream.read_after(Some(index));
        let first = resumed.try_recv().expect("the events after it");
        assert_eq!(index_of(&first), index + 1, "nothing lost between the two");
    }

    #[tokio::test(start_paused = true)]
    async fn a_standing_stream_ends_at_its_age() {
        let (_sender, receiver) = mpsc::channel::<Bytes>(4);
        let started = tokio::time::Instant::now();
        let mut body = EventBody::new(Some(receiver), CancellationToken::new())
            .lasting(Duration::from_secs(40));
        let mut comments = 0;
        while let Some(event) = body.next().await {
            assert!(event.unwrap().starts_with(b":"));
            comments += 1;
        }
        assert_eq!(started.elapsed(), Duration::from_secs(40));
        assert_eq!(comments, 2, "keep-alive comments until then");
    }
}
