//! The agent's console: what `toolgate run` and `toolgate chat` show on the terminal (the
//! agent's [`Frontend`]) and what they ask the person there (its [`Interaction`]).
//!
//! - The answer goes to stdout, rendered as Markdown on a terminal and as it is when piped.
//! - Reasoning (dimmed), tool call lines, notices and questions go to stderr, so that a piped
//!   answer is only the answer.
//! - Questions (approvals, upstreams' forms, sampling consent) are asked only when both stdin
//!   and stderr are terminals, one at a time, through a line editor (its Ctrl-C cancels the
//!   question); otherwise approvals are refused saying nobody could be asked, forms declined,
//!   and sampling refused unless `--allow-sampling`.

use std::collections::HashMap;
use std::io::{IsTerminal as _, Write as _};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use toolgate_agent::host::{ApprovalChoice, ApprovalQuestion, Frontend, Interaction, ToolOutcome};
use toolgate_core::mcp;

use crate::approval;
use crate::markdown::{MarkdownStream, Mode};
use crate::status::{Board, Outcome as LineOutcome, ToolLine};
use crate::{LineInput, Paint};

/// How the console behaves.
#[derive(Debug, Clone, Copy)]
pub struct ConsoleOptions {
    /// Full arguments and results of tool calls.
    pub verbose: bool,
    /// Stream the answer to stdout (not with `run --json`).
    pub answer_to_stdout: bool,
    /// Let upstreams sample without asking.
    pub allow_sampling: bool,
}

/// The terminal, as the agent's frontend and interaction.
pub struct Console {
    options: ConsoleOptions,
    answer: Mutex<Option<MarkdownStream<std::io::Stdout>>>,
    reasoning: Mutex<bool>,
    tools: Mutex<HashMap<String, ToolLine>>,
    paint: Paint,
    interactive: bool,
    stderr_tty: bool,
    asking: Arc<tokio::sync::Mutex<()>>,
    /// The running turn's token: Ctrl-C while a question is asked cancels the turn, as it
    /// does while the model streams or tools run.
    turn: Mutex<Option<CancellationToken>>,
}

impl Console {
    /// The console on this process's terminal (stdout for the answer, stderr for the rest).
    pub fn new(options: ConsoleOptions) -> Console {
        let stdout_tty = std::io::stdout().is_terminal();
        let stderr_tty = std::io::stderr().is_terminal();
        let answer = options
            .answer_to_stdout
            .then(|| MarkdownStream::new(std::io::stdout(), Mode::for_output(stdout_tty)));
        Console {
            options,
            answer: Mutex::new(answer),
            reasoning: Mutex::new(false),
            tools: Mutex::default(),
            paint: Paint::new(crate::color_enabled(stderr_tty)),
            interactive: std::io::stdin().is_terminal() && stderr_tty,
            stderr_tty,
            asking: Arc::default(),
            turn: Mutex::default(),
        }
    }

    /// The token of the turn that starts (cancelled by Ctrl-C during a question).
    pub fn start_turn(&self, cancel: CancellationToken) {
        *self.turn.lock().unwrap_or_else(PoisonError::into_inner) = Some(cancel);
    }

    /// Ends what is shown of a turn (the answer's last block, a pending reasoning line).
    pub fn end_turn(&self) {
        self.end_reasoning();
        if let Some(answer) = self.answer.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            let _ = answer.finish();
        }
    }

    /// The end: as [`Console::end_turn`].
    pub fn finish(&self) {
        self.end_turn();
    }

    /// A dim line on stderr.
    pub fn note(&self, text: &str) {
        self.end_reasoning();
        eprintln!("{}", self.paint.dim(&crate::sanitize(text)));
    }

    /// An error line on stderr.
    pub fn error(&self, text: &str) {
        self.end_reasoning();
        eprintln!("{} {}", self.paint.fg(anstyle::AnsiColor::Red, "error:"), crate::sanitize(text));
    }

    fn end_reasoning(&self) {
        let mut reasoning = self.reasoning.lock().unwrap_or_else(PoisonError::into_inner);
        if *reasoning {
            eprintln!();
            *reasoning = false;
        }
    }

    /// Runs `ask` on a blocking thread with a line editor on the terminal, one question at a
    /// time; `None` if it could not be asked.
    fn ask<T, F>(&self, ask: F) -> BoxFuture<'static, Option<T>>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn LineInput, &mut dyn std::io::Write, Paint) -> std::io::Result<T>
            + Send
            + 'static,
    {
        let asking = self.asking.clone();
        let paint = self.paint;
        let board = Board::stderr(self.stderr_tty, paint);
        let turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner).clone();
        self.end_reasoning();
        Box::pin(async move {
            let _one_at_a_time = asking.lock().await;
            // The running calls' lines are cleared while the person answers.
            let _paused = board.pause();
            tokio::task::spawn_blocking(move || {
                let mut input = EditorInput::new(turn).ok()?;
                let mut err = std::io::stderr();
                ask(&mut input, &mut err, paint).ok()
            })
            .await
            .ok()
            .flatten()
        })
    }
}

impl Frontend for Console {
    fn text(&self, delta: &str) {
        self.end_reasoning();
        if let Some(answer) = self.answer.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            let _ = answer.push(delta);
        }
    }

    fn reasoning(&self, delta: &str) {
        *self.reasoning.lock().unwrap_or_else(PoisonError::into_inner) = true;
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{}", crate::markdown::dim(delta, self.paint.color()));
        let _ = err.flush();
    }

    fn answer_finished(&self) {
        self.end_turn();
    }

    fn retrying(&self, attempt: u32, wait: Duration, reason: &str) {
        self.note(&format!(
            "try {attempt} failed ({reason}); trying again in {}",
            toolgate_core::duration::format(wait)
        ));
    }

    fn tool_started(&self, call_id: &str, name: &str, arguments: &Map<String, Value>) {
        self.end_reasoning();
        let line =
            ToolLine::start(name, arguments, self.stderr_tty, self.paint, self.options.verbose);
        self.tools.lock().unwrap_or_else(PoisonError::into_inner).insert(call_id.to_owned(), line);
    }

    fn tool_progress(
        &self,
        call_id: &str,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) {
        if let Some(line) = self.tools.lock().unwrap_or_else(PoisonError::into_inner).get(call_id) {
            line.progress(progress, total, message);
        }
    }

    fn tool_finished(&self, call_id: &str, _name: &str, outcome: &ToolOutcome, elapsed: Duration) {
        let line = self.tools.lock().unwrap_or_else(PoisonError::into_inner).remove(call_id);
        if let Some(line) = line {
            line.finish(line_outcome(outcome), elapsed);
        }
    }

    fn notice(&self, message: &str) {
        self.note(message);
    }
}

/// What the tool's status line says of `outcome`.
fn line_outcome(outcome: &ToolOutcome) -> LineOutcome {
    match outcome {
        ToolOutcome::Done(result) => {
            let text = toolgate_llm::content::parts(result)
                .into_iter()
                .filter_map(|part| match part {
                    toolgate_llm::chat::Part::Text { text } => Some(text),
                    toolgate_llm::chat::Part::Image { .. } => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            let bytes = serde_json::to_vec(&result.content).map(|v| v.len()).unwrap_or_default();
            if result.is_error == Some(true) {
                LineOutcome::Error { message: text }
            } else {
                LineOutcome::Ok { bytes, text }
            }
        }
        ToolOutcome::Refused(reason) => LineOutcome::Declined { reason: reason.clone() },
        ToolOutcome::TimedOut(error) => LineOutcome::TimedOut { message: error.clone() },
        ToolOutcome::Cancelled => LineOutcome::Cancelled,
        other => LineOutcome::Error { message: other.explanation().unwrap_or_default() },
    }
}

impl Interaction for Console {
    fn can_ask(&self) -> bool {
        self.interactive
    }

    fn approve(&self, question: ApprovalQuestion) -> BoxFuture<'static, ApprovalChoice> {
        if !self.interactive {
            return Box::pin(async {
                ApprovalChoice::Deny(Some("nobody could be asked (no terminal)".to_owned()))
            });
        }
        let asked = self.ask(move |input, out, paint| {
            let request = approval::ApprovalRequest {
                server: &question.server,
                tool: &question.tool,
                arguments: &question.arguments,
                reason: &question.reason,
                annotations: question.annotations.as_ref(),
            };
            Ok(match approval::ask(&request, input, out, paint)? {
                approval::ApprovalChoice::Once => ApprovalChoice::Once,
                approval::ApprovalChoice::AlwaysTool => ApprovalChoice::AlwaysTool,
                approval::ApprovalChoice::AlwaysExactCall => ApprovalChoice::AlwaysExactCall,
                approval::ApprovalChoice::Deny { reason } => ApprovalChoice::Deny(reason),
            })
        });
        Box::pin(async move {
            asked.await.unwrap_or(ApprovalChoice::Deny(Some("the question was cancelled".into())))
        })
    }

    fn elicit(
        &self,
        server: String,
        params: mcp::ElicitRequestParams,
    ) -> BoxFuture<'static, mcp::ElicitResult> {
        if !self.interactive {
            return Box::pin(async { mcp::ElicitResult::new(mcp::ElicitationAction::Decline) });
        }
        let from = if server.is_empty() { "toolgate".to_owned() } else { server };
        let asked = self.ask(move |input, out, paint| {
            crate::form::ask(&from, &params, input, &mut &mut *out, paint)
        });
        Box::pin(async move {
            asked.await.unwrap_or_else(|| mcp::ElicitResult::new(mcp::ElicitationAction::Cancel))
        })
    }

    fn allow_sampling(&self, server: String, summary: String) -> BoxFuture<'static, bool> {
        if self.options.allow_sampling {
            self.note(&format!("{server} asks the model (sampling): allowed by --allow-sampling"));
            return Box::pin(async { true });
        }
        if !self.interactive {
            return Box::pin(async { false });
        }
        let asked = self.ask(move |input, out, paint| {
            writeln!(
                out,
                "{} asks to use the model (sampling):\n{}",
                paint.bold(&crate::one_line(&server)),
                crate::sanitize(&summary)
            )?;
            loop {
                match input.read_line("allow? [y/n] ", out)? {
                    None => return Ok(false),
                    Some(answer) => match answer.trim() {
                        "y" | "Y" | "yes" => return Ok(true),
                        "n" | "N" | "no" | "" => return Ok(false),
                        _ => continue,
                    },
                }
            }
        });
        Box::pin(async move { asked.await.unwrap_or(false) })
    }
}

/// Answers read with a line editor: its Ctrl-C and Ctrl-D end the question (`None`).
struct EditorInput {
    editor: rustyline::DefaultEditor,
    turn: Option<CancellationToken>,
}

impl EditorInput {
    fn new(turn: Option<CancellationToken>) -> rustyline::Result<EditorInput> {
        Ok(EditorInput { editor: rustyline::DefaultEditor::new()?, turn })
    }
}

impl LineInput for EditorInput {
    fn read_line(
        &mut self,
        prompt: &str,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<Option<String>> {
        out.flush()?;
        match self.editor.readline(prompt) {
            Ok(line) => Ok(Some(line)),
            Err(rustyline::error::ReadlineError::Interrupted) => {
                if let Some(turn) = &self.turn {
                    turn.cancel();
                }
                Ok(None)
            }
            Err(rustyline::error::ReadlineError::Eof) => Ok(None),
            Err(rustyline::error::ReadlineError::Io(error)) => Err(error),
            Err(error) => Err(std::io::Error::other(error.to_string())),
        }
    }
}
