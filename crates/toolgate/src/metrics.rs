//! `GET /metrics`: what the gateway did, in the Prometheus text format.
//!
//! Most series come from the event bus: a [`Collector`] subscribes to every event and turns
//! each into counters and histograms (requests by method, server, tool and outcome; the
//! OpenTelemetry MCP duration histograms; interceptor decisions and their time; approvals;
//! upstream connections, restarts and failures; tokens transforms saved; model tokens and
//! their cost). What is a state rather than a happening (upstreams up, approvals waiting,
//! sessions and streams open, the dynamic pool, what `truncate` keeps) is read when scraped.
//!
//! Labels never carry arguments, principals or anything a client chooses freely: a tool is
//! labelled by its exposed name only when the inventory lists it (else `unknown`), a server by
//! its name only when it is one of the gateway's upstreams (a server a request named by URL is
//! `dynamic`), a method only when it is one toolgate serves (else `other`), a model only when
//! the config names it (`[llm.models.NAME]`, `[agent] model`; else `other`), an interceptor
//! by the name the config gives it.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use ::metrics::{counter, gauge, histogram};
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};
use serde_json::Value;
use toolgate_audit::{Event, EventBus, Subscription, kind};
use toolgate_gateway::Gateway;
use toolgate_interceptors::ApprovalDesk;
use toolgate_interceptors::truncate::spill::SpillStores;

use fractions::FractionCounter;

mod fractions;

/// The bucket boundaries, in seconds, that the OpenTelemetry semantic conventions for MCP
/// recommend for `mcp.server.operation.duration` and `mcp.client.operation.duration`.
pub(crate) const MCP_DURATION_BUCKETS: [f64; 14] =
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// The bucket boundaries, in seconds, of an interceptor's time: from 10 µs (a policy
/// lookup) to 5 minutes (a call held for a person's approval).
pub(crate) const INTERCEPTOR_BUCKETS: [f64; 18] = [
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.5, 1.0, 10.0, 60.0, 300.0,
];

/// How often histogram samples are folded into their buckets when nobody scrapes.
const UPKEEP: Duration = Duration::from_secs(5);

/// The methods a `<method>/finished` or `<method>/denied` event may name; any other is
/// `other`.
const METHODS: &[&str] = &[
    "tools/call",
    "tools/list",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
    "subscriptions/listen",
    "interceptors/list",
    "initialize",
    "ping",
];

const SERVER_DURATION: &str = "mcp_server_operation_duration_seconds";
const CLIENT_DURATION: &str = "mcp_client_operation_duration_seconds";
const RECONNECT: &str = "toolgate_upstream_reconnect_seconds";
const CONNECT: &str = "toolgate_upstream_connect_seconds";
const INTERCEPTOR_DURATION: &str = "toolgate_interceptor_duration_seconds";
const LLM_COST: &str = "toolgate_llm_cost_usd_total";

/// What the gateway knows of, to bound labels with.
pub(crate) trait Known: Send + Sync {
    /// Whether `name` is one of the gateway's upstreams (configured, or a script's server).
    fn is_server(&self, name: &str) -> bool;
    /// Whether the inventory lists the exposed tool `name`.
    fn is_tool(&self, name: &str) -> bool;
    /// Whether the config names the model `name` (`[llm.models.NAME]`, `[agent] model`).
    fn is_model(&self, name: &str) -> bool;
}

/// The series built from events, and their exporter.
pub(crate) struct Collector {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    /// When each upstream went down, to time its reconnection.
    down_since: Mutex<HashMap<String, Instant>>,
    /// `toolgate_llm_cost_usd_total`, in dollars.
    cost: FractionCounter,
}

impl Collector {
    pub(crate) fn new() -> Collector {
        let buckets = |builder: PrometheusBuilder, name: &str| {
            builder
                .set_buckets_for_metric(Matcher::Full(name.to_owned()), &MCP_DURATION_BUCKETS)
                .expect("the buckets are not empty")
        };
        let builder = buckets(PrometheusBuilder::new(), SERVER_DURATION);
        let builder = buckets(builder, CLIENT_DURATION);
        let builder = buckets(builder, CONNECT);
        let recorder = buckets(builder, RECONNECT)
            .set_buckets_for_metric(
                Matcher::Full(INTERCEPTOR_DURATION.to_owned()),
                &INTERCEPTOR_BUCKETS,
            )
            .expect("the buckets are not empty")
            .build_recorder();
        let handle = recorder.handle();
        let cost = FractionCounter::new(
            LLM_COST,
            "Estimated cost in USD of the model tokens of those responses, at list prices \
             (models without a known price count nothing)",
            "model",
        );
        let collector = Collector { recorder, handle, down_since: Mutex::default(), cost };
        collector.with(describe);
        collector
    }

    /// Runs `f` with this collector's recorder as the recorder of the `metrics` macros.
    fn with<T>(&self, f: impl FnOnce() -> T) -> T {
        ::metrics::with_local_recorder(&self.recorder, f)
    }

    /// The series, in the Prometheus text format.
    pub(crate) fn render(&self) -> String {
        let mut text = self.handle.render();
        self.cost.render(&mut text);
        text
    }

    /// Turns `event` into what it counts, its labels bounded by `known`.
    pub(crate) fn record(&self, event: &Event, known: &dyn Known) {
        self.with(|| self.record_inner(event, known));
    }

    fn record_inner(&self, event: &Event, known: &dyn Known) {
        let text = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or("");
        let number = |key: &str| event.get(key).and_then(Value::as_f64);
        match event.kind.as_str() {
            kind::APPROVAL_REQUESTED => {
                counter!("toolgate_approvals_total", "outcome" => "requested").increment(1)
            }
            kind::APPROVAL_GRANTED => {
                counter!("toolgate_approvals_total", "outcome" => "granted").increment(1)
            }
            kind::APPROVAL_REFUSED => {
                counter!("toolgate_approvals_total", "outcome" => "refused").increment(1)
            }
            kind::APPROVAL_EXPIRED => {
                counter!("toolgate_approvals_total", "outcome" => "expired").increment(1)
            }
            kind::UPSTREAM_CONNECTED | kind::UPSTREAM_RESTARTED => {
                let server = server_label(text("server"), event, known);
                let since = self.down_since.lock().expect("down_since lock").remove(text("server"));
                if event.kind == kind::UPSTREAM_RESTARTED {
                    counter!("toolgate_upstream_restarts_total", "server" => server.clone())
                        .increment(1);
                } else if let Some(ms) = number("startup_ms") {
                    histogram!(CONNECT, "server" => server.clone()).record(ms / 1000.0);
                }
                if let Some(since) = since {
                    histogram!(RECONNECT, "server" => server)
                        .record(event_age(event, since).as_secs_f64());
                }
            }
            kind::UPSTREAM_FAILED => {
                let server = server_label(text("server"), event, known);
                if known.is_server(text("server")) {
                    let mut down = self.down_since.lock().expect("down_since lock");
                    down.entry(text("server").to_owned()).or_insert_with(Instant::now);
                }
                counter!("toolgate_upstream_failures_total", "server" => server).increment(1);
            }
            kind::UPSTREAM_CLOSED => {
                let reasons = ["least_recently_used", "idle", "disconnected", "shutdown"];
                let reason = one_of(text("reason"), &reasons);
                counter!("toolgate_upstream_closed_total", "reason" => reason).increment(1);
            }
            kind::TRANSFORM_APPLIED => {
                let labels = [
                    ("interceptor", text("interceptor").to_owned()),
                    ("transform", text("transform").to_owned()),
                ];
                counter!("toolgate_transform_applied_total", &labels).increment(1);
                let (before, after) = (number("tokens_before"), number("tokens_after"));
                if let (Some(before), Some(after)) = (before, after)
                    && before > after
                {
                    counter!("toolgate_transform_tokens_saved_total", &labels)
                        .increment((before - after) as u64);
                }
            }
            kind::LLM_RESPONSE_FINISHED => {
                let model = model_label(text("model"), known);
                let status = one_of(text("status"), &["completed", "failed"]);
                counter!("toolgate_llm_responses_total", "model" => model.clone(), "status" => status)
                    .increment(1);
                for (field, direction) in [("input_tokens", "input"), ("output_tokens", "output")] {
                    if let Some(tokens) = number(field) {
                        counter!("toolgate_llm_tokens_total", "model" => model.clone(), "direction" => direction)
                            .increment(tokens as u64);
                    }
                }
                if let Some(cost) = number("cost_usd") {
                    self.cost.add(&model, cost);
                }
            }
            _ => self.request_ended(event, known),
        }
    }

    /// A request that ended (`<method>/finished`, `/denied`, `tools/call/timeout`,
    /// `/cancelled`, or a rejected call): counted, timed, and its decisions counted.
    fn request_ended(&self, event: &Event, known: &dyn Known) {
        let Some((method, outcome)) = ended(event) else { return };
        let text = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or("");
        let server = server_label(text("server"), event, known);
        let tool = match event.get("exposed").and_then(Value::as_str) {
            Some(exposed) if method == "tools/call" => tool_label(exposed, &server, known),
            _ => String::new(),
        };
        counter!(
            "toolgate_requests_total",
            "method" => method,
            "server" => server.clone(),
            "tool" => tool.clone(),
            "outcome" => outcome,
        )
        .increment(1);
        let error_type = if outcome == "ok" { "" } else { outcome };
        if let Some(ms) = event.get("duration_ms").and_then(Value::as_f64) {
            histogram!(
                SERVER_DURATION,
                "mcp_method_name" => method,
                "gen_ai_tool_name" => tool.clone(),
                "error_type" => error_type,
            )
            .record(ms / 1000.0);
        }
        if let Some(ms) = event.get("upstream_ms").and_then(Value::as_f64) {
            histogram!(
                CLIENT_DURATION,
                "mcp_method_name" => method,
                "gen_ai_tool_name" => tool,
                "server" => server,
                "error_type" => error_type,
            )
            .record(ms / 1000.0);
        }
        for decision in event.get("decisions").and_then(Value::as_array).into_iter().flatten() {
            let field = |key: &str| decision.get(key).and_then(Value::as_str).unwrap_or("");
            let phase = one_of(field("phase"), &["request", "response"]);
            let interceptor = field("interceptor").to_owned();
            counter!(
                "toolgate_interceptor_decisions_total",
                "interceptor" => interceptor.clone(),
                "phase" => phase,
                "decision" => one_of(field("decision"), &DECISIONS),
            )
            .increment(1);
            if let Some(ms) = decision.get("duration_ms").and_then(Value::as_f64) {
                histogram!(INTERCEPTOR_DURATION, "interceptor" => interceptor, "phase" => phase)
                    .record(ms / 1000.0);
            }
        }
    }
}

/// Kinds under which others than the gateway publish whatever they like (a script's
/// `toolgate::publish`, an `emit` entry's channel): never the end of a request, whatever they
/// end with, so that their fields never become labels.
const NOT_REQUESTS: [&str; 2] = ["script/", "emit/"];

/// The method and outcome of an event that ends a request; `None` for any other event.
fn ended(event: &Event) -> Option<(&'static str, &'static str)> {
    let kind = event.kind.as_str();
    if NOT_REQUESTS.iter().any(|prefix| kind.starts_with(prefix)) {
        return None;
    }
    let is_error = event.get("is_error").and_then(Value::as_bool) == Some(true);
    let (method, outcome) = match kind {
        kind::TOOLS_CALL_FINISHED => ("tools/call", if is_error { "error" } else { "ok" }),
        kind::TOOLS_CALL_TIMEOUT => ("tools/call", "timeout"),
        kind::TOOLS_CALL_CANCELLED => ("tools/call", "cancelled"),
        kind::TOOLS_CALL_DENIED => ("tools/call", "denied"),
        // A call of a tool nobody lists; other rejections happen before a request is read.
        kind::REQUEST_REJECTED if event.get("exposed").is_some() => ("tools/call", "rejected"),
        _ => {
            let (method, last) = kind.rsplit_once('/')?;
            let outcome = match last {
                "finished" if event.get("error").is_some() => "error",
                "finished" => "ok",
                "denied" => "denied",
                _ => return None,
            };
            (METHODS.iter().find(|m| **m == method).copied().unwrap_or("other"), outcome)
        }
    };
    Some((method, outcome))
}

/// `name` when it is one of the gateway's upstreams; `dynamic` for a server a request named
/// by URL (or any other name); empty when there is none.
fn server_label(name: &str, event: &Event, known: &dyn Known) -> String {
    let dynamic = event.get("dynamic").and_then(Value::as_bool) == Some(true);
    if name.is_empty() {
        String::new()
    } else if !dynamic && known.is_server(name) {
        name.to_owned()
    } else {
        "dynamic".to_owned()
    }
}

/// The exposed name of a listed tool of a known server; `unknown` for any other.
fn tool_label(exposed: &str, server: &str, known: &dyn Known) -> String {
    if server != "dynamic" && known.is_tool(exposed) {
        exposed.to_owned()
    } else {
        "unknown".to_owned()
    }
}

/// A model the config names; `other` for any other, which a request may have made up.
fn model_label(name: &str, known: &dyn Known) -> String {
    if known.is_model(name) { name.to_owned() } else { "other".to_owned() }
}

/// The names `DecisionKind::name` gives.
const DECISIONS: [&str; 6] = ["continued", "rewrote", "refused", "answered", "failed", "audited"];

/// `value` when it is one of `allowed`, else `other`.
fn one_of(value: &str, allowed: &[&'static str]) -> &'static str {
    allowed.iter().find(|a| **a == value).copied().unwrap_or("other")
}

/// How long ago `since` was when `event` happened (the event may have waited in the queue).
fn event_age(event: &Event, since: Instant) -> Duration {
    let queued = event.time.elapsed().unwrap_or_default();
    since.elapsed().saturating_sub(queued)
}

/// Help text for each series.
fn describe() {
    use ::metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        "toolgate_requests_total",
        "Requests clients made, by method, server, tool and outcome (ok, error, denied, \
         timeout, cancelled, rejected)"
    );
    describe_histogram!(
        SERVER_DURATION,
        Unit::Seconds,
        "How long toolgate took to answer a client's request (mcp.server.operation.duration)"
    );
    describe_histogram!(
        CLIENT_DURATION,
        Unit::Seconds,
        "How long an upstream took to answer toolgate (mcp.client.operation.duration)"
    );
    describe_counter!(
        "toolgate_interceptor_decisions_total",
        "Decisions interceptors took, by interceptor, phase and decision"
    );
    describe_histogram!(
        INTERCEPTOR_DURATION,
        Unit::Seconds,
        "How long each interceptor took to decide, by interceptor and phase"
    );
    describe_counter!("toolgate_approvals_total", "Approvals requested, granted, refused, expired");
    describe_gauge!("toolgate_approvals_waiting", "Calls held for a person's approval now");
    describe_gauge!(
        "toolgate_approval_oldest_wait_seconds",
        Unit::Seconds,
        "How long the oldest held call has waited (0 when none waits)"
    );
    describe_gauge!("toolgate_upstream_up", "1 when the upstream is connected, else 0");
    describe_gauge!("toolgate_upstream_restarting", "1 while the upstream reconnects, else 0");
    describe_counter!("toolgate_upstream_restarts_total", "Times an upstream connected again");
    describe_counter!("toolgate_upstream_failures_total", "Times an upstream failed or was lost");
    describe_counter!("toolgate_upstream_closed_total", "Dynamic servers the pool closed, by why");
    describe_histogram!(
        RECONNECT,
        Unit::Seconds,
        "How long an upstream was down before it connected again"
    );
    describe_histogram!(
        CONNECT,
        Unit::Seconds,
        "How long an upstream's first connection took (start, handshake, first listing)"
    );
    describe_gauge!("toolgate_sessions_open", "Downstream sessions open");
    describe_gauge!("toolgate_listen_streams_open", "subscriptions/listen streams open");
    describe_gauge!("toolgate_pool_connections", "Dynamic servers connected in the pool");
    describe_counter!("toolgate_pool_hits_total", "Requests served by a pooled connection");
    describe_counter!("toolgate_pool_misses_total", "Requests that opened a pooled connection");
    describe_counter!("toolgate_pool_evictions_total", "Connections the pool closed");
    describe_counter!("toolgate_transform_applied_total", "Results a transform changed");
    describe_counter!(
        "toolgate_transform_tokens_saved_total",
        "Tokens transforms took out of results (before minus after)"
    );
    describe_counter!(
        "toolgate_llm_responses_total",
        "Responses of /v1/responses and /v1/chat/completions, by model and status"
    );
    describe_counter!("toolgate_llm_tokens_total", "Model tokens of those responses");
    describe_gauge!(
        "toolgate_spill_entries",
        "Whole results a truncate entry keeps for toolgate__read_result"
    );
    describe_gauge!("toolgate_spill_bytes", Unit::Bytes, "Bytes of the whole results it keeps");
    describe_counter!(
        "toolgate_events_dropped_total",
        "Events a subscriber of the bus lost (its queue was full); metrics miss them too"
    );
}

/// What the states are read from when scraped, and what bounds the labels.
pub(crate) struct Sources {
    pub(crate) bus: EventBus,
    pub(crate) gateway: Arc<Gateway>,
    pub(crate) approvals: Arc<ApprovalDesk>,
    /// What the `truncate` entries keep.
    pub(crate) spill: Arc<SpillStores>,
    /// The model names the config gives (`[llm.models.NAME]`, `[agent] model`).
    pub(crate) models: BTreeSet<String>,
}

impl Known for Sources {
    fn is_server(&self, name: &str) -> bool {
        self.gateway.upstreams().iter().any(|upstream| upstream.name() == name)
    }

    fn is_tool(&self, name: &str) -> bool {
        self.gateway.inventory().tool_route(name).is_some()
    }

    fn is_model(&self, name: &str) -> bool {
        self.models.contains(name)
    }
}

/// The collector fed by the bus, and where it reads states from when scraped.
pub(crate) struct Metrics {
    collector: Collector,
    sources: Sources,
    /// Asks the feeding task to take in every event queued now, and say when it has.
    flush: tokio::sync::mpsc::UnboundedSender<tokio::sync::oneshot::Sender<()>>,
}

impl Metrics {
    /// Feeds `subscription` (made before the gateway started, to see its first connections)
    /// into a collector, until the bus closes.
    pub(crate) fn start(subscription: Subscription, sources: Sources) -> Arc<Metrics> {
        let (flush, mut flushes) = tokio::sync::mpsc::unbounded_channel();
        let collector = Collector::new();
        let metrics = Arc::new(Metrics { collector, sources, flush });
        let fed = Arc::downgrade(&metrics);
        tokio::spawn(async move {
            let mut subscription = subscription;
            let mut upkeep = tokio::time::interval(UPKEEP);
            loop {
                tokio::select! {
                    biased;
                    event = subscription.recv() => {
                        let (Some(event), Some(metrics)) = (event, fed.upgrade()) else { break };
                        metrics.collector.record(&event, &metrics.sources);
                    }
                    Some(flushed) = flushes.recv() => {
                        let Some(metrics) = fed.upgrade() else { break };
                        while let Some(event) = subscription.try_recv() {
                            metrics.collector.record(&event, &metrics.sources);
                        }
                        let _ = flushed.send(());
                    }
                    _ = upkeep.tick() => {
                        let Some(metrics) = fed.upgrade() else { break };
                        metrics.collector.handle.run_upkeep();
                    }
                }
            }
        });
        metrics
    }

    /// Every series: the events published before this was called counted (unless the bus
    /// dropped them), the states read now.
    pub(crate) async fn render(&self) -> String {
        let (flushed, done) = tokio::sync::oneshot::channel();
        if self.flush.send(flushed).is_ok() {
            // Bounded, should the task be stuck: a scrape answers with what there is.
            let _ = tokio::time::timeout(Duration::from_secs(1), done).await;
        }
        self.collector.with(|| self.states());
        self.collector.render()
    }

    fn states(&self) {
        let Sources { bus, gateway, approvals, spill, .. } = &self.sources;
        for upstream in gateway.upstreams() {
            let server = upstream.name().to_owned();
            let up = if upstream.is_connected() { 1.0 } else { 0.0 };
            gauge!("toolgate_upstream_up", "server" => server.clone()).set(up);
            let restarting = if upstream.is_restarting() { 1.0 } else { 0.0 };
            gauge!("toolgate_upstream_restarting", "server" => server).set(restarting);
        }
        let pending = approvals.pending();
        gauge!("toolgate_approvals_waiting").set(pending.len() as f64);
        let oldest = pending.iter().filter_map(|p| p.requested_at.elapsed().ok()).max();
        gauge!("toolgate_approval_oldest_wait_seconds")
            .set(oldest.unwrap_or_default().as_secs_f64());
        let sessions = gateway.sessions();
        gauge!("toolgate_sessions_open").set(sessions.count() as f64);
        gauge!("toolgate_listen_streams_open").set(sessions.listener_count() as f64);
        let pool = gateway.dynamic_stats();
        gauge!("toolgate_pool_connections").set(pool.size as f64);
        counter!("toolgate_pool_hits_total").absolute(pool.hits);
        counter!("toolgate_pool_misses_total").absolute(pool.misses);
        counter!("toolgate_pool_evictions_total").absolute(pool.evictions);
        counter!("toolgate_events_dropped_total").absolute(bus.dropped());
        for kept in spill.usage() {
            let interceptor = kept.interceptor;
            gauge!("toolgate_spill_entries", "interceptor" => interceptor.clone())
                .set(kept.entries as f64);
            gauge!("toolgate_spill_bytes", "interceptor" => interceptor).set(kept.bytes as f64);
        }
    }
}

/// The answer to `GET /metrics`.
pub(crate) async fn response(metrics: &Metrics) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let content_type = "text/plain; version=0.0.4; charset=utf-8";
    ([(axum::http::header::CONTENT_TYPE, content_type)], metrics.render().await).into_response()
}

#[cfg(test)]
mod tests;
