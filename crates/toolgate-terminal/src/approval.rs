//! The question the agent asks when a tool call needs a person's approval.
//!
//! It shows the tool (as the model knows it) and its server, why it is asked, the tool's
//! annotations (what the server says the tool does: they are hints, not guarantees) and the
//! arguments, pretty-printed and clipped, then offers:
//!
//! - `y`: allow this call once;
//! - `t`: allow every call of this tool for the rest of the session;
//! - `a`: allow this exact call (same tool, same arguments) for the rest of the session;
//! - `n`: deny, then asks for a reason to tell the model (optional).
//!
//! Any other answer is asked again; the end of input (Ctrl-D) denies.

use std::io::{self, Write};

use anstyle::AnsiColor;
use serde_json::Value;
use toolgate_core::mcp;

use super::{LineInput, Paint, one_line, sanitize};

/// Lines of arguments shown at most.
const MAX_LINES: usize = 40;
/// Characters of one line of arguments shown at most.
const MAX_LINE_CHARS: usize = 200;

/// A call waiting for approval.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ApprovalRequest<'a> {
    /// The server the tool is on.
    pub(crate) server: &'a str,
    /// The tool, as the model calls it (`server__tool`).
    pub(crate) tool: &'a str,
    /// The call's arguments.
    pub(crate) arguments: &'a Value,
    /// Why a person is asked (the policy's reason).
    pub(crate) reason: &'a str,
    /// The tool's annotations, as the server lists them.
    pub(crate) annotations: Option<&'a mcp::ToolAnnotations>,
}

/// What the person decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ApprovalChoice {
    /// Allow this call.
    Once,
    /// Allow every call of this tool, for this session.
    AlwaysTool,
    /// Allow this tool with exactly these arguments, for this session.
    AlwaysExactCall,
    /// Refuse, with the reason the person gave, if any.
    Deny { reason: Option<String> },
}

/// Shows `request` on `out` and reads the decision from `input`. Errors are those of reading
/// and writing.
pub(crate) fn ask(
    request: &ApprovalRequest<'_>,
    input: &mut dyn LineInput,
    out: &mut dyn Write,
    paint: Paint,
) -> io::Result<ApprovalChoice> {
    let title = format!("⚠ {} needs your approval", one_line(request.tool));
    writeln!(
        out,
        "{} {}",
        paint.paint(anstyle::Style::new().bold().fg_color(Some(AnsiColor::Yellow.into())), &title),
        paint.dim(&format!("(server {})", one_line(request.server)))
    )?;
    writeln!(out, "  why: {}", one_line(request.reason))?;
    writeln!(out, "  {}", hints(request.annotations, paint))?;
    writeln!(out, "  arguments:")?;
    for line in clip(&pretty(request.arguments)) {
        writeln!(out, "    {line}")?;
    }
    let prompt = format!(
        "Allow? {} once  {} always this tool  {} always this exact call  {} deny: ",
        paint.bold("[y]"),
        paint.bold("[t]"),
        paint.bold("[a]"),
        paint.bold("[n]")
    );
    loop {
        let Some(answer) = input.read_line(&prompt, out)? else {
            return Ok(ApprovalChoice::Deny { reason: None });
        };
        let choice = match answer.trim().to_lowercase().as_str() {
            "y" | "yes" | "once" => ApprovalChoice::Once,
            "t" | "tool" => ApprovalChoice::AlwaysTool,
            "a" | "always" | "call" => ApprovalChoice::AlwaysExactCall,
            "n" | "no" | "deny" => {
                let reason = input.read_line("Reason, for the model (optional): ", out)?;
                let reason = reason.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty());
                ApprovalChoice::Deny { reason }
            }
            _ => {
                let error = paint.fg(AnsiColor::Red, "✗ answer y, t, a or n");
                writeln!(out, "  {error}")?;
                continue;
            }
        };
        return Ok(choice);
    }
}

/// What the annotations say, read with the specification's defaults.
fn hints(annotations: Option<&mcp::ToolAnnotations>, paint: Paint) -> String {
    let Some(a) = annotations else {
        return format!("hints: none {}", paint.dim("(the server says nothing of what it does)"));
    };
    let mut hints = Vec::new();
    if let Some(title) = &a.title {
        hints.push(format!("\"{}\"", one_line(title)));
    }
    if a.read_only_hint == Some(true) {
        hints.push(paint.fg(AnsiColor::Green, "read-only"));
    } else {
        match a.destructive_hint {
            Some(false) => hints.push("changes things, not destructively".to_owned()),
            _ => hints.push(paint.fg(AnsiColor::Red, "may be destructive")),
        }
        if a.idempotent_hint == Some(true) {
            hints.push("idempotent".to_owned());
        }
    }
    hints.push(
        if a.open_world_hint == Some(false) { "closed world" } else { "open world" }.to_owned(),
    );
    format!("hints: {} {}", hints.join(", "), paint.dim("(the server's word, unverified)"))
}

fn pretty(arguments: &Value) -> String {
    serde_json::to_string_pretty(arguments).unwrap_or_else(|_| arguments.to_string())
}

/// `text`'s lines, at most [`MAX_LINES`] of at most [`MAX_LINE_CHARS`] characters each,
/// made safe to show.
fn clip(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut shown: Vec<String> = lines
        .iter()
        .take(MAX_LINES)
        .map(|line| {
            let count = line.chars().count();
            if count > MAX_LINE_CHARS {
                let head: String = line.chars().take(MAX_LINE_CHARS).collect();
                format!("{}… ({} more characters)", sanitize(&head), count - MAX_LINE_CHARS)
            } else {
                sanitize(line).into_owned()
            }
        })
        .collect();
    if lines.len() > MAX_LINES {
        shown.push(format!("… ({} more lines)", lines.len() - MAX_LINES));
    }
    shown
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::Reader;
    use super::*;

    fn run(
        annotations: Option<&mcp::ToolAnnotations>,
        arguments: &Value,
        answers: &str,
    ) -> (ApprovalChoice, String) {
        let request = ApprovalRequest {
            server: "fs",
            tool: "fs__write_file",
            arguments,
            reason: "policy rule \"writes\" asks",
            annotations,
        };
        let mut input = Reader(answers.as_bytes());
        let mut out = Vec::new();
        let choice = ask(&request, &mut input, &mut out, Paint::new(false)).unwrap();
        (choice, String::from_utf8(out).unwrap())
    }

    fn choice(answers: &str) -> ApprovalChoice {
        run(None, &json!({}), answers).0
    }

    #[test]
    fn each_choice() {
        assert_eq!(choice("y\n"), ApprovalChoice::Once);
        assert_eq!(choice("T\n"), ApprovalChoice::AlwaysTool);
        assert_eq!(choice(" a \n"), ApprovalChoice::AlwaysExactCall);
        assert_eq!(choice("n\n\n"), ApprovalChoice::Deny { reason: None });
        assert_eq!(
            choice("n\n  not in /etc \n"),
            ApprovalChoice::Deny { reason: Some("not in /etc".to_owned()) }
        );
    }

    #[test]
    fn another_answer_is_asked_again_and_the_end_of_input_denies() {
        let (got, transcript) = run(None, &json!({}), "maybe\n\ny\n");
        assert_eq!(got, ApprovalChoice::Once);
        assert_eq!(transcript.matches("✗ answer y, t, a or n").count(), 2, "{transcript}");
        assert_eq!(choice(""), ApprovalChoice::Deny { reason: None });
        assert_eq!(choice("x\n"), ApprovalChoice::Deny { reason: None });
        // The end of input when asked for the reason: denied without one.
        assert_eq!(choice("n\n"), ApprovalChoice::Deny { reason: None });
    }

    #[test]
    fn the_question_shows_the_call() {
        let annotations: mcp::ToolAnnotations =
            serde_json::from_value(json!({"destructiveHint": true, "openWorldHint": false}))
                .unwrap();
        let (_, transcript) =
            run(Some(&annotations), &json!({"path": "/tmp/x", "content": "hi"}), "y\n");
        assert_eq!(
            transcript,
            "⚠ fs__write_file needs your approval (server fs)\n\
             \x20 why: policy rule \"writes\" asks\n\
             \x20 hints: may be destructive, closed world (the server's word, unverified)\n\
             \x20 arguments:\n\
             \x20   {\n\
             \x20     \"path\": \"/tmp/x\",\n\
             \x20     \"content\": \"hi\"\n\
             \x20   }\n\
             Allow? [y] once  [t] always this tool  [a] always this exact call  [n] deny: "
        );
    }

    #[test]
    fn annotations_are_read_with_the_specifications_defaults() {
        let read = |value: Value| {
            let annotations: mcp::ToolAnnotations = serde_json::from_value(value).unwrap();
            hints(Some(&annotations), Paint::new(false))
        };
        let word = " (the server's word, unverified)";
        assert_eq!(read(json!({})), format!("hints: may be destructive, open world{word}"));
        assert_eq!(
            read(json!({"readOnlyHint": true, "destructiveHint": true, "title": "Read"})),
            format!("hints: \"Read\", read-only, open world{word}")
        );
        assert_eq!(
            read(json!({"destructiveHint": false, "idempotentHint": true})),
            format!("hints: changes things, not destructively, idempotent, open world{word}")
        );
        assert_eq!(
            hints(None, Paint::new(false)),
            "hints: none (the server says nothing of what it does)"
        );
    }

    #[test]
    fn long_arguments_are_clipped_and_escapes_shown() {
        let many: Vec<u32> = (0..100).collect();
        let (_, transcript) =
            run(None, &json!({"n": many, "s": "x".repeat(300), "e": "\u{1b}[2J"}), "y\n");
        assert!(transcript.contains("… (66 more lines)"), "{transcript}");
        assert!(!transcript.contains("\"s\""), "past the clip: {transcript}");
        let (_, transcript) = run(None, &json!({"s": "x".repeat(300)}), "y\n");
        assert!(
            transcript.contains(&format!("\"s\": \"{}… (109 more characters)", "x".repeat(192)))
        );
        let (_, transcript) = run(None, &json!({"e": "\u{9b}2J\u{202e}"}), "y\n");
        assert!(transcript.contains(r#""e": "\u{9b}2J\u{202e}""#), "{transcript}");
    }
}
