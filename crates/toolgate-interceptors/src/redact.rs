//! `redact`: replaces secrets and personal data in what upstreams send back (tool results,
//! resources, prompts, completions, log messages and progress) and, when asked, in a call's
//! arguments before the upstream sees them, with `[REDACTED:<kind>]`.
//!
//! ```toml
//! [[pipeline]]
//! kind = "redact"
//! detectors = ["all"]                  # or a list: ["aws_access_key", "email", ...]
//! exclude = ["email"]                  # kinds to leave out (default: none)
//! custom = [{ name = "employee_id", regex = "EMP-[0-9]{6}" }]
//! results = true                       # what upstreams send back (default: true)
//! arguments = false                    # tools/call arguments, before the upstream (default: false)
//!
//! [[pipeline]]
//! kind = "redact"
//! name = "redact_crm_arguments"        # a second entry needs its own name
//! tools = ["crm_*"]                    # the usual filters: only these tools
//! arguments = true
//! results = false
//! ```
//!
//! The detectors are `toolgate-secrets`' (its crate docs have each kind's exact rule):
//! `private_key`, `jwt`, `anthropic_key`, `openai_key`, `github_token`, `slack_webhook`,
//! `slack_token`, `stripe_key`, `google_api_key`, `aws_access_key`, `aws_secret_key`,
//! `url_credentials`, `bearer_token`, `iban` (mod-97 checked), `card_number` (Luhn-checked,
//! with a card network's prefix), `email`, and the entry's `custom` ones.
//!
//! - **Hooks**: with `results`, `tools/call`, `resources/read`, `prompts/get` and
//!   `completion/complete`, response phase, and `notifications/message` and
//!   `notifications/progress`, request phase (the notifications an upstream sends a client);
//!   with `arguments`, `tools/call`, request phase. **Type**: mutation. **Fails open** like
//!   every transform; it has nothing that can fail (no IO), and it redacts on the calling task
//!   before the pipeline's timer runs, so a timeout cannot let a message through halfway.
//! - **Per server and tool**: the usual `servers` and `tools` globs (for `resources/read`,
//!   `tools` is matched against the resource's URI at its server).
//!
//! # What is redacted
//!
//! | message | parts |
//! |---|---|
//! | `tools/call` result | every text block; the text of every embedded text resource; `structuredContent` (every string, object keys too, and numbers that are card numbers) |
//! | `resources/read` result | the text of every text content |
//! | `prompts/get` result | its description; every message's text, and the text of every embedded text resource |
//! | `completion/complete` result | every value |
//! | `notifications/message` (an upstream's log message) | every string of its `data` (keys too), and its logger |
//! | `notifications/progress` | its message |
//! | `tools/call` request (`arguments = true`) | every string of `arguments` (keys too) |
//!
//! Not redacted: images, audio and blobs (base64 is not searched), resource links, URIs,
//! `_meta`, and error messages the gateway itself writes. A text block that is JSON stays
//! valid JSON: the markers contain no quote or backslash, and where a finding spans one (a
//! private key block across two JSON strings, a custom regex across a quote) the block is
//! redacted as parsed JSON instead and written back compactly.
//!
//! A result with nothing found passes unchanged (not copied).
//!
//! # Events
//!
//! Every message it changed publishes `transform/applied` with `counts` (kind → how many,
//! `{"email": 2}`), `part` (`result`, `resource` or `arguments`), and tokens and bytes before
//! and after. The values themselves are never in an event, a log line or an error.
//!
//! # Arguments, approval and the audit log
//!
//! `redact` is a mutator, so in the request phase it runs before every validator
//! (`validate_args`, `approval`, `limits`): they see the redacted arguments. `approval`
//! digests what it is shown, the redacted arguments, and the gateway's dispatch check
//! compares that digest with the arguments it is about to send, which are the same redacted
//! arguments, so approval and dispatch agree, and a person approves exactly what the
//! upstream will receive. (Remembered approvals are per digest: two calls that differ only in
//! a redacted value send the same arguments and share one.) Among mutators (`policy`,
//! `arg_map`, other transforms) the order is `priority`, then config order: a `policy` rule
//! that matches on an argument's value must come before `redact` to see it. A schema with a
//! `pattern` for a redacted field will refuse the redacted value in `validate_args`, which
//! is right: the upstream would not accept it either.
//!
//! The gateway records `tools/call/started` (with the caller's arguments) before the
//! pipeline runs. What any `redact` entry looks for is added to the audit log's own
//! detectors (`[audit] detect`, see [`selection`]), so the recorded copy of the arguments never
//! holds a value the pipeline redacts.
//!
//! # Option errors
//!
//! ```text
//! pipeline[0].detectors[1]: unknown detector "emails" (known: all, private_key, jwt, ...)
//! pipeline[0].custom[0].regex: the regex of detector "employee_id" does not compile: ...
//! pipeline[0].custom[0].name: invalid detector name "Employee ID": use 1 to 64 of a-z, 0-9 and _, starting with a letter
//! pipeline[0].custom[1].name: two custom detectors are named "employee_id"
//! pipeline[0].results: with `arguments = false` too, this entry redacts nothing
//! pipeline[0].detectors: no detector is left (list kinds, or add `custom` ones)
//! ```

#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577) but still spoken

mod settings;

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use toolgate_audit::EventBus;
use toolgate_config::InterceptorConfig;
use toolgate_core::mcp;
use toolgate_intercept::{
    CallContext, Descriptor, Hook, InterceptError, InterceptionEvent, Interceptor, Message,
    Outcome, Phase,
};
use toolgate_llm::tokens::Encoding;
use toolgate_secrets::{Counts, Detector, Selection};

use crate::Services;
use crate::options::{OptionError, Options};
use crate::transform::{self, Applied};

/// The config `kind`.
pub const KIND: &str = "redact";

/// The `redact` interceptor.
#[derive(Debug)]
pub struct Redact {
    descriptor: Descriptor,
    detector: Arc<Detector>,
    events: EventBus,
}

/// A message with its secrets replaced, and what was replaced.
#[derive(Debug, Clone, PartialEq)]
pub struct Redacted<T> {
    /// The message as the next one sees it.
    pub message: T,
    /// How many of each kind.
    pub counts: Counts,
}

/// What every `redact` entry of `entries` looks for, together (entries with option errors
/// count with what is valid in them): the binary adds it to the audit log's detectors.
pub fn selection(entries: &[InterceptorConfig]) -> Selection {
    let mut all = Selection::none();
    for entry in entries.iter().filter(|entry| entry.kind == KIND) {
        all.extend(&settings::selection_of(entry));
    }
    all
}

// === impl Redact ===

impl Redact {
    /// Builds it from its `[[pipeline]]` entry.
    pub fn from_config(
        entry: &InterceptorConfig,
        services: &Services,
    ) -> Result<Redact, Vec<OptionError>> {
        let mut options = Options::new(entry.path.clone(), &entry.options);
        let settings = settings::read(&mut options);
        let events = [
            InterceptionEvent::ToolsCall,
            InterceptionEvent::ResourcesRead,
            InterceptionEvent::PromptsGet,
            InterceptionEvent::CompletionComplete,
        ];
        let mut descriptor = transform::descriptor(KIND, &events);
        let notifications = [InterceptionEvent::LoggingMessage, InterceptionEvent::Progress];
        let hook = Hook::new(notifications.iter().map(|e| e.as_str()), Phase::Request)
            .expect("literal events");
        descriptor.hooks.push(hook);
        if !settings.results {
            descriptor.hooks.clear();
        }
        if settings.arguments {
            let hook = Hook::new(["tools/call"], Phase::Request).expect("a literal event");
            descriptor.hooks.push(hook);
        }
        let descriptor = options.configure(descriptor, entry);
        let detector = Arc::new(Detector::new(&settings.selection));
        options.finish(descriptor, |descriptor| Redact {
            descriptor,
            detector,
            events: services.events.clone(),
        })
    }

    /// The detectors it runs.
    pub fn detector(&self) -> &Arc<Detector> {
        &self.detector
    }

    /// `block` with its text redacted (a text block, or an embedded text resource), adding
    /// to `counts`; `None` when nothing was found.
    fn redact_block(&self, block: &mcp::ContentBlock, counts: &mut Counts) -> Option<String> {
        let text = match block {
            mcp::ContentBlock::Text(text) => &text.text,
            mcp::ContentBlock::Resource(embedded) => match &embedded.resource {
                mcp::ResourceContents::TextResourceContents { text, .. } => text,
                _ => return None,
            },
            _ => return None,
        };
        self.redact_text(text, counts)
    }

    /// `result` with its text blocks, embedded text resources and `structuredContent`
    /// redacted; `None` when nothing was found.
    pub fn redact_result(
        &self,
        result: &mcp::CallToolResult,
    ) -> Option<Redacted<mcp::CallToolResult>> {
        let mut counts = Counts::default();
        let mut rewritten: Option<mcp::CallToolResult> = None;
        for (index, block) in result.content.iter().enumerate() {
            let Some(new) = self.redact_block(block, &mut counts) else { continue };
            let copy = rewritten.get_or_insert_with(|| result.clone());
            set_text(&mut copy.content[index], new);
        }
        if result.structured_content.is_some() {
            // Redacted in the copy (made now if no text changed): one copy, not two.
            let text_changed = rewritten.is_some();
            let copy = rewritten.get_or_insert_with(|| result.clone());
            let found = match &mut copy.structured_content {
                Some(structured) => self.detector.redact_json(structured),
                None => Counts::default(),
            };
            if found.is_empty() && !text_changed {
                rewritten = None;
            }
            counts.merge(&found);
        }
        rewritten.map(|message| Redacted { message, counts })
    }

    /// `result` with the text of its text contents redacted; `None` when nothing was found.
    pub fn redact_resource(
        &self,
        result: &mcp::ReadResourceResult,
    ) -> Option<Redacted<mcp::ReadResourceResult>> {
        let mut counts = Counts::default();
        let mut rewritten: Option<mcp::ReadResourceResult> = None;
        for (index, contents) in result.contents.iter().enumerate() {
            let mcp::ResourceContents::TextResourceContents { text, .. } = contents else {
                continue;
            };
            let Some(new) = self.redact_text(text, &mut counts) else { continue };
            let copy = rewritten.get_or_insert_with(|| result.clone());
            if let mcp::ResourceContents::TextResourceContents { text, .. } =
                &mut copy.contents[index]
            {
                *text = new;
            }
        }
        rewritten.map(|message| Redacted { message, counts })
    }

    /// `result` with its description, its messages' text and embedded text resources
    /// redacted; `None` when nothing was found.
    pub fn redact_prompt(
        &self,
        result: &mcp::GetPromptResult,
    ) -> Option<Redacted<mcp::GetPromptResult>> {
        let mut counts = Counts::default();
        let mut rewritten: Option<mcp::GetPromptResult> = None;
        if let Some(description) = &result.description
            && let Some(new) = self.redact_text(description, &mut counts)
        {
            rewritten.get_or_insert_with(|| result.clone()).description = Some(new);
        }
        for (index, message) in result.messages.iter().enumerate() {
            let Some(new) = self.redact_block(&message.content, &mut counts) else { continue };
            let copy = rewritten.get_or_insert_with(|| result.clone());
            set_text(&mut copy.messages[index].content, new);
        }
        rewritten.map(|message| Redacted { message, counts })
    }

    /// `result` with every completion value redacted; `None` when nothing was found.
    pub fn redact_completion(
        &self,
        result: &mcp::CompleteResult,
    ) -> Option<Redacted<mcp::CompleteResult>> {
        let mut counts = Counts::default();
        let mut rewritten: Option<mcp::CompleteResult> = None;
        for (index, value) in result.completion.values.iter().enumerate() {
            let Some(new) = self.redact_text(value, &mut counts) else { continue };
            rewritten.get_or_insert_with(|| result.clone()).completion.values[index] = new;
        }
        rewritten.map(|message| Redacted { message, counts })
    }

    /// An upstream's log message with every string of its data (keys too) and its logger
    /// redacted; `None` when nothing was found.
    pub fn redact_log(
        &self,
        params: &mcp::LoggingMessageNotificationParam,
    ) -> Option<Redacted<mcp::LoggingMessageNotificationParam>> {
        let mut counts = Counts::default();
        let mut data = params.data.clone();
        counts.merge(&self.detector.redact_json(&mut data));
        let logger = params.logger.as_deref().and_then(|l| self.redact_text(l, &mut counts));
        if counts.is_empty() {
            return None;
        }
        let mut message = params.clone();
        message.data = data;
        if logger.is_some() {
            message.logger = logger;
        }
        Some(Redacted { message, counts })
    }

    /// Progress with its message redacted; `None` when nothing was found.
    pub fn redact_progress(
        &self,
        params: &mcp::ProgressNotificationParam,
    ) -> Option<Redacted<mcp::ProgressNotificationParam>> {
        let mut counts = Counts::default();
        let new = self.redact_text(params.message.as_deref()?, &mut counts)?;
        let mut message = params.clone();
        message.message = Some(new);
        Some(Redacted { message, counts })
    }

    /// `call` with every string of its arguments redacted; `None` when nothing was found.
    pub fn redact_arguments(
        &self,
        call: &mcp::CallToolRequestParams,
    ) -> Option<Redacted<mcp::CallToolRequestParams>> {
        let arguments = call.arguments.as_ref()?;
        let mut value = Value::Object(arguments.clone());
        let counts = self.detector.redact_json(&mut value);
        if counts.is_empty() {
            return None;
        }
        let Value::Object(arguments) = value else { unreachable!("an object stays an object") };
        let mut message = call.clone();
        message.arguments = Some(arguments);
        Some(Redacted { message, counts })
    }

    /// `text` redacted (adding to `counts`), or `None` when nothing was found. JSON text
    /// stays valid JSON (see the module docs).
    fn redact_text(&self, text: &str, counts: &mut Counts) -> Option<String> {
        let redacted = self.detector.redact_text(text);
        let std::borrow::Cow::Owned(new) = redacted.text else { return None };
        counts.merge(&redacted.counts);
        Some(new)
    }

    /// Publishes `transform/applied` for one changed message (`part`), when anyone listens.
    fn applied(&self, ctx: &CallContext, part: &str, before: &str, after: &str, counts: &Counts) {
        Applied {
            interceptor: &self.descriptor.name,
            kind: KIND,
            before,
            after,
            encoding: Encoding::default(),
            details: vec![("counts", counts.to_json()), ("part", Value::from(part))],
        }
        .publish(&self.events, ctx);
    }

    /// The outcome of redacting `part` of a message (`done`: what redacting it gave, `wrap`:
    /// how that becomes a message again), publishing what changed (the JSON before and after).
    fn rewritten<T: serde::Serialize>(
        &self,
        ctx: &CallContext,
        part: &str,
        original: &T,
        done: Option<Redacted<T>>,
        wrap: impl FnOnce(T) -> Message,
    ) -> Outcome {
        let Some(done) = done else { return Outcome::Continue };
        if self.events.wants(transform::APPLIED) {
            let json = |value: &T| serde_json::to_string(value).unwrap_or_default();
            self.applied(ctx, part, &json(original), &json(&done.message), &done.counts);
        }
        Outcome::Rewrite(wrap(done.message))
    }

    /// What `message` becomes, publishing what changed.
    fn rewrite(&self, message: &Message, ctx: &CallContext) -> Outcome {
        let listening = self.events.wants(transform::APPLIED);
        match message {
            Message::ToolResult(result) => match self.redact_result(result) {
                None => Outcome::Continue,
                Some(done) => {
                    if listening {
                        let before = transform::model_text(result);
                        let after = transform::model_text(&done.message);
                        self.applied(ctx, "result", &before, &after, &done.counts);
                    }
                    Outcome::Rewrite(Message::ToolResult(done.message))
                }
            },
            Message::Resource(result) => match self.redact_resource(result) {
                None => Outcome::Continue,
                Some(done) => {
                    if listening {
                        let before = transform::resource_text(result);
                        let after = transform::resource_text(&done.message);
                        self.applied(ctx, "resource", &before, &after, &done.counts);
                    }
                    Outcome::Rewrite(Message::Resource(done.message))
                }
            },
            Message::Prompt(result) => {
                self.rewritten(ctx, "prompt", result, self.redact_prompt(result), Message::Prompt)
            }
            Message::Completion(result) => {
                let done = self.redact_completion(result);
                self.rewritten(ctx, "completion", result, done, Message::Completion)
            }
            Message::Log(params) => {
                self.rewritten(ctx, "log", params, self.redact_log(params), Message::Log)
            }
            Message::Progress(params) => {
                let done = self.redact_progress(params);
                self.rewritten(ctx, "progress", params, done, Message::Progress)
            }
            Message::CallTool(call) => match self.redact_arguments(call) {
                None => Outcome::Continue,
                Some(done) => {
                    if listening {
                        let json = |c: &mcp::CallToolRequestParams| {
                            c.arguments.as_ref().map(|a| Value::Object(a.clone()).to_string())
                        };
                        let (before, after) = (json(call), json(&done.message));
                        let (before, after) =
                            (before.unwrap_or_default(), after.unwrap_or_default());
                        self.applied(ctx, "arguments", &before, &after, &done.counts);
                    }
                    Outcome::Rewrite(Message::CallTool(done.message))
                }
            },
            _ => Outcome::Continue,
        }
    }
}

impl Interceptor for Redact {
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
        // On the calling task, before the future the pipeline times: see the module docs.
        let outcome = self.rewrite(message, ctx);
        Box::pin(async move { Ok(outcome) })
    }
}

/// Puts `text` in place of the text of `block` (a text block or an embedded text resource).
fn set_text(block: &mut mcp::ContentBlock, text: String) {
    match block {
        mcp::ContentBlock::Text(block) => block.text = text,
        mcp::ContentBlock::Resource(embedded) => {
            if let mcp::ResourceContents::TextResourceContents { text: old, .. } =
                &mut embedded.resource
            {
                *old = text;
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
