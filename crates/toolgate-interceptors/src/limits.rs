//! `limits`: per-server and per-tool timeouts, concurrency limits and rate limits.
//!
//! ```toml
//! [[pipeline]]
//! kind = "limits"
//! server.github = { timeout = "30s", concurrency = 4, rate = "10/min" }
//! tool."github__create_issue" = { rate = "2/min", burst = 1 }
//! tool."files__*" = { timeout = "5s", concurrency = 1 }
//! ```
//!
//! - **Hook**: `tools/call`, request phase. **Type**: validation. **Fails closed** by default.
//! - **Which call**: the context's target: its server (`server` keys) and its exposed name
//!   (`tool` keys). A call without a target is not limited.
//!
//! # Options
//!
//! | option | keys | values |
//! |---|---|---|
//! | `server` | a server's configured name (exact) | a limits table |
//! | `tool` | an exposed tool name (`github__create_issue`), or a glob of them (`github__*`) | a limits table |
//!
//! A `tool` key containing `*`, `?`, `[` or `{` is a glob; any other key is an exact name.
//! At least one of `server` and `tool` must be set. A limits table has at least one of:
//!
//! | key | type | meaning |
//! |---|---|---|
//! | `timeout` | duration above zero, written as the entry's own `timeout` (`"500ms"`, `"30s"`, `"2m"`, `"1h"`, sums such as `"1m30s"`) | how long the upstream has to answer the call |
//! | `concurrency` | integer >= 1 | how many calls may be in flight at once |
//! | `rate` | `"N/s"`, `"N/sec"`, `"N/min"`, `"N/hour"` (also `second`, `minute`, `h`) | how many calls per period |
//! | `burst` | integer >= 1 (needs `rate`) | how many calls may go at once after a quiet spell; default `N`, at most 100 |
//!
//! # Semantics
//!
//! - **Each key is its own limiter.** `server.github` counts every call to `github`'s
//!   tools together. An exact `tool` key counts the calls of that tool. A **glob** `tool` key
//!   gives **each matching tool its own limiter**: `tool."files__*" = { concurrency = 1 }`
//!   allows one call of each `files__` tool at a time, not one in all.
//! - **Every matching key applies.** A call must pass its server's limiter and every `tool`
//!   key that matches it. The limiters are all checked before any is charged: a call refused
//!   by one limit uses up nothing of the others.
//! - **Timeout**: a matching `tool` key's timeout overrides the server's. Among several
//!   matching `tool` keys, an exact name wins, then the shortest timeout. It is left in the
//!   context as [`UpstreamTimeout`], which the gateway applies to the upstream request (when
//!   an earlier interceptor left one, the shorter wins). `mode = "audit"` leaves none.
//! - **Concurrency**: a call that finds no free slot is refused at once (it does not queue).
//!   A slot is held until the call is finished: the context keeps it, and it is released
//!   when the gateway drops the context after the response phase.
//! - **Rate**: a token bucket (GCRA) per limiter: `burst` calls may go at once, after which
//!   one call is allowed every period/N. `burst` defaults to N, capped at
//!   [`DEFAULT_BURST_CAP`] so that a large hourly rate does not allow thousands of calls in
//!   the same second; set it explicitly to go higher.
//! - **Audit mode** (`mode = "audit"`): calls are counted as in active mode, so the audit
//!   log shows what would have been refused, but nothing is refused and no timeout is left.
//!
//! # Refusals
//!
//! ```text
//! server "github" already has 4 calls in flight (limit 4)
//! tool "github__create_issue" is limited to 10 calls per minute; try again in 4.2s
//! ```
//!
//! # Option errors
//!
//! ```text
//! pipeline[2]: sets no limits (expected `server` or `tool`)
//! pipeline[2].server.github: sets no limit (expected timeout, concurrency or rate)
//! pipeline[2].server.github.timeout: expected a duration such as "30s", found "soon" (expected a number at character 1)
//! pipeline[2].server.github.concurrency: expected an integer of at least 1, found 0
//! pipeline[2].tool.github__*.rate: expected a rate such as "10/min" (N/s, N/sec, N/min or N/hour, with N from 1 to 1000000), found "10 per minute"
//! pipeline[2].tool.github__*.burst: needs a `rate`
//! pipeline[2].tool.files__[x: invalid glob "files__[x": unclosed character class; missing ']'
//! ```

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use globset::{Glob, GlobMatcher};
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use toolgate_config::InterceptorConfig;
use toolgate_core::duration::{self, Precision};
use toolgate_intercept::{
    CallContext, Descriptor, Hook, InterceptError, InterceptionEvent, Interceptor, InterceptorType,
    Message, Mode, Outcome, Phase, Refusal, UpstreamTimeout,
};

use crate::options::{OptionError, Options};

/// The config `kind`.
pub const KIND: &str = "limits";

/// The largest default `burst`: a rate of N calls per period allows `min(N, 100)` at once.
pub const DEFAULT_BURST_CAP: u32 = 100;

/// The largest N in a rate.
const MOST_CALLS: u32 = 1_000_000;

/// The `limits` interceptor.
#[derive(Debug)]
pub struct Limits {
    descriptor: Descriptor,
    servers: BTreeMap<String, Arc<Limiter>>,
    /// In config order.
    tools: Vec<ToolKey>,
    /// Held while the rate limiters of one call are checked and charged, so that two calls
    /// cannot both pass a check that only one of them fits.
    rate_gate: Mutex<()>,
}

/// One `tool` key.
#[derive(Debug)]
struct ToolKey {
    key: String,
    /// `None`: an exact name.
    glob: Option<GlobMatcher>,
    spec: Spec,
    /// By exposed name: one limiter for an exact key, one per matching tool for a glob.
    limiters: Mutex<HashMap<String, Arc<Limiter>>>,
}

/// One limits table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Spec {
    timeout: Option<Duration>,
    concurrency: Option<u32>,
    rate: Option<Rate>,
}

/// N calls per period, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rate {
    calls: u32,
    per: Per,
    burst: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Per {
    Second,
    Minute,
    Hour,
}

/// The state behind one key (and, for a glob key, one tool).
#[derive(Debug)]
struct Limiter {
    /// `server "github"`, `tool "github__create_issue"`.
    label: String,
    /// The key's timeout (used for server keys; tool keys are read from their spec).
    timeout: Option<Duration>,
    slots: Option<(Arc<Semaphore>, u32)>,
    bucket: Option<Bucket>,
}

/// A GCRA token bucket: a call at `now` may go when the theoretical arrival time is at most
/// `tolerance` ahead of `now`; each call pushes it `interval` further.
#[derive(Debug)]
struct Bucket {
    rate: Rate,
    interval: Duration,
    tolerance: Duration,
    tat: Mutex<Option<Instant>>,
}

/// The semaphore permits this call holds, released when the context is dropped.
struct Held(Mutex<Vec<OwnedSemaphorePermit>>);

/// What a call was granted.
struct Admitted {
    permits: Vec<OwnedSemaphorePermit>,
    timeout: Option<Duration>,
}

// === impl Per ===

impl Per {
    fn period(self) -> Duration {
        match self {
            Per::Second => Duration::from_secs(1),
            Per::Minute => Duration::from_secs(60),
            Per::Hour => Duration::from_secs(3600),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Per::Second => "second",
            Per::Minute => "minute",
            Per::Hour => "hour",
        }
    }
}

// === impl Bucket ===

impl Bucket {
    fn new(rate: Rate) -> Bucket {
        let interval = rate.per.period() / rate.calls;
        Bucket { rate, interval, tolerance: interval * (rate.burst - 1), tat: Mutex::new(None) }
    }

    /// How long until a call may go; `None`: now.
    fn wait(&self, now: Instant) -> Option<Duration> {
        let tat =
            self.tat.lock().unwrap_or_else(PoisonError::into_inner).map_or(now, |t| t.max(now));
        let allowed_at = now + self.tolerance;
        (tat > allowed_at).then(|| tat - allowed_at)
    }

    /// Charges one call made at `now`.
    fn take(&self, now: Instant) {
        let mut tat = self.tat.lock().unwrap_or_else(PoisonError::into_inner);
        *tat = Some(tat.map_or(now, |t| t.max(now)) + self.interval);
    }
}

// === impl Limiter ===

impl Limiter {
    fn new(label: String, spec: &Spec) -> Limiter {
        Limiter {
            label,
            timeout: spec.timeout,
            slots: spec.concurrency.map(|n| (Arc::new(Semaphore::new(n as usize)), n)),
            bucket: spec.rate.map(Bucket::new),
        }
    }
}

// === impl Limits ===

impl Limits {
    /// Builds it from its `[[pipeline]]` entry.
    pub fn from_config(entry: &InterceptorConfig) -> Result<Limits, Vec<OptionError>> {
        let mut options = Options::new(entry.path.clone(), &entry.options);
        options.only(&["server", "tool"]);
        if options.get("server").is_none() && options.get("tool").is_none() {
            options.error(&entry.path, "sets no limits (expected `server` or `tool`)");
        }
        let mut servers = BTreeMap::new();
        if let Some(table) = options.table("server") {
            let at = options.at("server");
            for (server, value) in table {
                let path = format!("{at}.{server}");
                if let Some(spec) = parse_spec(&mut options, &path, value) {
                    let label = format!("server {server:?}");
                    servers.insert(server.clone(), Arc::new(Limiter::new(label, &spec)));
                }
            }
        }
        let mut tools = Vec::new();
        if let Some(table) = options.table("tool") {
            let at = options.at("tool");
            for (key, value) in table {
                let path = format!("{at}.{key}");
                let glob = if key.contains(['*', '?', '[', '{']) {
                    match Glob::new(key) {
                        Ok(glob) => Some(glob.compile_matcher()),
                        Err(error) => {
                            options.error(&path, format!("invalid glob {key:?}: {}", error.kind()));
                            continue;
                        }
                    }
                } else {
                    None
                };
                if let Some(spec) = parse_spec(&mut options, &path, value) {
                    let limiters = Mutex::default();
                    tools.push(ToolKey { key: key.clone(), glob, spec, limiters });
                }
            }
        }
        let hooks = vec![Hook::new(["tools/call"], Phase::Request).expect("a literal event")];
        // Fails closed (the default): a limit that did not hold is no limit.
        let descriptor = Descriptor::new(KIND, KIND, InterceptorType::Validation, hooks);
        let descriptor = options.configure(descriptor, entry);
        options.finish(descriptor, |descriptor| Limits {
            descriptor,
            servers,
            tools,
            rate_gate: Mutex::new(()),
        })
    }

    /// Admits a call of the exposed tool `tool` on `server`, or says why not.
    fn admit(&self, server: &str, tool: &str) -> Result<Admitted, String> {
        let server_limiter = self.servers.get(server);
        let matching: Vec<&ToolKey> = self.tools.iter().filter(|t| t.matches(tool)).collect();
        let mut limiters: Vec<Arc<Limiter>> = server_limiter.into_iter().cloned().collect();
        limiters.extend(matching.iter().map(|key| key.limiter(tool)));

        let exact = matching.iter().find(|t| t.glob.is_none()).and_then(|t| t.spec.timeout);
        let globbed = matching.iter().filter(|t| t.glob.is_some()).filter_map(|t| t.spec.timeout);
        let timeout =
            exact.or_else(|| globbed.min()).or_else(|| server_limiter.and_then(|l| l.timeout));

        let mut permits = Vec::new();
        for limiter in &limiters {
            let Some((slots, limit)) = &limiter.slots else { continue };
            match slots.clone().try_acquire_owned() {
                Ok(permit) => permits.push(permit),
                Err(_) => {
                    let in_flight = *limit as usize - slots.available_permits();
                    // Dropping `permits` gives back the slots taken so far.
                    return Err(format!(
                        "{} already has {} in flight (limit {limit})",
                        limiter.label,
                        calls(in_flight as u64)
                    ));
                }
            }
        }

        let _gate = self.rate_gate.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        for limiter in &limiters {
            let Some(bucket) = &limiter.bucket else { continue };
            if let Some(wait) = bucket.wait(now) {
                let Rate { calls: n, per, .. } = bucket.rate;
                return Err(format!(
                    "{} is limited to {} per {}; try again in {}",
                    limiter.label,
                    calls(n.into()),
                    per.name(),
                    duration::format_with(wait, Precision::WaitRoundedUp)
                ));
            }
        }
        for limiter in &limiters {
            if let Some(bucket) = &limiter.bucket {
                bucket.take(now);
            }
        }
        Ok(Admitted { permits, timeout })
    }

    fn refuse(&self, reason: String) -> Outcome {
        Outcome::Refuse(Refusal { interceptor: self.descriptor.name.clone(), reason })
    }
}

// === impl ToolKey ===

impl ToolKey {
    fn matches(&self, tool: &str) -> bool {
        match &self.glob {
            None => self.key == tool,
            Some(glob) => glob.is_match(tool),
        }
    }

    /// The limiter of `tool` under this key (created on its first call).
    fn limiter(&self, tool: &str) -> Arc<Limiter> {
        let mut limiters = self.limiters.lock().unwrap_or_else(PoisonError::into_inner);
        limiters
            .entry(tool.to_owned())
            .or_insert_with(|| Arc::new(Limiter::new(format!("tool {tool:?}"), &self.spec)))
            .clone()
    }
}

/// `1 call`, `4 calls`.
fn calls(n: u64) -> String {
    if n == 1 { "1 call".to_owned() } else { format!("{n} calls") }
}

/// One limits table, or `None` after reporting what is wrong with it.
fn parse_spec(options: &mut Options<'_>, path: &str, value: &Value) -> Option<Spec> {
    let Some(table) = value.as_object() else {
        options.error(
            path,
            format!("expected a table such as {{ rate = \"10/min\" }}, found {value}"),
        );
        return None;
    };
    let mut limits = Options::new(path, table);
    limits.only(&["timeout", "concurrency", "rate", "burst"]);
    if !["timeout", "concurrency", "rate"].iter().any(|k| table.contains_key(*k)) {
        limits.error(path, "sets no limit (expected timeout, concurrency or rate)");
    }
    let timeout = limits.string("timeout").and_then(|text| match positive_duration(text) {
        Ok(timeout) => Some(timeout),
        Err(why) => {
            let at = limits.at("timeout");
            limits
                .error(&at, format!("expected a duration such as \"30s\", found {text:?} ({why})"));
            None
        }
    });
    let concurrency = positive(&mut limits, "concurrency");
    let rate = limits.string("rate").and_then(|text| match parse_rate(text) {
        Some(rate) => Some(rate),
        None => {
            let at = limits.at("rate");
            limits.error(
                &at,
                format!(
                    "expected a rate such as \"10/min\" (N/s, N/sec, N/min or N/hour, with N from \
                     1 to {MOST_CALLS}), found {text:?}"
                ),
            );
            None
        }
    });
    let burst = positive(&mut limits, "burst");
    if burst.is_some() && !table.contains_key("rate") {
        let at = limits.at("burst");
        limits.error(&at, "needs a `rate`");
    }
    let rate = rate.map(|(calls, per)| Rate {
        calls,
        per,
        burst: burst.unwrap_or(calls.min(DEFAULT_BURST_CAP)),
    });
    let ok = limits.errors.is_empty();
    options.errors.append(&mut limits.errors);
    ok.then_some(Spec { timeout, concurrency, rate })
}

/// An integer option of at least 1.
fn positive(options: &mut Options<'_>, key: &str) -> Option<u32> {
    let value = options.get(key)?;
    match value.as_u64().and_then(|n| u32::try_from(n).ok()).filter(|n| *n >= 1) {
        Some(n) => Some(n),
        None => {
            let at = options.at(key);
            options.error(&at, format!("expected an integer of at least 1, found {value}"));
            None
        }
    }
}

/// `N/unit`.
fn parse_rate(text: &str) -> Option<(u32, Per)> {
    let (calls, unit) = text.split_once('/')?;
    let calls: u32 = calls.trim().parse().ok().filter(|n| (1..=MOST_CALLS).contains(n))?;
    let per = match unit.trim() {
        "s" | "sec" | "second" => Per::Second,
        "min" | "minute" => Per::Minute,
        "h" | "hour" => Per::Hour,
        _ => return None,
    };
    Some((calls, per))
}

/// A duration as the rest of the config writes them, above zero.
fn positive_duration(text: &str) -> Result<Duration, String> {
    match toolgate_core::duration::parse(text) {
        Ok(duration) if duration.is_zero() => Err("it must be more than 0".into()),
        Ok(duration) => Ok(duration),
        Err(error) => Err(error.to_string()),
    }
}

impl Interceptor for Limits {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn intercept<'a>(
        &'a self,
        _event: InterceptionEvent,
        _phase: Phase,
        message: &'a Message,
        ctx: &'a mut CallContext,
    ) -> BoxFuture<'a, Result<Outcome, InterceptError>> {
        let outcome = match (message, &ctx.target) {
            (Message::CallTool(_), Some(target)) => {
                match self.admit(&target.server, &target.exposed) {
                    Err(reason) => self.refuse(reason),
                    Ok(Admitted { permits, timeout }) => {
                        if let Some(ours) = timeout
                            && self.descriptor.mode == Mode::Active
                        {
                            let shortest =
                                ctx.get::<UpstreamTimeout>().map_or(ours, |t| t.0.min(ours));
                            ctx.insert(UpstreamTimeout(shortest));
                        }
                        if !permits.is_empty() {
                            match ctx.get::<Held>() {
                                Some(held) => held
                                    .0
                                    .lock()
                                    .unwrap_or_else(PoisonError::into_inner)
                                    .extend(permits),
                                None => ctx.insert(Held(Mutex::new(permits))),
                            }
                        }
                        Outcome::Continue
                    }
                }
            }
            _ => Outcome::Continue,
        };
        Box::pin(async move { Ok(outcome) })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolgate_intercept::{Principal, Target};

    use super::*;

    fn entry(options: Value) -> InterceptorConfig {
        crate::test_entry(KIND, "pipeline[2]", options)
    }

    fn limits(options: Value) -> Limits {
        Limits::from_config(&entry(options)).expect("valid options")
    }

    fn errors(options: Value) -> Vec<String> {
        let errors = Limits::from_config(&entry(options)).expect_err("invalid options");
        errors.iter().map(ToString::to_string).collect()
    }

    fn ctx(exposed: &str) -> CallContext {
        let (server, original) = exposed.split_once("__").expect("a namespaced name");
        let mut ctx = CallContext::new(Principal::local());
        ctx.target = Some(Target {
            server: server.into(),
            original: original.into(),
            exposed: exposed.into(),
            tool: None,
        });
        ctx
    }

    /// Runs `l` on a call of `exposed`: the context (holding what was granted) or the reason.
    async fn call(l: &Limits, exposed: &str) -> Result<CallContext, String> {
        let mut ctx = ctx(exposed);
        let message =
            Message::CallTool(toolgate_core::mcp::CallToolRequestParams::new(exposed.to_owned()));
        match l.intercept(InterceptionEvent::ToolsCall, Phase::Request, &message, &mut ctx).await {
            Ok(Outcome::Continue) => Ok(ctx),
            Ok(Outcome::Refuse(refusal)) => {
                assert_eq!(refusal.interceptor, KIND);
                Err(refusal.reason)
            }
            other => panic!("a validator continues or refuses: {other:?}"),
        }
    }

    fn timeout_of(ctx: &CallContext) -> Option<Duration> {
        ctx.get::<UpstreamTimeout>().map(|t| t.0)
    }

    #[tokio::test(start_paused = true)]
    async fn concurrency_is_refused_at_once_and_released_when_the_context_is_dropped() {
        let l = limits(json!({ "server": { "github": { "concurrency": 2 } } }));
        let first = call(&l, "github__search").await.expect("a free slot");
        let second = call(&l, "github__create_issue").await.expect("a free slot");
        assert_eq!(
            call(&l, "github__search").await.expect_err("no free slot"),
            "server \"github\" already has 2 calls in flight (limit 2)"
        );
        // Other servers are not limited.
        call(&l, "files__read").await.expect("not limited");
        drop(first);
        let third = call(&l, "github__search").await.expect("a slot was released");
        drop((second, third));
        let _a = call(&l, "github__search").await.expect("free");
        let _b = call(&l, "github__search").await.expect("free");
    }

    #[tokio::test(start_paused = true)]
    async fn tool_and_server_limits_both_hold_and_glob_keys_count_each_tool() {
        let l = limits(json!({
            "server": { "files": { "concurrency": 3 } },
            "tool": { "files__*": { "concurrency": 1 } },
        }));
        let read = call(&l, "files__read").await.expect("free");
        assert_eq!(
            call(&l, "files__read").await.expect_err("the tool's slot is taken"),
            "tool \"files__read\" already has 1 call in flight (limit 1)"
        );
        // The glob gives files__write its own limiter.
        let write = call(&l, "files__write").await.expect("its own slot");
        let _stat = call(&l, "files__stat").await.expect("its own slot");
        assert_eq!(
            call(&l, "files__list").await.expect_err("the server is full"),
            "server \"files\" already has 3 calls in flight (limit 3)"
        );
        drop((read, write));
        call(&l, "files__list").await.expect("the server has room again");
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_by_one_limit_takes_nothing_from_the_others() {
        let l = limits(json!({
            "server": { "github": { "rate": "2/min" } },
            "tool": { "github__create_issue": { "concurrency": 1 } },
        }));
        let held = call(&l, "github__create_issue").await.expect("first");
        // Refused by concurrency: no rate token is used.
        call(&l, "github__create_issue").await.expect_err("no slot");
        call(&l, "github__create_issue").await.expect_err("no slot");
        drop(held);
        call(&l, "github__search").await.expect("the second of two tokens");
        // Refused by the rate: the slot taken while checking is given back.
        let reason = call(&l, "github__create_issue").await.expect_err("no token");
        assert!(
            reason.starts_with("server \"github\" is limited to 2 calls per minute"),
            "{reason}"
        );
        tokio::time::advance(Duration::from_secs(30)).await;
        let _held = call(&l, "github__create_issue").await.expect("a token and a slot");
    }

    #[tokio::test(start_paused = true)]
    async fn the_rate_refuses_with_the_wait_and_refills() {
        let l = limits(json!({ "tool": { "github__create_issue": { "rate": "10/min" } } }));
        for i in 0..10 {
            call(&l, "github__create_issue").await.unwrap_or_else(|e| panic!("call {i}: {e}"));
        }
        assert_eq!(
            call(&l, "github__create_issue").await.expect_err("the bucket is empty"),
            "tool \"github__create_issue\" is limited to 10 calls per minute; try again in 6.0s"
        );
        tokio::time::advance(Duration::from_millis(1800)).await;
        assert_eq!(
            call(&l, "github__create_issue").await.expect_err("still empty"),
            "tool \"github__create_issue\" is limited to 10 calls per minute; try again in 4.2s"
        );
        tokio::time::advance(Duration::from_millis(4200)).await;
        call(&l, "github__create_issue").await.expect("one token came back");
        call(&l, "github__create_issue").await.expect_err("only one");
        // A long quiet spell refills the bucket to its burst, no further.
        tokio::time::advance(Duration::from_secs(3600)).await;
        for _ in 0..10 {
            call(&l, "github__create_issue").await.expect("a full bucket");
        }
        call(&l, "github__create_issue").await.expect_err("burst is 10");
        // Other tools are not limited.
        call(&l, "github__search").await.expect("not limited");
    }

    #[tokio::test(start_paused = true)]
    async fn burst_spreads_calls_out() {
        let l = limits(json!({ "server": { "github": { "rate": "1/s", "burst": 1 } } }));
        call(&l, "github__a").await.expect("first");
        assert_eq!(
            call(&l, "github__a").await.expect_err("one per second"),
            "server \"github\" is limited to 1 call per second; try again in 1.0s"
        );
        tokio::time::advance(Duration::from_millis(999)).await;
        assert!(call(&l, "github__a").await.expect_err("not yet").ends_with("try again in 0.1s"));
        tokio::time::advance(Duration::from_millis(1)).await;
        call(&l, "github__a").await.expect("a second passed");
    }

    #[tokio::test(start_paused = true)]
    async fn the_default_burst_is_capped() {
        let l = limits(json!({ "server": { "big": { "rate": "3600/hour" } } }));
        for _ in 0..DEFAULT_BURST_CAP {
            call(&l, "big__x").await.expect("within the burst");
        }
        assert_eq!(
            call(&l, "big__x").await.expect_err("past the burst"),
            "server \"big\" is limited to 3600 calls per hour; try again in 1.0s"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_glob_rate_is_per_tool() {
        let l = limits(json!({ "tool": { "github__*": { "rate": "1/hour" } } }));
        call(&l, "github__a").await.expect("a's token");
        call(&l, "github__b").await.expect("b's own token");
        assert_eq!(
            call(&l, "github__a").await.expect_err("a's is used"),
            "tool \"github__a\" is limited to 1 call per hour; try again in 1h"
        );
        tokio::time::advance(Duration::from_secs(59 * 60 + 30)).await;
        assert!(call(&l, "github__a").await.expect_err("").ends_with("try again in 30.0s"));
    }

    #[tokio::test(start_paused = true)]
    async fn timeouts_the_tool_overrides_the_server_and_an_exact_key_a_glob() {
        let l = limits(json!({
            "server": { "github": { "timeout": "30s" } },
            "tool": {
                "github__*": { "timeout": "20s" },
                "github__search*": { "timeout": "10s" },
                "github__search_code": { "timeout": "1m" },
                "files__read": { "timeout": "500ms" },
            },
        }));
        let timeout = |exposed: &'static str| {
            let l = &l;
            async move { timeout_of(&call(l, exposed).await.expect("no limits refuse")) }
        };
        assert_eq!(timeout("github__search_code").await, Some(Duration::from_secs(60)));
        assert_eq!(timeout("github__search_issues").await, Some(Duration::from_secs(10)));
        assert_eq!(timeout("github__create_issue").await, Some(Duration::from_secs(20)));
        assert_eq!(timeout("files__read").await, Some(Duration::from_millis(500)));
        assert_eq!(timeout("files__write").await, None);
        let server_only = limits(json!({ "server": { "github": { "timeout": "1m30s" } } }));
        let ctx = call(&server_only, "github__x").await.expect("continues");
        assert_eq!(timeout_of(&ctx), Some(Duration::from_secs(90)));
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_shorter_timeout_and_earlier_permits_are_kept() {
        let first =
            limits(json!({ "server": { "github": { "timeout": "5s", "concurrency": 1 } } }));
        let second =
            limits(json!({ "server": { "github": { "timeout": "30s", "concurrency": 1 } } }));
        let mut ctx = ctx("github__x");
        let message =
            Message::CallTool(toolgate_core::mcp::CallToolRequestParams::new("github__x"));
        for l in [&first, &second] {
            let outcome =
                l.intercept(InterceptionEvent::ToolsCall, Phase::Request, &message, &mut ctx).await;
            assert_eq!(outcome.expect("decides"), Outcome::Continue);
        }
        assert_eq!(timeout_of(&ctx), Some(Duration::from_secs(5)));
        // Both permits are held by the one context.
        call(&first, "github__x").await.expect_err("first is full");
        call(&second, "github__x").await.expect_err("second is full");
        drop(ctx);
        call(&first, "github__x").await.expect("released");
        call(&second, "github__x").await.expect("released");
    }

    #[tokio::test(start_paused = true)]
    async fn audit_mode_leaves_no_timeout() {
        let mut config = entry(json!({ "server": { "github": { "timeout": "5s" } } }));
        config.mode = Mode::Audit;
        let l = Limits::from_config(&config).expect("valid");
        let ctx = call(&l, "github__x").await.expect("continues");
        assert_eq!(timeout_of(&ctx), None);
    }

    #[tokio::test(start_paused = true)]
    async fn calls_without_a_target_are_not_limited() {
        let l = limits(json!({ "tool": { "*": { "concurrency": 1, "rate": "1/hour" } } }));
        let message = Message::CallTool(toolgate_core::mcp::CallToolRequestParams::new("x"));
        for _ in 0..3 {
            let mut ctx = CallContext::new(Principal::local());
            let outcome =
                l.intercept(InterceptionEvent::ToolsCall, Phase::Request, &message, &mut ctx).await;
            assert_eq!(outcome.expect("decides"), Outcome::Continue);
        }
    }

    #[test]
    fn option_errors_name_the_field() {
        let text = errors(json!({
            "server": {
                "github": {},
                "files": { "timeout": "soon", "concurrency": 0, "colour": "red" },
                "slack": { "rate": "10 per minute", "burst": 0 },
                "jira": { "concurrency": "4" },
                "mail": 5,
            },
            "tool": {
                "github__*": { "timeout": "30", "burst": 3 },
                "files__[x": { "concurrency": 1 },
                "big": { "rate": "2000000/s" },
            },
            "servers": ["x"],
        }))
        .join("\n");
        for expected in [
            "pipeline[2].servers: unknown option (expected one of: server, tool)",
            "pipeline[2].server.github: sets no limit (expected timeout, concurrency or rate)",
            "pipeline[2].server.files.timeout: expected a duration such as \"30s\", found \"soon\" (expected a number at character 1)",
            "pipeline[2].server.files.concurrency: expected an integer of at least 1, found 0",
            "pipeline[2].server.files.colour: unknown option (expected one of: timeout, concurrency, rate, burst)",
            "pipeline[2].server.slack.rate: expected a rate such as \"10/min\"",
            "pipeline[2].server.slack.burst: expected an integer of at least 1, found 0",
            "pipeline[2].server.jira.concurrency: expected an integer of at least 1, found \"4\"",
            "pipeline[2].server.mail: expected a table such as { rate = \"10/min\" }, found 5",
            "pipeline[2].tool.github__*.timeout: expected a duration such as \"30s\", found \"30\" (missing unit after 30 (for example 30s))",
            "pipeline[2].tool.github__*.burst: needs a `rate`",
            "pipeline[2].tool.files__[x: invalid glob \"files__[x\"",
            "pipeline[2].tool.big.rate: expected a rate",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
        assert_eq!(
            errors(json!({})),
            ["pipeline[2]: sets no limits (expected `server` or `tool`)"]
        );
        assert_eq!(
            errors(json!({ "tool": ["x"] })),
            ["pipeline[2].tool: expected a table, found [\"x\"]"]
        );
    }

    #[test]
    fn rates_and_durations_parse() {
        assert_eq!(parse_rate("10/min"), Some((10, Per::Minute)));
        assert_eq!(parse_rate(" 5 / s "), Some((5, Per::Second)));
        assert_eq!(parse_rate("5/sec"), Some((5, Per::Second)));
        assert_eq!(parse_rate("100/hour"), Some((100, Per::Hour)));
        for bad in ["", "10", "0/s", "-1/s", "1.5/s", "10/day", "10/ms", "ten/min", "/min"] {
            assert_eq!(parse_rate(bad), None, "{bad:?}");
        }
        assert_eq!(positive_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(positive_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(positive_duration("1h 2m"), Ok(Duration::from_secs(3720)));
        assert_eq!(positive_duration("250ms"), Ok(Duration::from_millis(250)));
        for bad in ["", "0s", "30", "s", "3 fortnights", "-1s"] {
            assert!(positive_duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn it_is_a_fail_closed_validator_of_tool_calls() {
        let l = limits(json!({ "server": { "github": { "concurrency": 1 } } }));
        let d = l.descriptor();
        assert_eq!(d.interceptor_type, InterceptorType::Validation);
        assert!(!d.fail_open);
        assert!(d.applies(InterceptionEvent::ToolsCall, Phase::Request, Some("github"), Some("x")));
        assert!(!d.applies(
            InterceptionEvent::ToolsCall,
            Phase::Response,
            Some("github"),
            Some("x")
        ));
    }
}
