//! What the gateway tells the event bus: each call's start and end (with its duration, the
//! upstream's part of it as `upstream_ms`, each interceptor's decision and time, sizes,
//! arguments hashed and redacted, and who approved it), refusals, timeouts, cancellations,
//! interceptor failures, the upstreams' state changes (with how long a connection took), and
//! changed lists.
//!
//! Publishing never waits (see `toolgate_audit::EventBus`). When nobody subscribes, nothing
//! is serialized or hashed.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use serde_json::{Value, json};
use toolgate_audit::secrets::{Detector, Selection};
use toolgate_audit::{ArgumentRecord, Event, EventBus, FieldPath, kind};
use toolgate_core::mcp;
use toolgate_intercept::{Approved, CallContext, DecisionKind, InterceptionEvent};
use toolgate_upstream::{ToolAnswer, UpstreamError, UpstreamEvent};

use crate::error::GatewayError;
use crate::session::Changed;

/// The number a call gets in events, so its start and end can be matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CallNumber(pub(crate) u64);

/// How long the upstream took to answer a tool call (the send alone), for `upstream_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UpstreamElapsed(pub(crate) std::time::Duration);

/// Publishes the gateway's events.
#[derive(Debug, Default)]
pub struct Recorder {
    bus: EventBus,
    redact: Vec<FieldPath>,
    /// When set, argument hashes are HMAC-SHA256 under this key.
    hash_key: Option<Vec<u8>>,
    /// What is looked for in recorded arguments, refusal reasons and error messages (and
    /// replaced by `[REDACTED:<kind>]`), and its detectors, compiled when first needed (a run
    /// that records nothing never compiles them).
    detection: Option<(Selection, std::sync::Arc<OnceLock<Detector>>)>,
    calls: AtomicU64,
    /// Upstreams that have connected once (a later connection is a restart).
    seen: Mutex<HashSet<String>>,
    /// `[audit] required`: a call waits (at most this long) until the audit log has its
    /// `tools/call/started` record, and is refused when it cannot.
    write_ahead: Option<std::time::Duration>,
}

/// A call's `tools/call/started` record on its way to the audit log (`[audit] required`).
pub(crate) struct WriteAhead {
    written: toolgate_audit::Written,
    within: std::time::Duration,
}

impl WriteAhead {
    /// Returns once the audit log has the record; the error refuses the call.
    pub(crate) async fn confirmed(self) -> Result<(), GatewayError> {
        self.written.wait(self.within).await.map_err(GatewayError::NotAudited)
    }
}

impl Recorder {
    /// Publishes on `bus`; argument fields at `redact` are masked in events.
    pub fn new(bus: EventBus, redact: Vec<FieldPath>) -> Recorder {
        Recorder {
            bus,
            redact,
            hash_key: None,
            detection: None,
            calls: AtomicU64::new(0),
            seen: Mutex::default(),
            write_ahead: None,
        }
    }

    /// `[audit] required`: each call waits, at most `within`, until the audit log has its
    /// `tools/call/started` record (see [`Recorder::call_started`]).
    pub fn with_write_ahead(mut self, within: std::time::Duration) -> Recorder {
        self.write_ahead = Some(within);
        self
    }

    /// Replaces what the detectors of `selection` find (secrets, personal data) in the
    /// recorded arguments, and in the refusal reasons and error messages of events, by
    /// `[REDACTED:<kind>]`.
    pub fn with_detection(mut self, selection: Selection) -> Recorder {
        if selection.is_empty() {
            self.detection = None;
            return self;
        }
        // Compiled on a thread of its own now (tens of milliseconds, more in a debug build),
        // rather than by the first request that records something.
        let detector = std::sync::Arc::new(OnceLock::new());
        let (early, early_selection) = (detector.clone(), selection.clone());
        std::thread::spawn(move || {
            early.get_or_init(|| Detector::new(&early_selection));
        });
        self.detection = Some((selection, detector));
        self
    }

    /// The detectors, compiled on first use; `None` when nothing is looked for.
    fn detector(&self) -> Option<&Detector> {
        let (selection, detector) = self.detection.as_ref()?;
        Some(detector.get_or_init(|| Detector::new(selection)))
    }

    /// `text` with what the detectors find replaced (unchanged without any).
    fn scrub(&self, text: String) -> String {
        match self.detector() {
            Some(detector) => match detector.redact(&text).text {
                std::borrow::Cow::Borrowed(_) => text,
                std::borrow::Cow::Owned(redacted) => redacted,
            },
            None => text,
        }
    }

    /// Records argument hashes as HMAC-SHA256 under `key`, so that nobody without it can test
    /// guesses of redacted values against them.
    pub fn with_hash_key(mut self, key: Vec<u8>) -> Recorder {
        self.hash_key = Some(key);
        self
    }

    /// The bus events go to.
    pub fn bus(&self) -> &EventBus {
        &self.bus
    }

    /// Whether anyone subscribes: when nobody does, nothing is built or published.
    pub(crate) fn is_listening(&self) -> bool {
        self.bus.subscriber_count() > 0
    }

    /// A call is about to pass the pipeline: numbers it and publishes `tools/call/started`
    /// (when anyone listens; otherwise this costs nothing). With `[audit] required`, what to
    /// await before the call may go on.
    pub(crate) fn call_started(
        &self,
        ctx: &mut CallContext,
        params: &mcp::CallToolRequestParams,
    ) -> Option<WriteAhead> {
        if !self.is_listening() && self.write_ahead.is_none() {
            return None;
        }
        let number = CallNumber(self.calls.fetch_add(1, Ordering::Relaxed) + 1);
        ctx.insert(number);
        let arguments = params.arguments.clone().map(Value::Object).unwrap_or(json!({}));
        let (record, hash_field) = match &self.hash_key {
            Some(key) => {
                (ArgumentRecord::keyed(&arguments, &self.redact, key), "arguments_hmac_sha256")
            }
            None => (ArgumentRecord::new(&arguments, &self.redact), "arguments_sha256"),
        };
        let record = match self.detector() {
            Some(detector) => record.detect(detector),
            None => record,
        };
        let event = call_event(kind::TOOLS_CALL_STARTED, ctx, &params.name)
            .with(hash_field, record.sha256)
            .with("arguments", record.redacted)
            .with("request_bytes", json_len(params));
        let Some(within) = self.write_ahead else {
            self.bus.publish(event);
            return None;
        };
        let (event, written) = event.awaiting_write();
        self.bus.publish(event);
        Some(WriteAhead { written, within })
    }

    /// The call ended: `tools/call/finished`, or `denied` / `timeout` / `cancelled`; and
    /// `interceptor/failed` for each interceptor that failed on the way.
    pub(crate) fn call_ended(
        &self,
        ctx: &CallContext,
        exposed: &str,
        outcome: &Result<ToolAnswer, GatewayError>,
    ) {
        if !self.is_listening() {
            return;
        }
        self.interceptor_failures(ctx, || call_event(kind::INTERCEPTOR_FAILED, ctx, exposed));
        let elapsed = ctx.started.elapsed();
        let base = |kind: &str| {
            let mut event = call_event(kind, ctx, exposed)
                .with("duration_ms", elapsed.as_secs_f64() * 1000.0)
                .with("decisions", decisions(ctx));
            if let Some(UpstreamElapsed(upstream)) = ctx.get::<UpstreamElapsed>() {
                event = event.with("upstream_ms", upstream.as_secs_f64() * 1000.0);
            }
            if let Some(approved) = ctx.get::<Approved>() {
                event = event
                    .with("approved_by", approved.by.clone())
                    .with("approved_digest", approved.digest.clone());
            }
            event
        };
        let event = match outcome {
            Ok(answer) => base(kind::TOOLS_CALL_FINISHED).with("is_error", answer.is_error()).with(
                "response_bytes",
                match answer {
                    ToolAnswer::Parsed(result) => json_len(result),
                    ToolAnswer::Raw(raw) => raw.json().len() as u64,
                },
            ),
            Err(GatewayError::Refused(refusal)) => base(kind::TOOLS_CALL_DENIED)
                .with("interceptor", refusal.interceptor.clone())
                .with("reason", self.scrub(refusal.reason.clone())),
            Err(GatewayError::Upstream(error @ UpstreamError::Timeout { timeout, .. })) => {
                base(kind::TOOLS_CALL_TIMEOUT)
                    .with("timeout_ms", timeout.as_millis() as u64)
                    .with("error", self.scrub(error.to_string()))
            }
            Err(GatewayError::Upstream(UpstreamError::Cancelled { .. })) => {
                base(kind::TOOLS_CALL_CANCELLED)
            }
            Err(error @ GatewayError::UnknownTool(_)) => {
                base(kind::REQUEST_REJECTED).with("error", self.scrub(error.to_string()))
            }
            Err(error) => base(kind::TOOLS_CALL_FINISHED)
                .with("is_error", true)
                .with("error", self.scrub(toolgate_core::ErrorChain(error).to_string())),
        };
        self.bus.publish(event);
    }

    /// `interceptor/failed` for each interceptor that failed on `ctx`'s request, each starting
    /// as `base` makes it.
    fn interceptor_failures(&self, ctx: &CallContext, base: impl Fn() -> Event) {
        for decision in &ctx.decisions {
            if let DecisionKind::Failed { error, let_through } = &decision.kind {
                self.bus.publish(
                    base()
                        .with("interceptor", decision.interceptor.clone())
                        .with("event", decision.event.as_str())
                        .with("phase", decision.phase.as_str())
                        .with("error", self.scrub(error.clone()))
                        .with("let_through", *let_through),
                );
            }
        }
    }

    /// A request other than a tool call ended: `<method>/denied` when an interceptor refused
    /// it, else `<method>/finished` (with `error` when it failed otherwise); and
    /// `interceptor/failed` for each interceptor that failed on the way. Requests an upstream
    /// sent back (sampling, elicitation, roots) are recorded the same way, with the call
    /// they belong to.
    pub(crate) fn request_ended<T>(
        &self,
        ctx: &CallContext,
        event: InterceptionEvent,
        outcome: &Result<T, GatewayError>,
    ) {
        if !self.is_listening() {
            return;
        }
        let method = event.as_str();
        self.interceptor_failures(ctx, || request_event(kind::INTERCEPTOR_FAILED, ctx));
        let ended = match outcome {
            Err(GatewayError::Refused(refusal)) => request_event(&format!("{method}/denied"), ctx)
                .with("interceptor", refusal.interceptor.clone())
                .with("reason", self.scrub(refusal.reason.clone())),
            Ok(_) => request_event(&format!("{method}/finished"), ctx),
            Err(error) => request_event(&format!("{method}/finished"), ctx)
                .with("error", self.scrub(toolgate_core::ErrorChain(error).to_string())),
        };
        let ended = ended
            .with("duration_ms", ctx.started.elapsed().as_secs_f64() * 1000.0)
            .with("decisions", decisions(ctx));
        self.bus.publish(ended);
    }

    /// An upstream connected, reconnected, or went down.
    pub(crate) fn upstream(&self, event: &UpstreamEvent) {
        let published = match event {
            UpstreamEvent::Connected { upstream, startup } => {
                let first = self.seen.lock().expect("seen lock").insert(upstream.clone());
                let kind = if first { kind::UPSTREAM_CONNECTED } else { kind::UPSTREAM_RESTARTED };
                Event::new(kind)
                    .with("server", upstream.clone())
                    .with("startup_ms", startup.as_secs_f64() * 1000.0)
            }
            UpstreamEvent::Disconnected { upstream, reason } => Event::new(kind::UPSTREAM_FAILED)
                .with("server", upstream.clone())
                .with("reason", self.scrub(reason.clone())),
            _ => return,
        };
        self.bus.publish(published);
    }

    /// A server a request named by URL connected for `ctx`'s caller: `upstream/connected`
    /// with `dynamic: true`, its URL without query, never its credentials.
    pub(crate) fn dynamic_connected(&self, label: &str, url: &url::Url, ctx: &CallContext) {
        if self.is_listening() {
            self.bus.publish(dynamic_event(kind::UPSTREAM_CONNECTED, label, url, ctx));
        }
    }

    /// A server a request named by URL could not be reached: `upstream/failed` with
    /// `dynamic: true` and why.
    pub(crate) fn dynamic_failed(
        &self,
        label: &str,
        url: &url::Url,
        ctx: &CallContext,
        error: &UpstreamError,
    ) {
        if self.is_listening() {
            let reason = self.scrub(toolgate_core::ErrorChain(error).to_string());
            let event = dynamic_event(kind::UPSTREAM_FAILED, label, url, ctx);
            self.bus.publish(event.with("reason", reason));
        }
    }

    /// The pool closed a server a request named by URL: `upstream/closed`, and why.
    pub(crate) fn dynamic_closed(&self, label: &str, reason: &str) {
        if self.is_listening() {
            let event = Event::new(kind::UPSTREAM_CLOSED).with("server", label.to_owned());
            self.bus.publish(event.with("dynamic", true).with("reason", reason.to_owned()));
        }
    }

    /// Lists that changed for clients.
    pub(crate) fn lists_changed(&self, changed: Changed) {
        let lists = [
            (changed.tools, kind::TOOLS_LIST_CHANGED),
            (changed.prompts, "prompts/list/changed"),
            (changed.resources, "resources/list/changed"),
        ];
        for (yes, kind) in lists {
            if yes {
                self.bus.publish(Event::new(kind));
            }
        }
    }
}

/// An event about one request other than a tool call: who, and about what (the server and the
/// name or URI there, when it has a target).
fn request_event(kind: &str, ctx: &CallContext) -> Event {
    let mut event = with_principal(Event::new(kind), ctx);
    if let Some(target) = &ctx.target {
        event = event
            .with("server", target.server.clone())
            .with("target", target.original.clone())
            .with("exposed", target.exposed.clone());
    }
    if let Some(session) = &ctx.session {
        event = event.with("session", session.clone());
    }
    if let Some(id) = &ctx.request_id {
        event = event.with("request_id", id.clone());
    }
    event
}

/// An event about a server a request named by URL, for `ctx`'s caller.
fn dynamic_event(kind: &str, label: &str, url: &url::Url, ctx: &CallContext) -> Event {
    let event = Event::new(kind)
        .with("server", label.to_owned())
        .with("dynamic", true)
        .with("url", shown_url(url));
    with_principal(event, ctx)
}

/// `event` with who asked (see `Principal::fields`).
fn with_principal(event: Event, ctx: &CallContext) -> Event {
    ctx.principal.fields().into_iter().fold(event, |event, (key, value)| event.with(key, value))
}

/// An event about one call: who, where, which.
fn call_event(kind: &str, ctx: &CallContext, exposed: &str) -> Event {
    let mut event = Event::new(kind).with("exposed", exposed.to_owned());
    if let Some(CallNumber(n)) = ctx.get::<CallNumber>() {
        event = event.with("call", *n);
    }
    if let Some(target) = &ctx.target {
        event = event.with("server", target.server.clone()).with("tool", target.original.clone());
    }
    event = with_principal(event, ctx);
    if let Some(session) = &ctx.session {
        event = event.with("session", session.clone());
    }
    if let Some(id) = &ctx.request_id {
        event = event.with("request_id", id.clone());
    }
    event
}

/// Each interceptor's decision, in order, with how long it took.
fn decisions(ctx: &CallContext) -> Value {
    Value::Array(
        ctx.decisions
            .iter()
            .map(|d| {
                let mut entry = json!({
                    "interceptor": d.interceptor,
                    "phase": d.phase.as_str(),
                    "decision": d.kind.name(),
                    // To the microsecond: an interceptor's run is often a few of them.
                    "duration_ms": d.duration.as_micros() as f64 / 1000.0,
                });
                match &d.kind {
                    DecisionKind::Refused(reason) => entry["reason"] = json!(reason),
                    DecisionKind::WouldHave(inner) => entry["would_have"] = json!(inner.name()),
                    _ => {}
                }
                entry
            })
            .collect(),
    )
}

/// The length of `value` as JSON, counted as it is written, without keeping the text.
fn json_len(value: &impl serde::Serialize) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len() as u64;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}

/// `url` as events and logs show it: without user, password, query or fragment.
pub(crate) fn shown_url(url: &url::Url) -> String {
    format!("{}{}", url.origin().ascii_serialization(), url.path())
}

#[cfg(test)]
mod tests {
    use toolgate_audit::EventPattern;
    use toolgate_intercept::Principal;

    use super::*;

    #[test]
    fn json_len_counts_the_bytes_of_the_json_text() {
        let value = json!({"text": "héllo", "n": [1, 2]});
        assert_eq!(json_len(&value), serde_json::to_vec(&value).unwrap().len() as u64);
    }

    /// A subscriber that never reads must not hold anything up: every publish returns at
    /// once, and what does not fit is dropped and counted.
    #[test]
    fn a_stuck_subscriber_never_holds_up_a_call() {
        let bus = EventBus::new();
        let stuck = bus.subscribe(EventPattern::all(), 1);
        let recorder = Recorder::new(bus.clone(), Vec::new());
        let params = mcp::CallToolRequestParams::new("fx__echo");
        let result =
            Ok(ToolAnswer::Parsed(mcp::CallToolResult::success(vec![mcp::ContentBlock::text(
                "hi",
            )])));
        const CALLS: u64 = 10_000;
        for _ in 0..CALLS {
            let mut ctx = CallContext::new(Principal::local());
            recorder.call_started(&mut ctx, &params);
            recorder.call_ended(&ctx, "fx__echo", &result);
        }
        assert_eq!(bus.dropped(), 2 * CALLS - 1, "one event fits, the rest are dropped");
        assert_eq!(stuck.dropped(), 2 * CALLS - 1);
    }

    #[test]
    fn calls_are_numbered_and_upstream_restarts_told_apart() {
        let bus = EventBus::new();
        let mut all = bus.subscribe(EventPattern::all(), 64);
        let recorder = Recorder::new(bus.clone(), Vec::new());
        let mut first = CallContext::new(Principal::local());
        let mut second = CallContext::new(Principal::local());
        let params = mcp::CallToolRequestParams::new("fx__echo");
        recorder.call_started(&mut first, &params);
        recorder.call_started(&mut second, &params);
        let startup = std::time::Duration::from_millis(42);
        let connected = UpstreamEvent::Connected { upstream: "fx".into(), startup };
        recorder.upstream(&connected);
        recorder.upstream(&UpstreamEvent::Disconnected {
            upstream: "fx".into(),
            reason: "gone".into(),
        });
        recorder.upstream(&connected);
        let events: Vec<Event> = std::iter::from_fn(|| all.try_recv()).collect();
        assert_eq!(events[0].get("call"), Some(&json!(1)));
        assert_eq!(events[1].get("call"), Some(&json!(2)));
        let kinds: Vec<&str> = events[2..].iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["upstream/connected", "upstream/failed", "upstream/restarted"]);
        assert_eq!(events[2].get("startup_ms"), Some(&json!(42.0)), "how long it took");
    }

    #[test]
    fn each_decision_says_how_long_its_interceptor_took() {
        let bus = EventBus::new();
        let mut all = bus.subscribe(EventPattern::all(), 8);
        let recorder = Recorder::new(bus.clone(), Vec::new());
        let mut ctx = CallContext::new(Principal::local());
        ctx.decisions.push(toolgate_intercept::Decision {
            interceptor: "policy".into(),
            event: InterceptionEvent::ToolsCall,
            phase: toolgate_intercept::Phase::Request,
            kind: DecisionKind::Continued,
            duration: std::time::Duration::from_micros(1234),
        });
        let answer = Ok(ToolAnswer::Parsed(mcp::CallToolResult::success(Vec::new())));
        recorder.call_ended(&ctx, "fx__echo", &answer);
        let finished = all.try_recv().expect("finished");
        assert_eq!(
            finished.get("decisions"),
            Some(&json!([{
                "interceptor": "policy", "phase": "request", "decision": "continued",
                "duration_ms": 1.234,
            }]))
        );
    }

    #[test]
    fn a_hash_key_turns_the_argument_hash_into_an_hmac() {
        let bus = EventBus::new();
        let mut all = bus.subscribe(EventPattern::all(), 8);
        let secret = FieldPath::parse("pin").expect("a path");
        let plain = Recorder::new(bus.clone(), vec![secret.clone()]);
        let keyed = Recorder::new(bus.clone(), vec![secret]).with_hash_key(b"k".repeat(32));
        let params = mcp::CallToolRequestParams::new("bank__pay")
            .with_arguments(json!({"pin": "1234"}).as_object().cloned().expect("an object"));
        plain.call_started(&mut CallContext::new(Principal::local()), &params);
        keyed.call_started(&mut CallContext::new(Principal::local()), &params);
        let (plain, keyed) = (all.try_recv().expect("plain"), all.try_recv().expect("keyed"));
        let sha = plain.get("arguments_sha256").and_then(Value::as_str).expect("sha256");
        let hmac = keyed.get("arguments_hmac_sha256").and_then(Value::as_str).expect("hmac");
        assert_eq!(hmac.len(), 64);
        assert_ne!(sha, hmac);
        assert!(keyed.get("arguments_sha256").is_none(), "no guessable hash when keyed");
        assert_eq!(keyed.get("arguments"), Some(&json!({"pin": "***"})));
    }

    #[test]
    fn a_detector_scrubs_arguments_reasons_and_errors() {
        let bus = EventBus::new();
        let mut all = bus.subscribe(EventPattern::all(), 8);
        let recorder = Recorder::new(bus.clone(), Vec::new()).with_detection(Selection::all());
        let params = mcp::CallToolRequestParams::new("mail__send").with_arguments(
            json!({"to": "jane.doe@example.com", "body": "hi"}).as_object().cloned().unwrap(),
        );
        let mut ctx = CallContext::new(Principal::local());
        recorder.call_started(&mut ctx, &params);
        let refused = Err(GatewayError::Refused(toolgate_intercept::Refusal {
            interceptor: "policy".into(),
            reason: "jane.doe@example.com may not be mailed".into(),
        }));
        recorder.call_ended(&ctx, "mail__send", &refused);
        let started = all.try_recv().expect("started");
        assert_eq!(
            started.get("arguments"),
            Some(&json!({"to": "[REDACTED:email]", "body": "hi"}))
        );
        let denied = all.try_recv().expect("denied");
        assert_eq!(denied.get("reason"), Some(&json!("[REDACTED:email] may not be mailed")));
        // An empty selection finds nothing.
        let none = Recorder::new(bus.clone(), Vec::new()).with_detection(Selection::none());
        none.call_started(&mut CallContext::new(Principal::local()), &params);
        let kept = all.try_recv().expect("started");
        assert_eq!(
            kept.get("arguments"),
            Some(&json!({"to": "jane.doe@example.com", "body": "hi"}))
        );
    }
}
