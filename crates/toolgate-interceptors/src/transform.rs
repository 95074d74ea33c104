//! What the transforms share (`truncate`, `redact`, `toon`, `test_filter`, `enrich`): they
//! rewrite results for the model that reads them, never refuse, fail open (a transform that
//! fails leaves the result as it was, and the pipeline publishes `interceptor/failed`), and
//! publish `transform/applied` for every result they changed, with its cost before and after
//! in tokens and bytes.
//!
//! Not a kind: a module the transforms use.

use serde_json::Value;
use toolgate_audit::{Event, EventBus};
use toolgate_intercept::{
    CallContext, Descriptor, Hook, InterceptionEvent, InterceptorType, Phase,
};
use toolgate_llm::tokens::Encoding;

/// The event every transform publishes when it changed a result.
pub const APPLIED: &str = toolgate_audit::kind::TRANSFORM_APPLIED;

/// A transform's descriptor before the entry's settings: a mutator on `events` in the
/// response phase that fails open.
pub(crate) fn descriptor(kind: &str, events: &[InterceptionEvent]) -> Descriptor {
    let hook = Hook::new(events.iter().map(|e| e.as_str()), Phase::Response)
        .expect("event names are valid globs");
    let mut descriptor = Descriptor::new(kind, kind, InterceptorType::Mutation, vec![hook]);
    descriptor.fail_open = true;
    descriptor
}

// What a model reads of a result, as the transforms count it, is toolgate-llm's, beside the
// other readings of a result.
pub use toolgate_llm::content::{model_text, resource_text};

/// Up to how many bytes (before and after together) `transform/applied` counts tokens on the
/// call's own task.
pub const COUNT_INLINE: usize = 64 * 1024;

/// What one transform did to one result, to be published as [`APPLIED`].
pub(crate) struct Applied<'a> {
    /// The interceptor's name (its `name`, or its kind).
    pub(crate) interceptor: &'a str,
    /// Its kind.
    pub(crate) kind: &'a str,
    /// The text before and after (see [`model_text`]).
    pub(crate) before: &'a str,
    pub(crate) after: &'a str,
    /// How tokens are counted.
    pub(crate) encoding: Encoding,
    /// What else the transform wants to say (`format`, `counts`, `handle`, ...).
    pub(crate) details: Vec<(&'static str, Value)>,
}

impl Applied<'_> {
    /// Publishes the event on `bus`, counting tokens only when someone listens for it. Texts
    /// over [`COUNT_INLINE`] bytes are counted on the blocking pool and the event published
    /// from there, so that counting a large result (about 40 ms per MiB) does not delay it.
    pub(crate) fn publish(self, bus: &EventBus, ctx: &CallContext) {
        if !bus.wants(APPLIED) {
            return;
        }
        let mut event = Event::new(APPLIED)
            .with("interceptor", self.interceptor)
            .with("transform", self.kind)
            .with("encoding", self.encoding.name())
            .with("bytes_before", self.before.len())
            .with("bytes_after", self.after.len());
        if let Some(target) = &ctx.target {
            event = event
                .with("server", target.server.clone())
                .with("tool", target.original.clone())
                .with("exposed", target.exposed.clone());
        }
        if let Some(session) = &ctx.session {
            event = event.with("session", session.clone());
        }
        for (key, value) in self.details {
            event = event.with(key, value);
        }
        let encoding = self.encoding;
        let count = move |event: Event, before: &str, after: &str| {
            event
                .with("tokens_before", encoding.count(before))
                .with("tokens_after", encoding.count(after))
        };
        let large = self.before.len() + self.after.len() > COUNT_INLINE;
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) if large => {
                let (before, after) = (self.before.to_owned(), self.after.to_owned());
                let bus = bus.clone();
                runtime.spawn_blocking(move || bus.publish(count(event, &before, &after)));
            }
            _ => bus.publish(count(event, self.before, self.after)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn applied_names_the_tool_and_counts_both_sides() {
        let bus = EventBus::new();
        let mut events = bus.subscribe("transform/*".parse().unwrap(), 8);
        let mut ctx = CallContext::new(toolgate_intercept::Principal::anonymous());
        ctx.target = Some(toolgate_intercept::Target {
            server: "fs".into(),
            original: "read".into(),
            exposed: "fs__read".into(),
            tool: None,
        });
        Applied {
            interceptor: "shorten",
            kind: "truncate",
            before: "hello hello hello hello",
            after: "hello",
            encoding: Encoding::O200kBase,
            details: vec![("handle", json!("h1"))],
        }
        .publish(&bus, &ctx);
        let event = events.try_recv().expect("published");
        assert_eq!(event.kind, APPLIED);
        assert_eq!(event.get("tool"), Some(&json!("read")));
        assert_eq!(event.get("tokens_before"), Some(&json!(4)));
        assert_eq!(event.get("tokens_after"), Some(&json!(1)));
        assert_eq!(event.get("handle"), Some(&json!("h1")));
    }
}
