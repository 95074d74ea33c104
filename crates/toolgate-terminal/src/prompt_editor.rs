//! The line `toolgate chat` reads prompts with: rustyline's editor, with history (in the user's
//! data folder, `toolgate/chat_history.txt`) and multi-line input (a line ending in `\`, or
//! Alt-Enter, continues on the next).

use std::borrow::Cow;
use std::path::PathBuf;

use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Cmd, Completer, Editor, Helper, Highlighter, Hinter, KeyEvent};

/// The prompt's line editor.
pub struct PromptEditor {
    /// Taken while a line is read on a blocking thread.
    editor: Option<Editor<Multiline, DefaultHistory>>,
    history: Option<PathBuf>,
}

impl std::fmt::Debug for PromptEditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptEditor").field("history", &self.history).finish_non_exhaustive()
    }
}

/// What the person did at the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadLine {
    /// A line (several, when continued), without the continuation backslashes.
    Line(String),
    /// Ctrl-C: the line is cleared.
    Interrupted,
    /// Ctrl-D: the end.
    Eof,
}

/// The line editor failed.
#[derive(Debug, thiserror::Error)]
pub enum EditorError {
    /// The terminal could not be read or set up.
    #[error(transparent)]
    Readline(#[from] ReadlineError),
    /// The thread that read the line failed.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
}

impl PromptEditor {
    /// The editor, without its history yet ([`PromptEditor::load_history`]). While an editor
    /// lives, rustyline keeps a SIGINT handler of its own in place (saving the one before): make
    /// it before installing another.
    pub fn new() -> Result<PromptEditor, EditorError> {
        let mut editor = Editor::new()?;
        editor.set_helper(Some(Multiline));
        editor.bind_sequence(KeyEvent::alt('\r'), Cmd::Newline);
        let history = dirs::data_dir().map(|dir| dir.join("toolgate").join("chat_history.txt"));
        Ok(PromptEditor { editor: Some(editor), history })
    }

    /// Reads the history of earlier sessions, if there is one.
    pub fn load_history(&mut self) {
        if let (Some(editor), Some(path)) = (self.editor.as_mut(), &self.history) {
            let _ = editor.load_history(path);
        }
    }

    /// Shows `prompt` and reads a line, on a blocking thread.
    pub async fn read_line(&mut self, prompt: &str) -> Result<ReadLine, EditorError> {
        let Some(mut editor) = self.editor.take() else { return Ok(ReadLine::Eof) };
        let prompt = prompt.to_owned();
        let (editor, line) = tokio::task::spawn_blocking(move || {
            let line = editor.readline(&prompt);
            (editor, line)
        })
        .await?;
        self.editor = Some(editor);
        match line {
            Ok(line) => Ok(ReadLine::Line(joined(&line).into_owned())),
            Err(ReadlineError::Interrupted) => Ok(ReadLine::Interrupted),
            Err(ReadlineError::Eof) => Ok(ReadLine::Eof),
            Err(error) => Err(error.into()),
        }
    }

    /// Adds `entry` to the history.
    pub fn add_history(&mut self, entry: &str) {
        if let Some(editor) = self.editor.as_mut() {
            let _ = editor.add_history_entry(entry);
        }
    }

    /// Writes the history back.
    pub fn save_history(&mut self) {
        if let (Some(editor), Some(path)) = (self.editor.as_mut(), &self.history) {
            if let Some(dir) = path.parent() {
                // The history holds what was typed: its folder is the user's only, as the
                // sessions database's (rustyline makes the file itself 0600).
                let _ = toolgate_agent::store::create_private_dirs(dir);
            }
            let _ = editor.save_history(path);
        }
    }
}

/// A line ending in `\` continues on the next.
#[derive(Completer, Helper, Highlighter, Hinter)]
struct Multiline;

impl Validator for Multiline {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if ctx.input().ends_with('\\') {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

/// The text of a multi-line input without its continuation backslashes.
fn joined(input: &str) -> Cow<'_, str> {
    if input.contains("\\\n") {
        Cow::Owned(input.replace("\\\n", "\n"))
    } else {
        Cow::Borrowed(input)
    }
}
