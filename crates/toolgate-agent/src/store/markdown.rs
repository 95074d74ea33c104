//! A session as a readable Markdown transcript (`toolgate sessions show`, `export --format
//! markdown`): a heading per user and assistant message, reasoning quoted, each tool call's
//! arguments and each result in a code block (fenced with more backticks than the text holds).

use std::fmt::Write as _;

use toolgate_llm::chat::{Message, Part};
use toolgate_llm::pricing;

use super::{SessionMeta, UsageTotal};

/// The transcript of `messages`.
pub(crate) fn transcript(meta: &SessionMeta, total: &UsageTotal, messages: &[Message]) -> String {
    let mut out = String::new();
    let title = if meta.title.is_empty() { "(untitled session)" } else { &meta.title };
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(out, "- id: `{}`", meta.id);
    let _ = writeln!(out, "- created: {}, updated: {}", meta.created_at, meta.updated_at);
    let _ = writeln!(out, "- model: {} ({})", meta.model, meta.provider);
    let _ = writeln!(out, "- directory: `{}`", meta.cwd);
    let usage = &total.usage;
    if usage.input_tokens + usage.output_tokens > 0 {
        let _ = write!(
            out,
            "- tokens: {} in ({} cached), {} out ({} reasoning)",
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.output_tokens,
            usage.reasoning_tokens
        );
        if let Some(cost) = total.cost_usd {
            let _ = write!(
                out,
                "; about ${cost:.4} (an estimate from list prices of {})",
                pricing::PRICES_AS_OF
            );
        }
        out.push('\n');
    }
    for message in messages {
        out.push('\n');
        match message {
            Message::User { content } => {
                out.push_str("## User\n\n");
                parts(&mut out, content, false);
            }
            Message::Assistant(turn) => {
                out.push_str("## Assistant\n\n");
                if let Some(reasoning) = turn.reasoning.as_ref().filter(|r| !r.text.is_empty()) {
                    for line in reasoning.text.lines() {
                        let _ = writeln!(out, "> {line}");
                    }
                    out.push('\n');
                }
                if !turn.text.is_empty() {
                    let _ = writeln!(out, "{}\n", turn.text.trim_end());
                }
                for call in &turn.tool_calls {
                    let _ = writeln!(out, "**Tool call** `{}` (`{}`)\n", call.name, call.id);
                    let (language, arguments) =
                        match serde_json::from_str::<serde_json::Value>(&call.arguments) {
                            Ok(value) => (
                                "json",
                                serde_json::to_string_pretty(&value)
                                    .expect("JSON values always serialize"),
                            ),
                            Err(_) => ("", call.arguments.clone()),
                        };
                    code_block(&mut out, language, &arguments);
                }
            }
            Message::ToolResult(result) => {
                let error = if result.is_error { ", error" } else { "" };
                let _ = writeln!(
                    out,
                    "**Result** of `{}` (`{}`{error})\n",
                    result.name, result.call_id
                );
                parts(&mut out, &result.content, true);
            }
        }
    }
    out
}

fn parts(out: &mut String, content: &[Part], as_code: bool) {
    for part in content {
        match part {
            Part::Text { text } if as_code => code_block(out, "", text),
            Part::Text { text } => {
                let _ = writeln!(out, "{}\n", text.trim_end());
            }
            Part::Image { mime_type, data } => {
                let _ = writeln!(out, "*[image: {mime_type}, {} bytes of base64]*\n", data.len());
            }
        }
    }
}

/// `text` in a fenced block whose fence is longer than any run of backticks in it.
fn code_block(out: &mut String, language: &str, text: &str) {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let _ = writeln!(out, "{fence}{language}\n{}\n{fence}\n", text.trim_end_matches('\n'));
}
