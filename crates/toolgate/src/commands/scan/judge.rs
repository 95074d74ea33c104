//! `toolgate scan --judge`: the items' texts judged by the agent's model, as a second opinion
//! (`toolgate_integrity::judge` builds the requests and reads the answers; this sends them).
//!
//! Requests go out [`PARALLEL`] at a time. A request that fails, or whose answer cannot be
//! read, is reported with its items and the others go on; its items are not judged.

use std::io::IsTerminal as _;
use std::sync::Arc;

use futures::StreamExt as _;
use serde::Serialize;
use serde_json::json;
use toolgate_integrity::judge::{self, Batch, JudgeFinding, NotJudged, Subject};
use toolgate_llm::chat::{ChatRequest, Message, StopReason, Usage};
use toolgate_llm::pricing;
use toolgate_llm::provider::{Finished, Provider, StreamEvent};
use toolgate_llm::tokens::Encoding;

use crate::commands::agent::ModelArgs;

/// The most input tokens one `scan --judge` sends unless `--judge-limit` says otherwise: some
/// 3,900 tools of real servers (about 258 tokens each), $0.40 at `gpt-4.1-mini`'s list price.
/// A server decides how many tools it lists; this decides what that may cost.
pub(crate) const DEFAULT_LIMIT: usize = 1_000_000;

/// A usage error when judging `subjects` would send more than `limit` input tokens.
pub(crate) fn within_limit(subjects: &[Subject], limit: usize) -> anyhow::Result<()> {
    let batches = Judge::batches(subjects);
    let tokens: usize = batches.iter().map(|batch| batch.tokens).sum();
    if tokens > limit {
        return Err(crate::setup::usage(format!(
            "--judge would send about {tokens} input tokens ({} items in {} requests), over \
             --judge-limit {limit}: nothing was sent; choose servers with --server, or raise \
             --judge-limit",
            subjects.len(),
            batches.len()
        )));
    }
    Ok(())
}

/// Requests in flight at once.
pub(crate) const PARALLEL: usize = 4;

/// The most tokens an answer may have when `[agent] max_tokens` does not say (a verdict is
/// some 15 tokens, a poisoned one some 80; a reasoning model's thinking counts too).
const MAX_TOKENS: u32 = 8192;

/// The most reasoning text kept from one answer (bytes); past it the request is given up.
const REASONING_LIMIT: usize = 1024 * 1024;

/// The encoding requests are measured in (the providers' own counts differ a little).
pub(crate) const ENCODING: Encoding = Encoding::O200kBase;

/// The model that judges, ready to ask.
pub(crate) struct Judge {
    provider: Arc<dyn Provider>,
    provider_name: String,
    model: String,
    temperature: Option<f32>,
    max_tokens: u32,
}

/// A request that did not give verdicts.
#[derive(Debug, Serialize)]
pub(crate) struct Failure {
    /// Which request (1-based, in the order the items are listed).
    pub(crate) request: usize,
    /// Its items, `server/name`.
    pub(crate) items: Vec<String>,
    pub(crate) error: String,
}

/// What the judge said, and what it cost.
pub(crate) struct Report {
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) requests: usize,
    pub(crate) usage: Usage,
    /// Whether some request's usage was not reported and was counted here instead.
    pub(crate) usage_estimated: bool,
    /// Findings, each with the index of its subject.
    pub(crate) findings: Vec<(usize, JudgeFinding)>,
    /// Items without a verdict, each with the index of its subject.
    pub(crate) not_judged: Vec<(usize, NotJudged)>,
    pub(crate) errors: Vec<Failure>,
    /// The texts the judge was shown only part of.
    pub(crate) cut: Vec<Cut>,
}

/// A text the judge was shown only part of.
#[derive(Debug, Serialize)]
pub(crate) struct Cut {
    pub(crate) server: String,
    pub(crate) kind: &'static str,
    pub(crate) item: String,
    pub(crate) field: String,
    /// Its length.
    pub(crate) bytes: usize,
    /// How much of it was shown.
    pub(crate) shown: usize,
}

impl Report {
    /// The estimated cost at list prices, when the model's price is known.
    pub(crate) fn cost_usd(&self) -> Option<f64> {
        pricing::cost_usd(&self.model, &self.usage)
    }

    /// The `judge` object of `scan --json`.
    pub(crate) fn json(&self) -> serde_json::Value {
        let mut value = json!({
            "provider": self.provider,
            "model": self.model,
            "requests": self.requests,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "not_judged": self.not_judged.iter().map(|(_, n)| n).collect::<Vec<_>>(),
            "errors": self.errors,
            "cut": self.cut,
        });
        if let Some(cost) = self.cost_usd() {
            value["cost_usd"] = json!(cost);
            value["prices_as_of"] = json!(pricing::PRICES_AS_OF);
        }
        if self.usage_estimated {
            value["usage_estimated"] = json!(true);
        }
        value
    }

    /// One line: the model, requests, tokens and cost.
    pub(crate) fn summary(&self) -> String {
        let estimated =
            if self.usage_estimated { " (some counted here: not reported)" } else { "" };
        let cost = match self.cost_usd() {
            Some(cost) => format!(", about ${cost:.4} at list prices of {}", pricing::PRICES_AS_OF),
            None => ", cost unknown (no list price for this model)".to_owned(),
        };
        format!(
            "judge {} ({}): {} requests, {} tokens in, {} out{estimated}{cost}",
            self.model,
            self.provider,
            self.requests,
            self.usage.input_tokens,
            self.usage.output_tokens
        )
    }
}

impl Judge {
    /// The model `[agent]` and the flags choose; a usage error naming what to set when none
    /// is configured.
    pub(crate) fn new(
        config: &toolgate_config::AgentConfig,
        flags: &ModelArgs,
    ) -> anyhow::Result<Judge> {
        let resolved = flags.resolve(config, Default::default()).map_err(|error| {
            crate::setup::usage(format!("--judge needs a model to ask: {error:#}"))
        })?;
        let provider =
            toolgate_llm::provider::connect(resolved.provider.clone()).map_err(|error| {
                crate::setup::usage(format!(
                    "--judge: cannot set up the {} provider: {error}",
                    resolved.provider_name
                ))
            })?;
        Ok(Judge {
            provider,
            provider_name: resolved.provider_name,
            model: resolved.settings.model,
            temperature: resolved.settings.temperature,
            max_tokens: resolved.settings.max_tokens.unwrap_or(MAX_TOKENS),
        })
    }

    /// `subjects` packed into requests under the default budget.
    pub(crate) fn batches(subjects: &[Subject]) -> Vec<Batch> {
        judge::batches(subjects, judge::DEFAULT_BUDGET, &|text| ENCODING.count(text))
    }

    /// Asks about every one of `subjects`; progress on stderr when there is more than one
    /// request.
    pub(crate) async fn judge(&self, subjects: &[Subject]) -> Report {
        let batches = Judge::batches(subjects);
        let total = batches.len();
        let mut report = Report {
            provider: self.provider_name.clone(),
            model: self.model.clone(),
            requests: total,
            usage: Usage::default(),
            usage_estimated: false,
            findings: Vec::new(),
            not_judged: Vec::new(),
            errors: Vec::new(),
            cut: subjects
                .iter()
                .flat_map(|subject| {
                    subject.cut().map(|text| Cut {
                        server: subject.server.clone(),
                        kind: subject.kind,
                        item: subject.name.clone(),
                        field: text.field.clone(),
                        bytes: text.text.len(),
                        shown: text.shown,
                    })
                })
                .collect(),
        };
        let mut progress = Progress::new(total, subjects.len());
        let mut answers: Vec<Option<Result<Finished, String>>> = vec![None; total];
        let mut stream = futures::stream::iter(batches.iter().enumerate())
            .map(|(at, batch)| async move { (at, self.ask(at + 1, total, batch).await) })
            .buffer_unordered(PARALLEL);
        while let Some((at, answer)) = stream.next().await {
            progress.answered(batches[at].items.len());
            answers[at] = Some(answer);
        }
        drop(stream);
        progress.finish();
        for ((at, batch), answer) in batches.iter().enumerate().zip(answers) {
            let answer = answer.unwrap_or_else(|| Err("never sent".to_owned()));
            self.take(&mut report, subjects, at + 1, batch, answer);
        }
        report
    }

    /// Adds request `number`'s outcome to `report`.
    fn take(
        &self,
        report: &mut Report,
        subjects: &[Subject],
        number: usize,
        batch: &Batch,
        answer: Result<Finished, String>,
    ) {
        let read = answer.and_then(|finished| {
            let text = finished.turn.text;
            match finished.usage {
                Some(usage) => report.usage = report.usage + usage,
                None => {
                    report.usage_estimated = true;
                    report.usage = report.usage
                        + Usage {
                            input_tokens: batch.tokens as u64,
                            output_tokens: ENCODING.count(&text) as u64,
                            ..Usage::default()
                        };
                }
            }
            judge::read_answer(&text, batch.items.len()).map_err(|error| {
                let cut_off = if finished.stop == StopReason::MaxTokens {
                    " (the answer was cut off at max_tokens)"
                } else {
                    ""
                };
                format!("{error}{cut_off}")
            })
        });
        match read {
            Ok(judged) => {
                let added = judge::findings(subjects, batch, &judged);
                report.findings.extend(added.findings);
                report.not_judged.extend(added.not_judged);
            }
            Err(error) => {
                let why = format!("request {number} failed");
                report.not_judged.extend(
                    batch.items.iter().map(|&at| (at, NotJudged::new(&subjects[at], &why))),
                );
                report.errors.push(Failure {
                    request: number,
                    items: batch
                        .items
                        .iter()
                        .map(|&at| format!("{}/{}", subjects[at].server, subjects[at].name))
                        .collect(),
                    error,
                });
            }
        }
    }

    /// Sends `batch` as request `number` of `total`; the whole answer, read to its limits.
    async fn ask(&self, number: usize, total: usize, batch: &Batch) -> Result<Finished, String> {
        let request = ChatRequest {
            model: self.model.clone(),
            system: Some(judge::SYSTEM_PROMPT.to_owned()),
            messages: vec![Message::user_text(batch.user.clone())],
            tools: Vec::new(),
            temperature: self.temperature,
            max_tokens: Some(self.max_tokens),
        };
        let mut stream = self.provider.stream(request);
        let (mut text, mut reasoning) = (0usize, 0usize);
        while let Some(event) = stream.next().await {
            match event.map_err(|error| error.to_string())? {
                StreamEvent::Text(part) => {
                    text += part.len();
                    if text > judge::ANSWER_LIMIT {
                        return Err(format!(
                            "the answer passed {} bytes: not read further",
                            judge::ANSWER_LIMIT
                        ));
                    }
                }
                StreamEvent::Reasoning(part) => {
                    reasoning += part.len();
                    if reasoning > REASONING_LIMIT {
                        return Err(format!(
                            "the model's reasoning passed {REASONING_LIMIT} bytes: not read further"
                        ));
                    }
                }
                StreamEvent::Retrying { attempt, wait, reason } => eprintln!(
                    "toolgate scan: judge request {number}/{total}: try {attempt} failed ({reason}); \
                     again in {}",
                    toolgate_core::duration::format(wait)
                ),
                StreamEvent::Finished(finished) => return Ok(finished),
                StreamEvent::ToolCallStarted { .. } => {}
            }
        }
        Err("the stream ended without an answer".to_owned())
    }
}

/// Progress on stderr: a line that rewrites itself on a terminal, a line per answer otherwise;
/// nothing for a single request.
struct Progress {
    total: usize,
    items: usize,
    terminal: bool,
    done: usize,
    items_done: usize,
}

impl Progress {
    fn new(total: usize, items: usize) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        Progress { total, items, terminal, done: 0, items_done: 0 }
    }

    /// A request of `items` items was answered (or failed).
    fn answered(&mut self, items: usize) {
        self.done += 1;
        self.items_done += items;
        if self.total < 2 {
            return;
        }
        let line = format!(
            "toolgate scan: judge: {}/{} requests answered ({}/{} items)",
            self.done, self.total, self.items_done, self.items
        );
        if self.terminal {
            eprint!("\r{line}");
        } else {
            eprintln!("{line}");
        }
    }

    fn finish(&self) {
        if self.terminal && self.total >= 2 {
            eprintln!();
        }
    }
}
