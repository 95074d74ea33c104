//! The event bus of one run and its sinks, as `[audit]` configures them: the hash-chained
//! audit log, the tracing log, and webhooks. `finish` lets the sinks write what is queued
//! (a webhook that is down gets [`FLUSH_LIMIT`] for its retries, then what is left is lost).

use std::time::Duration;

use anyhow::Context as _;
use tokio::task::JoinHandle;
use toolgate_audit::{AuditLog, EventBus, EventPattern, FieldPath, WebhookOptions};
use toolgate_config::AuditConfig;

/// How long the sinks get to write what is queued when toolgate exits.
const FLUSH_LIMIT: Duration = Duration::from_secs(5);

/// `[audit]` settings that do not hold together: exits with `EXIT_USAGE`.
#[derive(Debug, thiserror::Error)]
#[error("invalid [audit] settings:\n{}", .0.join("\n"))]
pub(crate) struct InvalidAudit(pub(crate) Vec<String>);

/// The bus and the tasks that drain it.
#[derive(Debug)]
pub(crate) struct Events {
    bus: EventBus,
    redact: Vec<FieldPath>,
    sinks: Vec<JoinHandle<()>>,
}

impl Events {
    /// Starts the sinks `config` asks for (and the tracing log when it shows events).
    pub(crate) fn start(config: &AuditConfig) -> anyhow::Result<Events> {
        let bus = EventBus::new();
        let mut problems = Vec::new();
        let redact = config
            .redact
            .iter()
            .enumerate()
            .filter_map(|(i, text)| match FieldPath::parse(text) {
                Ok(path) => Some(path),
                Err(error) => {
                    problems.push(format!("audit.redact[{i}]: {error}"));
                    None
                }
            })
            .collect();
        let file_pattern = pattern(&config.events, "audit.events", &mut problems);
        let hook_patterns: Vec<EventPattern> = config
            .webhooks
            .iter()
            .enumerate()
            .map(|(i, hook)| {
                pattern(&hook.events, &format!("audit.webhook[{i}].events"), &mut problems)
            })
            .collect();
        if !problems.is_empty() {
            return Err(InvalidAudit(problems).into());
        }
        let mut sinks = Vec::new();
        if let Some(path) = &config.file {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            let log = AuditLog::open(path)
                .with_context(|| format!("cannot open the audit log {}", path.display()))?;
            sinks.push(toolgate_audit::spawn_audit_sink(&bus, file_pattern, log));
        }
        for (i, (hook, pattern)) in config.webhooks.iter().zip(hook_patterns).enumerate() {
            let mut options = WebhookOptions::new(hook.url.clone());
            options.headers =
                hook.headers.iter().map(|(k, v)| (k.clone(), v.expose().to_owned())).collect();
            options.queue = hook.queue;
            options.retries = hook.retries;
            let sink = toolgate_audit::spawn_webhook_sink(&bus, pattern, options)
                .with_context(|| format!("cannot start audit.webhook[{i}]"))?;
            sinks.push(sink);
        }
        if tracing::enabled!(target: "toolgate::event", tracing::Level::INFO) {
            sinks.push(toolgate_audit::spawn_tracing_sink(&bus, EventPattern::all()));
        }
        Ok(Events { bus, redact, sinks })
    }

    /// The bus.
    pub(crate) fn bus(&self) -> &EventBus {
        &self.bus
    }

    /// Argument fields masked in events.
    pub(crate) fn redact(&self) -> &[FieldPath] {
        &self.redact
    }

    /// Ends the subscriptions and waits (a while) for the sinks to write what is queued.
    pub(crate) async fn finish(self) {
        self.bus.close();
        let flushed = tokio::time::timeout(FLUSH_LIMIT, futures::future::join_all(self.sinks));
        if flushed.await.is_err() {
            tracing::warn!("event sinks did not finish writing within {FLUSH_LIMIT:?}");
        }
    }
}

/// The patterns at `path` as one pattern (any of them).
fn pattern(patterns: &[String], path: &str, problems: &mut Vec<String>) -> EventPattern {
    match EventPattern::parse(&patterns.join(",")) {
        Ok(pattern) => pattern,
        Err(error) => {
            problems.push(format!("{path}: {error}"));
            EventPattern::all()
        }
    }
}
