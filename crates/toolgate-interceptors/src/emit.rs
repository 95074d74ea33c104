//! `emit`: publishes tool call outcomes on a named channel, for workflows: on the event bus
//! (so the admin API's `GET /events`, webhooks and the audit log see them), and optionally
//! to a command started once per event with the event as JSON on its stdin.
//!
//! ```toml
//! [[pipeline]]
//! kind = "emit"
//! channel = "deploys"                  # events are published as emit/deploys
//! servers = ["ci"]                     # the usual filters
//! tools = ["deploy_*"]
//! outcomes = ["ok", "error", "refused"] # which calls (default: all three)
//! include = "hash"                     # hash | result (default: hash)
//! command = ["/usr/local/bin/notify-deploy", "--quiet"]   # optional
//! concurrency = 4                      # commands running at once (default: 4)
//! command_timeout = "10s"              # then its process group is killed (default: 10s)
//!
//! [audit]                              # for example: POST them somewhere
//! [[audit.webhook]]
//! url = "https://hooks.example.com/toolgate"
//! events = ["emit/*"]
//! ```
//!
//! - **Hook**: `tools/call`, response phase. **Type**: mutation, though it never changes the
//!   result: it runs among the transforms, in their order (config order, then `priority`), so
//!   an entry after `redact` or `truncate` publishes the result as the model gets it, and an
//!   entry before them the upstream's own. **Fails open.**
//! - **Never delays the call**: publishing never waits (a subscriber that falls behind loses
//!   events, counted); a command runs in a task of its own, and when `concurrency` commands
//!   are already running the event is not given to a command at all (counted, and logged).
//!
//! # Outcomes
//!
//! | outcome | which calls | learned from |
//! |---|---|---|
//! | `ok` | a result without `isError` | the response phase |
//! | `error` | a result with `isError: true`; or a call that failed without a result (the upstream answered with an error, timed out, the connection was lost) | the response phase; for calls without a result, the gateway's `tools/call/finished` (with `error`) and `tools/call/timeout` events |
//! | `refused` | a call an interceptor or an approver refused (it never reached the response phase) | the gateway's `tools/call/denied` events |
//!
//! For `refused` and results-less errors, `emit` listens on the event bus in a task of its
//! own, started only when the pipeline really runs (`serve`, `call`; not `config check` or
//! `toolgate interceptors`), and only when `outcomes` has such an outcome. Listening makes
//! the gateway build its call events, as any subscriber (an audit log, a webhook) does.
//! The same `servers` and `tools` filters apply to them.
//!
//! # The event
//!
//! Kind `emit/<channel>`, so a subscriber takes one channel (`emit/deploys`), all of them
//! (`emit/*`), or a list (`emit/deploys,tools/call/denied`). Fields:
//!
//! | field | when | what |
//! |---|---|---|
//! | `channel` | always | the channel |
//! | `interceptor` | always | the entry's name |
//! | `outcome` | always | `ok`, `error` or `refused` |
//! | `server`, `tool`, `exposed` | always | the upstream, its own tool name, the name the caller used |
//! | `principal` | always | who called (`local:alice`, `anonymous:anonymous`, ...) |
//! | `session`, `request_id` | when known | the downstream session and request |
//! | `call` | from the gateway's events | the call's number in the gateway's events |
//! | `duration_ms` | when known | from the call's arrival to its result (at this entry), or to its refusal or failure |
//! | `is_error` | with a result | the result's `isError` |
//! | `refused_by`, `reason` | `refused` | the interceptor that refused and why |
//! | `error` | an error without a result | what went wrong |
//! | `result_sha256`, `result_bytes` | `include = "hash"` and a result | SHA-256 of the result's canonical JSON (RFC 8785), and that JSON's size in bytes |
//! | `result` | `include = "result"` and a result | the `CallToolResult` as JSON |
//!
//! `include = "hash"` is the default: results can be large and can hold what the event's
//! readers should not see. With `include = "result"`, place the entry after `redact`.
//!
//! # The command
//!
//! `command` is a program and its arguments (no shell; use `["sh", "-c", "..."]` for one).
//! For each event it is started in a process group of its own, with the event's JSON (the
//! same object the bus carries, `time` and `kind` first) on its stdin, which is then closed;
//! its stdout is discarded and its stderr logged when it fails. A command that has not ended
//! (and closed its stderr) within `command_timeout` has its whole process group killed, and
//! that is logged. At most `concurrency` run at once; an event that finds them all running is
//! not given to a command (the bus still has it), counted, and logged at the first and every
//! power-of-two count. When toolgate shuts down it waits for the commands still running (at
//! most their `command_timeout`).
//!
//! # Options
//!
//! | option | values | default | meaning |
//! |---|---|---|---|
//! | `channel` | 1 to 64 letters, digits, `_`, `-`, `.` | required | the event kind is `emit/<channel>` |
//! | `outcomes` | a non-empty array of `"ok"`, `"error"`, `"refused"` | all three | which calls are published |
//! | `include` | `"hash"`, `"result"` | `"hash"` | the result's hash and size, or the result itself |
//! | `command` | a non-empty array of strings | none | a program to start per event |
//! | `concurrency` | an integer ≥ 1 | `4` | commands running at once |
//! | `command_timeout` | a duration > 0 | `"10s"` | how long a command may run |
//!
//! # Option errors
//!
//! ```text
//! pipeline[0].channel: missing: the channel events are published on (emit/<channel>), such as "deploys"
//! pipeline[0].channel: expected 1 to 64 letters, digits, `_`, `-` or `.`, found "a/b" (the channel is one segment of the event kind emit/<channel>)
//! pipeline[0].outcomes[1]: expected "ok", "error" or "refused", found "timeout"
//! pipeline[0].include: expected "hash" or "result", found "all"
//! pipeline[0].command: expected a non-empty array of strings (the program, then its arguments), found []
//! pipeline[0].concurrency: expected an integer of at least 1, found 0
//! pipeline[0].command_timeout: invalid duration "soon": expected a number at character 1
//! ```
//!
//! # Cost
//!
//! Per call, with nobody listening and no command: next to nothing (the outcome and whether
//! anyone hears `emit/<channel>`). With a listener: building the event, and with
//! `include = "hash"` hashing the result's canonical JSON (about 0.4 ms for 100 KiB).
//! `emit/…` in the interceptors bench.

mod hook;
mod listen;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use toolgate_audit::{Event, EventBus};
use toolgate_config::InterceptorConfig;
use toolgate_core::mcp;
use toolgate_intercept::{
    CallContext, Descriptor, InterceptError, InterceptionEvent, Interceptor, Message, Outcome,
    Phase,
};

use crate::Services;
use crate::options::{ABOVE_ZERO, OptionError, Options};

pub use hook::HookStats;

/// The config `kind`.
pub const KIND: &str = "emit";

/// The default `concurrency`.
pub const DEFAULT_CONCURRENCY: usize = 4;

/// The default `command_timeout`.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

const OPTIONS: &[&str] =
    &["channel", "outcomes", "include", "command", "concurrency", "command_timeout"];

/// Which calls are published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// A result without `isError`.
    Ok,
    /// An error result, or a call that failed without one.
    Error,
    /// A refused call.
    Refused,
}

impl CallOutcome {
    /// Its name in options and events.
    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::Error => "error",
            CallOutcome::Refused => "refused",
        }
    }

    fn from_name(name: &str) -> Option<CallOutcome> {
        [CallOutcome::Ok, CallOutcome::Error, CallOutcome::Refused]
            .into_iter()
            .find(|o| o.as_str() == name)
    }
}

/// What an event says of the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Include {
    /// Its SHA-256 and size.
    #[default]
    Hash,
    /// The result itself.
    Result,
}

/// The `emit` interceptor.
#[derive(Debug)]
pub struct Emit {
    descriptor: Descriptor,
    shared: Arc<Shared>,
}

/// What the interceptor and its bus listener share.
#[derive(Debug)]
struct Shared {
    name: String,
    /// `emit/<channel>`.
    kind: String,
    channel: String,
    outcomes: Vec<CallOutcome>,
    include: Include,
    events: EventBus,
    /// The command, when there is one and the pipeline runs.
    hook: Option<hook::Hook>,
}

// === impl Emit ===

impl Emit {
    /// Builds it from its `[[pipeline]]` entry. When `services` says the pipeline runs
    /// ([`Services::background`]), it also starts listening for refused and failed calls
    /// (if `outcomes` asks for them) and can start commands.
    pub fn from_config(
        entry: &InterceptorConfig,
        services: &Services,
    ) -> Result<Emit, Vec<OptionError>> {
        let mut options = Options::new(entry.path.clone(), &entry.options);
        options.only(OPTIONS);
        let channel = read_channel(&mut options);
        let outcomes = read_outcomes(&mut options);
        let include = match options.string("include") {
            None | Some("hash") => Include::Hash,
            Some("result") => Include::Result,
            Some(other) => {
                let path = options.at("include");
                options.error(&path, format!("expected \"hash\" or \"result\", found {other:?}"));
                Include::Hash
            }
        };
        let command = read_command(&mut options);
        let concurrency = options.integer("concurrency", 1).unwrap_or(DEFAULT_CONCURRENCY);
        let command_timeout =
            options.duration("command_timeout", ABOVE_ZERO).unwrap_or(DEFAULT_COMMAND_TIMEOUT);
        let hooks = vec![
            toolgate_intercept::Hook::new(["tools/call"], Phase::Response)
                .expect("a literal event"),
        ];
        let mut descriptor =
            Descriptor::new(KIND, KIND, toolgate_intercept::InterceptorType::Mutation, hooks);
        descriptor.fail_open = true;
        let descriptor = options.configure(descriptor, entry);
        let channel = channel.unwrap_or_default();
        let emit = options.finish(descriptor, |descriptor| {
            let hook = match (&services.background, command) {
                (Some(tracker), Some(command)) => Some(hook::Hook::new(
                    descriptor.name.clone(),
                    command,
                    concurrency,
                    command_timeout,
                    tracker.clone(),
                )),
                _ => None,
            };
            let shared = Arc::new(Shared {
                name: descriptor.name.clone(),
                kind: format!("emit/{channel}"),
                channel,
                outcomes,
                include,
                events: services.events.clone(),
                hook,
            });
            Emit { descriptor, shared }
        })?;
        if services.background.is_some() {
            listen::start(&emit);
        }
        Ok(emit)
    }

    /// The event kind, `emit/<channel>`.
    pub fn event_kind(&self) -> &str {
        &self.shared.kind
    }

    /// What the command runner counted, when there is a command and the pipeline runs.
    pub fn hook_stats(&self) -> Option<HookStats> {
        self.shared.hook.as_ref().map(hook::Hook::stats)
    }

    /// The event for a call that ended with `result`, as the response phase sees it.
    pub fn result_event(&self, ctx: &CallContext, result: &mcp::CallToolResult) -> Event {
        let outcome =
            if result.is_error == Some(true) { CallOutcome::Error } else { CallOutcome::Ok };
        let mut event = self.shared.base(outcome);
        if let Some(target) = &ctx.target {
            event = event
                .with("server", target.server.clone())
                .with("tool", target.original.clone())
                .with("exposed", target.exposed.clone());
        }
        for (key, value) in ctx.principal.fields() {
            event = event.with(key, value);
        }
        if let Some(session) = &ctx.session {
            event = event.with("session", session.clone());
        }
        if let Some(id) = &ctx.request_id {
            event = event.with("request_id", id.clone());
        }
        event = event
            .with("duration_ms", ctx.started.elapsed().as_secs_f64() * 1000.0)
            .with("is_error", result.is_error.unwrap_or(false));
        let json = serde_json::to_value(result).unwrap_or(Value::Null);
        match self.shared.include {
            Include::Hash => {
                let canonical = toolgate_core::canonical::canonical_json(&json);
                event
                    .with("result_sha256", toolgate_core::hash::sha256_hex(canonical.as_bytes()))
                    .with("result_bytes", canonical.len())
            }
            Include::Result => event.with("result", json),
        }
    }
}

// === impl Shared ===

impl Shared {
    /// Whether calls with `outcome` are published.
    fn wants(&self, outcome: CallOutcome) -> bool {
        self.outcomes.contains(&outcome)
    }

    /// Whether anyone would see an event now: a bus subscriber, or the command.
    fn heard(&self) -> bool {
        self.hook.is_some() || self.events.wants(&self.kind)
    }

    /// An event with its channel, entry and outcome.
    fn base(&self, outcome: CallOutcome) -> Event {
        Event::new(self.kind.clone())
            .with("channel", self.channel.clone())
            .with("interceptor", self.name.clone())
            .with("outcome", outcome.as_str())
    }

    /// Publishes `event` on the bus and gives it to the command.
    fn send(&self, event: Event) {
        if let Some(hook) = &self.hook {
            hook.run(&event);
        }
        self.events.publish(event);
    }
}

impl Interceptor for Emit {
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
        if let Message::ToolResult(result) = message {
            let outcome =
                if result.is_error == Some(true) { CallOutcome::Error } else { CallOutcome::Ok };
            if self.shared.wants(outcome) && self.shared.heard() {
                self.shared.send(self.result_event(ctx, result));
            }
        }
        Box::pin(async { Ok(Outcome::Continue) })
    }
}

// === options ===

fn read_channel(options: &mut Options<'_>) -> Option<String> {
    let path = options.at("channel");
    let Some(value) = options.get("channel") else {
        options.error(
            &path,
            "missing: the channel events are published on (emit/<channel>), such as \"deploys\"",
        );
        return None;
    };
    let channel = options.string("channel")?;
    let valid = !channel.is_empty()
        && channel.len() <= 64
        && channel.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if !valid {
        options.error(
            &path,
            format!(
                "expected 1 to 64 letters, digits, `_`, `-` or `.`, found {value} (the channel \
                 is one segment of the event kind emit/<channel>)"
            ),
        );
        return None;
    }
    Some(channel.to_owned())
}

fn read_outcomes(options: &mut Options<'_>) -> Vec<CallOutcome> {
    let all = vec![CallOutcome::Ok, CallOutcome::Error, CallOutcome::Refused];
    let Some(value) = options.get("outcomes") else { return all };
    let path = options.at("outcomes");
    let Some(items) = value.as_array().filter(|items| !items.is_empty()) else {
        options.error(
            &path,
            format!("expected a non-empty array of \"ok\", \"error\", \"refused\", found {value}"),
        );
        return all;
    };
    let mut outcomes = Vec::new();
    for (index, item) in items.iter().enumerate() {
        match item.as_str().and_then(CallOutcome::from_name) {
            Some(outcome) if !outcomes.contains(&outcome) => outcomes.push(outcome),
            Some(_) => {}
            None => options.error(
                &format!("{path}[{index}]"),
                format!("expected \"ok\", \"error\" or \"refused\", found {item}"),
            ),
        }
    }
    outcomes
}

fn read_command(options: &mut Options<'_>) -> Option<Vec<String>> {
    let value = options.get("command")?;
    let command: Option<Vec<String>> = value
        .as_array()
        .filter(|items| !items.is_empty())
        .and_then(|items| items.iter().map(|i| i.as_str().map(str::to_owned)).collect());
    match command {
        Some(command) if !command[0].is_empty() => Some(command),
        _ => {
            let path = options.at("command");
            options.error(
                &path,
                format!(
                    "expected a non-empty array of strings (the program, then its arguments), \
                     found {value}"
                ),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests;
