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
//! | `per` | `"gateway"` (the default), `"caller"` or `"tenant"` | whose calls count together: everyone's, each caller's, or each tenant's |
//!
//! # Semantics
//!
//! - **Each key is its own limiter.** `server.github` counts every call to `github`'s
//!   tools together. An exact `tool` key counts the calls of that tool. A **glob** `tool` key
//!   gives **each matching tool its own limiter**: `tool."files__*" = { concurrency = 1 }`
//!   allows one call of each `files__` tool at a time, not one in all. Names no server
//!   lists (what a client may send to a passthrough server) share one limiter per glob key,
//!   so that made-up names cannot each get a fresh one; and a tool's limiter that is at rest
//!   (no call in flight, its bucket full) may be forgotten, since a new one behaves the same.
//! - **Whose calls**: by default a key counts everyone's calls together. With
//!   `per = "caller"` each caller gets its own limiter under the key: an authenticated or
//!   local principal wherever it calls from, an anonymous client by its session (else its
//!   address). With `per = "tenant"` each tenant's principals share one, and principals in no
//!   tenant share another. So `server.github = { rate = "30/min", per = "caller" }` lets
//!   each person make 30 calls a minute, and a second key without `per` can cap them all.
//!   Limiters at rest are forgotten as callers come and go, as for glob keys.
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
//! # Across replicas
//!
//! With `[state] backend` on Redis or PostgreSQL (several replicas behind a load balancer),
//! each `rate` is also counted in the shared state, in fixed windows of its period: `10/min`
//! allows 10 calls in each minute of the clock in all, whichever replicas take them, and a
//! call refused there waits until the window ends (`try again in` says how long). The token
//! bucket above still applies on each replica, so a burst is shaped there as well. When the
//! state cannot be reached, a call with a rate is refused (the entry fails closed; the reason
//! names the state backend), within the state's timeout. **`concurrency` stays per replica**:
//! `concurrency = 4` allows 4 calls in flight on each replica. Keys and details:
//! `limits/shared.rs`.
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
//! pipeline[2].server.github.timeout: invalid duration "soon": expected a number at character 1
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
    CallContext, CallerKey, Descriptor, Hook, InterceptError, InterceptionEvent, Interceptor,
    InterceptorType, Message, Mode, Outcome, Phase, Refusal, UpstreamTimeout,
};

use crate::options::{ABOVE_ZERO, OptionError, Options};

mod shared;

/// The config `kind`.
pub const KIND: &str = "limits";

/// The largest default `burst`: a rate of N calls per period allows `min(N, 100)` at once.
pub const DEFAULT_BURST_CAP: u32 = 100;

/// The largest N in a rate.
const MOST_CALLS: u32 = 1_000_000;

/// How many per-tool limiters a glob key keeps before it forgets those at rest. Tools come
/// from the servers' listings, so this is reached only by very large or changing catalogs; a
/// sweep then costs one pass, and the next is due when the map has doubled.
const LIMITERS_BEFORE_SWEEP: usize = 1024;

/// The limiter key of the names no server lists (never an exposed name: those are not empty).
const UNLISTED: &str = "";

/// The `limits` interceptor.
#[derive(Debug)]
pub struct Limits {
    descriptor: Descriptor,
    /// Where the rates are counted across replicas, if they are.
    shared: Option<shared::SharedRates>,
    servers: BTreeMap<String, ServerKey>,
    /// In config order.
    tools: Vec<ToolKey>,
    /// Held while the rate limiters of one call are checked and charged, so that two calls
    /// cannot both pass a check that only one of them fits.
    rate_gate: Mutex<()>,
}

/// One `server` key.
#[derive(Debug)]
struct ServerKey {
    name: String,
    spec: Spec,
    /// By whose calls they count ([`SHARED`] for a key without `per`).
    limiters: Mutex<ToolLimiters>,
}

/// The limiter key of calls counted together for everyone.
const SHARED: &str = "";

/// One `tool` key.
#[derive(Debug)]
struct ToolKey {
    key: String,
    /// `None`: an exact name.
    glob: Option<GlobMatcher>,
    spec: Spec,
    /// By exposed name: one limiter for an exact key, one per matching tool for a glob (and
    /// one under [`UNLISTED`] for the names no server lists).
    limiters: Mutex<ToolLimiters>,
}

/// The limiters of one `tool` key, and when to look for ones to forget.
#[derive(Debug)]
struct ToolLimiters {
    by_name: HashMap<String, Arc<Limiter>>,
    sweep_at: usize,
}

impl Default for ToolLimiters {
    fn default() -> Self {
        ToolLimiters { by_name: HashMap::new(), sweep_at: LIMITERS_BEFORE_SWEEP }
    }
}

/// One limits table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Spec {
    timeout: Option<Duration>,
    concurrency: Option<u32>,
    rate: Option<Rate>,
    per: Scope,
}

/// Whose calls one limiter counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Everyone's.
    Gateway,
    /// Each caller's (see `CallerKey`).
    Caller,
    /// Each tenant's.
    Tenant,
}

impl Scope {
    /// Whose calls `ctx`'s call counts with, as a limiter key and the words for a refusal.
    fn of(self, ctx: &CallContext) -> (String, String) {
        match self {
            Scope::Gateway => (SHARED.to_owned(), String::new()),
            Scope::Caller => {
                let who = match ctx.caller_key() {
                    CallerKey::Principal(principal) => principal.to_string(),
                    CallerKey::Session(session) => format!("session {session}"),
                    CallerKey::Address(address) => format!("address {address}"),
                    CallerKey::Nobody => "anonymous".to_owned(),
                };
                (format!("caller\u{0}{who}"), format!(" for {who}"))
            }
            Scope::Tenant => match &ctx.principal.tenant {
                Some(tenant) => (format!("tenant\u{0}{tenant}"), format!(" for tenant {tenant}")),
                None => ("tenant".to_owned(), " for callers in no tenant".to_owned()),
            },
        }
    }
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
    /// Its counter's part of the shared state's keys (see [`shared`]).
    counter: String,
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

    /// Whether every call charged so far has been paid back by `now`.
    fn is_full(&self, now: Instant) -> bool {
        self.tat.lock().unwrap_or_else(PoisonError::into_inner).is_none_or(|tat| tat <= now)
    }

    /// Charges one call made at `now`.
    fn take(&self, now: Instant) {
        let mut tat = self.tat.lock().unwrap_or_else(PoisonError::into_inner);
        *tat = Some(tat.map_or(now, |t| t.max(now)) + self.interval);
    }
}

// === impl Limiter ===

impl Limiter {
    /// `identity` says what it counts (key, whose calls, which tool), for the shared state.
    fn new(label: String, identity: &str, spec: &Spec) -> Limiter {
        Limiter {
            label,
            counter: shared::counter(identity, spec.rate),
            slots: spec.concurrency.map(|n| (Arc::new(Semaphore::new(n as usize)), n)),
            bucket: spec.rate.map(Bucket::new),
        }
    }

    /// Whether it is as it was new at `now`: no call holds a slot and the bucket is full, so
    /// forgetting it and making a new one later changes nothing.
    fn at_rest(&self, now: Instant) -> bool {
        let idle =
            self.slots.as_ref().is_none_or(|(slots, n)| slots.available_permits() == *n as usize);
        idle && self.bucket.as_ref().is_none_or(|bucket| bucket.is_full(now))
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
                    let limiters = Mutex::default();
                    servers
                        .insert(server.clone(), ServerKey { name: server.clone(), spec, limiters });
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
            shared: None,
            servers,
            tools,
            rate_gate: Mutex::new(()),
        })
    }

    /// The same, counting its rates across replicas in `state` too (when there is one).
    pub fn with_shared_state(mut self, state: Option<toolgate_state::SharedState>) -> Limits {
        self.shared = state.map(|state| shared::SharedRates::new(state, &self.descriptor.name));
        self
    }

    /// Admits `ctx`'s call of the exposed tool `tool` on `server` (`listed`: a server lists
    /// it), or says why not: its slots, then its rates, all checked before any is charged.
    fn admit(
        &self,
        server: &str,
        tool: &str,
        listed: bool,
        ctx: &CallContext,
    ) -> Result<(Admitted, Vec<Arc<Limiter>>), String> {
        let server_key = self.servers.get(server);
        let matching: Vec<&ToolKey> = self.tools.iter().filter(|t| t.matches(tool)).collect();
        let mut limiters: Vec<Arc<Limiter>> =
            server_key.into_iter().map(|key| key.limiter(ctx)).collect();
        limiters.extend(matching.iter().map(|key| key.limiter(tool, listed, ctx)));

        let exact = matching.iter().find(|t| t.glob.is_none()).and_then(|t| t.spec.timeout);
        let globbed = matching.iter().filter(|t| t.glob.is_some()).filter_map(|t| t.spec.timeout);
        let timeout =
            exact.or_else(|| globbed.min()).or_else(|| server_key.and_then(|k| k.spec.timeout));

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

        limiters.retain(|limiter| limiter.bucket.is_some());
        self.rates(&limiters, self.shared.is_none())?;
        Ok((Admitted { permits, timeout }, limiters))
    }

    /// Checks every one of `limiters`' buckets, then (`charge`) charges them all.
    fn rates(&self, limiters: &[Arc<Limiter>], charge: bool) -> Result<(), String> {
        let _gate = self.rate_gate.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        for limiter in limiters {
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
        if charge {
            for limiter in limiters {
                if let Some(bucket) = &limiter.bucket {
                    bucket.take(now);
                }
            }
        }
        Ok(())
    }

    /// Counts `limiters`' rates across replicas (they passed here), then charges them here:
    /// whether the call may go.
    async fn admit_shared(
        &self,
        shared: &shared::SharedRates,
        limiters: &[Arc<Limiter>],
    ) -> Result<Result<(), String>, InterceptError> {
        let charged = match shared.charge(limiters).await {
            Ok(Ok(charged)) => charged,
            Ok(Err(reason)) => return Ok(Err(reason)),
            Err(error) => {
                let mut reason = format!("cannot count the rate limits: {error}");
                if let Some(cause) = std::error::Error::source(&error) {
                    reason.push_str(&format!(" ({cause})"));
                }
                return Err(InterceptError(reason));
            }
        };
        // Another call here may have taken the room while the state answered.
        if let Err(reason) = self.rates(limiters, true) {
            shared.undo(charged).await;
            return Ok(Err(reason));
        }
        Ok(Ok(()))
    }

    fn refuse(&self, reason: String) -> Outcome {
        Outcome::Refuse(Refusal { interceptor: self.descriptor.name.clone(), reason })
    }
}

// === impl ServerKey ===

impl ServerKey {
    /// The limiter `ctx`'s call counts against under this key (created on first use).
    fn limiter(&self, ctx: &CallContext) -> Arc<Limiter> {
        let (who, for_whom) = self.spec.per.of(ctx);
        let label = format!("server {:?}{for_whom}", self.name);
        let mut limiters = self.limiters.lock().unwrap_or_else(PoisonError::into_inner);
        limiters.get_or_make(&who, || {
            Limiter::new(label, &format!("server\u{0}{}\u{0}{who}", self.name), &self.spec)
        })
    }
}

impl ToolLimiters {
    /// The limiter under `key`, made by `make` when there is none; before it adds one to a
    /// map at its sweep size, the limiters at rest are forgotten.
    fn get_or_make(&mut self, key: &str, make: impl FnOnce() -> Limiter) -> Arc<Limiter> {
        if let Some(limiter) = self.by_name.get(key) {
            return limiter.clone();
        }
        if self.by_name.len() >= self.sweep_at {
            let now = Instant::now();
            self.by_name.retain(|_, limiter| !limiter.at_rest(now));
            self.sweep_at = (self.by_name.len() * 2).max(LIMITERS_BEFORE_SWEEP);
        }
        let limiter = Arc::new(make());
        self.by_name.insert(key.to_owned(), limiter.clone());
        limiter
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

    /// The limiter of `ctx`'s call of `tool` under this key (created on its first call). A
    /// glob key gives the names no server lists one limiter together.
    fn limiter(&self, tool: &str, listed: bool, ctx: &CallContext) -> Arc<Limiter> {
        let (who, for_whom) = self.spec.per.of(ctx);
        let (name, label) = match (&self.glob, listed) {
            (Some(_), false) => {
                (UNLISTED, format!("tools matching {:?} that no server lists{for_whom}", self.key))
            }
            _ => (tool, format!("tool {tool:?}{for_whom}")),
        };
        let key = format!("{who}\u{0}{name}");
        let mut limiters = self.limiters.lock().unwrap_or_else(PoisonError::into_inner);
        limiters.get_or_make(&key, || {
            Limiter::new(label, &format!("tool\u{0}{}\u{0}{key}", self.key), &self.spec)
        })
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
    limits.only(&["timeout", "concurrency", "rate", "burst", "per"]);
    if !["timeout", "concurrency", "rate"].iter().any(|k| table.contains_key(*k)) {
        limits.error(path, "sets no limit (expected timeout, concurrency or rate)");
    }
    let timeout = limits.duration("timeout", ABOVE_ZERO);
    let concurrency = limits.integer("concurrency", 1u32);
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
    let per = match limits.string("per") {
        None | Some("gateway") => Some(Scope::Gateway),
        Some("caller") => Some(Scope::Caller),
        Some("tenant") => Some(Scope::Tenant),
        Some(other) => {
            let at = limits.at("per");
            limits.error(
                &at,
                format!("expected \"gateway\", \"caller\" or \"tenant\", found {other:?}"),
            );
            None
        }
    };
    if table.contains_key("per")
        && !table.contains_key("rate")
        && !table.contains_key("concurrency")
    {
        let at = limits.at("per");
        limits.error(&at, "needs a `rate` or `concurrency` to count");
    }
    let burst = limits.integer("burst", 1u32);
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
    ok.then_some(Spec { timeout, concurrency, rate, per: per? })
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

impl Limits {
    /// Leaves what `admitted` grants in `ctx`.
    fn grant(&self, ctx: &mut CallContext, admitted: Admitted) {
        let Admitted { permits, timeout } = admitted;
        if let Some(ours) = timeout
            && self.descriptor.mode == Mode::Active
        {
            let shortest = ctx.get::<UpstreamTimeout>().map_or(ours, |t| t.0.min(ours));
            ctx.insert(UpstreamTimeout(shortest));
        }
        if !permits.is_empty() {
            match ctx.get::<Held>() {
                Some(held) => held.0.lock().unwrap_or_else(PoisonError::into_inner).extend(permits),
                None => ctx.insert(Held(Mutex::new(permits))),
            }
        }
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
        let admitted = match (message, &ctx.target) {
            (Message::CallTool(_), Some(target)) => {
                self.admit(&target.server, &target.exposed, target.tool.is_some(), ctx)
            }
            _ => return Box::pin(async { Ok(Outcome::Continue) }),
        };
        let (admitted, rated) = match admitted {
            Ok(admitted) => admitted,
            Err(reason) => {
                let refused = self.refuse(reason);
                return Box::pin(async move { Ok(refused) });
            }
        };
        match &self.shared {
            Some(shared) if !rated.is_empty() => Box::pin(async move {
                // The slots in `admitted` are given back if the call does not go.
                if let Err(reason) = self.admit_shared(shared, &rated).await? {
                    return Ok(self.refuse(reason));
                }
                self.grant(ctx, admitted);
                Ok(Outcome::Continue)
            }),
            _ => {
                self.grant(ctx, admitted);
                Box::pin(async { Ok(Outcome::Continue) })
            }
        }
    }
}

#[cfg(test)]
mod tests;
