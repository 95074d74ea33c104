//! The event bus of one run and its sinks, as `[audit]` configures them: the hash-chained
//! audit log, the tracing log, and webhooks. [`AuditPlan`] checks `[audit]` without starting
//! anything and [`check_log_file`] asks the file system, read only (what `config check` and
//! `serve` share); [`AuditPlan::start`] opens the log and starts the sinks. `finish` lets the
//! sinks write what is queued (a webhook that is down gets [`FLUSH_LIMIT`] for its retries,
//! then what is left is lost).

use std::time::Duration;

use anyhow::Context as _;
use tokio::task::JoinHandle;
use toolgate_audit::secrets::Selection;
use toolgate_audit::{
    AuditError, AuditLog, EventBus, EventPattern, FieldPath, WebhookError, WebhookOptions,
};
use toolgate_config::{AuditConfig, ConfigError};

/// How long the sinks get to write what is queued when toolgate exits.
const FLUSH_LIMIT: Duration = Duration::from_secs(5);

/// `[audit]` settings that do not hold together: exits with `EXIT_USAGE`.
#[derive(Debug, thiserror::Error)]
#[error("invalid [audit] settings:\n{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub(crate) struct InvalidAudit(pub(crate) Vec<ConfigError>);

/// `[audit]`, checked and ready to start: nothing is opened or started yet.
#[derive(Debug)]
pub(crate) struct AuditPlan<'a> {
    config: &'a AuditConfig,
    redact: Vec<FieldPath>,
    detect: Selection,
    file_pattern: EventPattern,
    webhooks: Vec<(EventPattern, WebhookOptions)>,
}

impl<'a> AuditPlan<'a> {
    /// Every problem `[audit]` has that can be found without touching the file system or the
    /// network: redaction paths, detector names, event patterns, webhook schemes and headers.
    pub(crate) fn new(config: &'a AuditConfig) -> Result<AuditPlan<'a>, Vec<ConfigError>> {
        let mut problems = Vec::new();
        let redact = config
            .redact
            .iter()
            .enumerate()
            .filter_map(|(i, text)| match FieldPath::parse(text) {
                Ok(path) => Some(path),
                Err(error) => {
                    problems
                        .push(ConfigError::new(format!("audit.redact[{i}]"), error.to_string()));
                    None
                }
            })
            .collect();
        let mut detect = Selection::none();
        for (i, name) in config.detect.iter().enumerate() {
            match Selection::from_names(&[name]) {
                Ok(selection) => detect.extend(&selection),
                Err(error) => {
                    problems.push(ConfigError::new(format!("audit.detect[{i}]"), error.to_string()))
                }
            }
        }
        let file_pattern = pattern(&config.events, "audit.events", &mut problems);
        if config.required && !file_pattern.matches(toolgate_audit::kind::TOOLS_CALL_STARTED) {
            problems.push(ConfigError::new(
                "audit.events",
                "must record tools/call/started with `required = true`: calls wait for that \
                 record",
            ));
        }
        let webhooks = config
            .webhooks
            .iter()
            .enumerate()
            .map(|(i, hook)| {
                let at = format!("audit.webhook[{i}]");
                let pattern = pattern(&hook.events, &format!("{at}.events"), &mut problems);
                let mut options = WebhookOptions::new(hook.url.clone());
                options.headers =
                    hook.headers.iter().map(|(k, v)| (k.clone(), v.expose().to_owned())).collect();
                options.queue = hook.queue;
                options.retries = hook.retries;
                if let Err(error) = options.check() {
                    problems.push(ConfigError::new(webhook_field(&at, &error), error.to_string()));
                }
                (pattern, options)
            })
            .collect();
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(AuditPlan { config, redact, detect, file_pattern, webhooks })
    }

    /// Opens the audit log and starts the sinks on `bus` (and the tracing log when it shows
    /// events).
    pub(crate) fn start(self, bus: EventBus) -> anyhow::Result<Events> {
        let mut sinks = Vec::new();
        if let Some(path) = &self.config.file {
            let log = AuditLog::open(path).map_err(|error| match error {
                // The config points at a place that cannot hold the log: a config problem,
                // worded as `config check` words it.
                AuditError::Place { .. } => {
                    InvalidAudit(vec![ConfigError::new("audit.file", error.to_string())]).into()
                }
                other => anyhow::Error::new(other)
                    .context(format!("cannot open the audit log {}", path.display())),
            })?;
            sinks.push(toolgate_audit::spawn_audit_sink(&bus, self.file_pattern, log));
        }
        for (i, (pattern, options)) in self.webhooks.into_iter().enumerate() {
            let sink = toolgate_audit::spawn_webhook_sink(&bus, pattern, options)
                .with_context(|| format!("cannot start audit.webhook[{i}]"))?;
            sinks.push(sink);
        }
        if tracing::enabled!(target: "toolgate::event", tracing::Level::INFO) {
            sinks.push(toolgate_audit::spawn_tracing_sink(&bus, EventPattern::all()));
        }
        Ok(Events { bus, redact: self.redact, detect: self.detect, sinks })
    }
}

/// What the file system says about the place of `[audit] file` (its directory exists and
/// takes new files; a log already there can be appended to and its chain verifies), found
/// without creating or writing anything.
pub(crate) fn check_log_file(config: &AuditConfig) -> Option<ConfigError> {
    let path = config.file.as_ref()?;
    AuditLog::check(path).err().map(|error| ConfigError::new("audit.file", error.to_string()))
}

/// What `config check` warns about `[audit] file`: a log already there that others than its
/// owner may read or write (it records every call's arguments).
pub(crate) fn log_file_warning(config: &AuditConfig) -> Option<String> {
    let path = config.file.as_ref()?;
    AuditLog::access_warning(path).map(|warning| format!("audit.file: {warning}"))
}

/// The bus and the tasks that drain it.
#[derive(Debug)]
pub(crate) struct Events {
    bus: EventBus,
    redact: Vec<FieldPath>,
    detect: Selection,
    sinks: Vec<JoinHandle<()>>,
}

impl Events {
    /// Checks `config` and starts the sinks it asks for on `bus`.
    pub(crate) fn start(config: &AuditConfig, bus: EventBus) -> anyhow::Result<Events> {
        AuditPlan::new(config).map_err(InvalidAudit)?.start(bus)
    }

    /// The bus.
    pub(crate) fn bus(&self) -> &EventBus {
        &self.bus
    }

    /// Argument fields masked in events.
    pub(crate) fn redact(&self) -> &[FieldPath] {
        &self.redact
    }

    /// What `[audit] detect` asks the detectors to find in recorded arguments.
    pub(crate) fn detect(&self) -> &Selection {
        &self.detect
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
fn pattern(patterns: &[String], path: &str, problems: &mut Vec<ConfigError>) -> EventPattern {
    match EventPattern::parse(&patterns.join(",")) {
        Ok(pattern) => pattern,
        Err(error) => {
            problems.push(ConfigError::new(path, error.to_string()));
            EventPattern::all()
        }
    }
}

/// The key of webhook `at` that `error` is about.
fn webhook_field(at: &str, error: &WebhookError) -> String {
    match error {
        WebhookError::Scheme { .. } => format!("{at}.url"),
        WebhookError::HeaderName { name, .. } | WebhookError::HeaderValue { name, .. } => {
            format!("{at}.headers.{name}")
        }
        _ => at.to_owned(),
    }
}
