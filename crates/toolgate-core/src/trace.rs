//! OpenTelemetry traces: whether they are on, the tracer every span comes from, and the W3C
//! trace context carried in a request's `params._meta` (`traceparent`, `tracestate`, as
//! SEP-414 and the OpenTelemetry MCP conventions say).
//!
//! Spans are made through the global tracer, which is a no-op until the binary installs a
//! provider and calls [`enable`]; before that nothing here touches a message.

use std::str::FromStr as _;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Context, global};

/// The `_meta` key of the W3C `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// The `_meta` key of the W3C `tracestate`.
pub const TRACESTATE: &str = "tracestate";
/// The environment variable that carries a `traceparent` into a process (OpenTelemetry's
/// environment variables as context propagation carriers: the W3C names in upper case).
pub const ENV_TRACEPARENT: &str = "TRACEPARENT";
/// The environment variable that carries a `tracestate` into a process.
pub const ENV_TRACESTATE: &str = "TRACESTATE";

static ENABLED: AtomicBool = AtomicBool::new(false);
static RECORD_ARGUMENTS: AtomicBool = AtomicBool::new(false);

/// Turns spans on for the process (once its tracer provider is installed), recording tool
/// calls' arguments and results when `record_arguments`.
pub fn enable(record_arguments: bool) {
    RECORD_ARGUMENTS.store(record_arguments, Ordering::Relaxed);
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether spans are made.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Whether tool calls' arguments and results go into spans (`[telemetry] record_arguments`).
pub fn records_arguments() -> bool {
    RECORD_ARGUMENTS.load(Ordering::Relaxed)
}

/// The tracer every toolgate span comes from.
pub fn tracer() -> global::BoxedTracer {
    global::tracer("toolgate")
}

/// The remote parent a request's `_meta` names, if its `traceparent` is valid; an invalid
/// `tracestate` is dropped, as W3C says.
pub fn extract(meta: &serde_json::Map<String, serde_json::Value>) -> Option<Context> {
    let parent = meta.get(TRACEPARENT)?.as_str()?;
    let state = meta.get(TRACESTATE).and_then(serde_json::Value::as_str);
    parse(parent, state).map(|span| Context::new().with_remote_span_context(span))
}

/// The trace context a process was started in (`TRACEPARENT`, `TRACESTATE`, read through
/// `var`), as the `_meta` entries a client sends it in; empty unless `TRACEPARENT` is valid.
pub fn env_meta(
    var: impl Fn(&str) -> Option<String>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut meta = serde_json::Map::new();
    let Some(parent) = var(ENV_TRACEPARENT) else { return meta };
    if let Some(span) = parse(&parent, var(ENV_TRACESTATE).as_deref()) {
        inject(&Context::new().with_remote_span_context(span), &mut meta);
    }
    meta
}

/// Writes `cx`'s span into `meta` as `traceparent` (and `tracestate`), replacing whatever
/// was there: the receiver must see this span as its parent. Nothing when `cx` has no valid
/// span.
pub fn inject(cx: &Context, meta: &mut serde_json::Map<String, serde_json::Value>) {
    let span = cx.span();
    let span = span.span_context();
    if !span.is_valid() {
        return;
    }
    meta.insert(TRACEPARENT.to_owned(), format(span).into());
    let state = span.trace_state().header();
    if state.is_empty() {
        meta.remove(TRACESTATE);
    } else {
        meta.insert(TRACESTATE.to_owned(), state.into());
    }
}

/// A W3C `traceparent` (`00-<trace id>-<parent id>-<flags>`) and `tracestate`, as a remote
/// span context; `None` unless the parent is valid. Later versions are read as version 00
/// reads them (their first four fields).
pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    let mut parts = traceparent.trim().split('-');
    let version = parts.next()?;
    let (trace_id, span_id, flags) = (parts.next()?, parts.next()?, parts.next()?);
    let hex = |text: &str, len: usize| {
        text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let extra = parts.next();
    if !hex(version, 2)
        || version == "ff"
        || (version == "00" && extra.is_some())
        || !hex(trace_id, 32)
        || !hex(span_id, 16)
        || !hex(flags, 2)
    {
        return None;
    }
    let trace_id = TraceId::from_hex(trace_id).ok()?;
    let span_id = SpanId::from_hex(span_id).ok()?;
    let flags = TraceFlags::new(u8::from_str_radix(flags, 16).ok()?) & TraceFlags::SAMPLED;
    let state = tracestate.and_then(|text| TraceState::from_str(text).ok()).unwrap_or_default();
    let span = SpanContext::new(trace_id, span_id, flags, true, state);
    span.is_valid().then_some(span)
}

/// `span` as a W3C `traceparent`.
pub fn format(span: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        span.trace_id(),
        span.span_id(),
        span.trace_flags() & TraceFlags::SAMPLED
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::*;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    fn meta(value: Value) -> Map<String, Value> {
        value.as_object().expect("an object").clone()
    }

    #[test]
    fn a_valid_traceparent_is_a_remote_parent() {
        let cx = extract(&meta(json!({ "traceparent": PARENT, "tracestate": "a=1,b=2" })))
            .expect("a parent");
        let span = cx.span().span_context().clone();
        assert_eq!(span.trace_id().to_string(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(span.span_id().to_string(), "b7ad6b7169203331");
        assert!(span.is_sampled() && span.is_remote());
        assert_eq!(span.trace_state().header(), "a=1,b=2");
        assert_eq!(format(&span), PARENT);
    }

    #[test]
    fn invalid_traceparents_are_ignored() {
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-0af7651916cd43dd8448eb211c8031-b7ad6b7169203331-01",
        ] {
            assert!(parse(bad, None).is_none(), "{bad:?}");
        }
        assert!(extract(&meta(json!({ "traceparent": 7 }))).is_none());
        assert!(extract(&meta(json!({}))).is_none());
        // A later version is read by its first four fields.
        let later = "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-more";
        assert!(parse(later, None).is_some());
        // An invalid tracestate is dropped, the parent kept.
        let span = parse(PARENT, Some("not a state")).expect("the parent");
        assert_eq!(span.trace_state().header(), "");
    }

    #[test]
    fn the_environment_carries_a_parent_as_meta() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| (*value).to_owned())
            }
        };
        let meta = env_meta(env(&[("TRACEPARENT", PARENT), ("TRACESTATE", "a=1")]));
        assert_eq!(Value::Object(meta), json!({ "traceparent": PARENT, "tracestate": "a=1" }));
        // Read as a request's `_meta` is: the same parent.
        let cx = extract(&env_meta(env(&[("TRACEPARENT", PARENT)]))).expect("a parent");
        assert_eq!(format(cx.span().span_context()), PARENT);
        // Nothing, or nothing valid: no entries (and a state alone is no parent).
        assert!(env_meta(env(&[])).is_empty());
        assert!(env_meta(env(&[("TRACEPARENT", "00-nonsense-01")])).is_empty());
        assert!(env_meta(env(&[("TRACESTATE", "a=1")])).is_empty());
        // Lower-case names are not the carrier's.
        assert!(env_meta(env(&[("traceparent", PARENT)])).is_empty());
    }

    #[test]
    fn inject_replaces_what_the_client_sent() {
        let ours =
            parse("00-11111111111111111111111111111111-2222222222222222-00", None).expect("valid");
        let cx = Context::new().with_remote_span_context(ours);
        let mut sent = meta(json!({ "traceparent": PARENT, "tracestate": "a=1", "other": true }));
        inject(&cx, &mut sent);
        assert_eq!(
            Value::Object(sent),
            json!({
                "traceparent": "00-11111111111111111111111111111111-2222222222222222-00",
                "other": true,
            })
        );
        // No span: nothing changes.
        let mut untouched = meta(json!({ "traceparent": PARENT }));
        inject(&Context::new(), &mut untouched);
        assert_eq!(untouched["traceparent"], PARENT);
    }
}
