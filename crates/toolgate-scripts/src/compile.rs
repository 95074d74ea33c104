//! A script file compiled into a Rune unit, or what the compiler said about it: each problem
//! with its file, line and column, and the whole report as the Rune compiler renders it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rune::ast::Spanned as _;
use rune::diagnostics::{Diagnostic as RuneDiagnostic, FatalDiagnosticKind};
use rune::termcolor::{Buffer, ColorChoice};
use rune::{Context, Diagnostics, Source, Sources, Unit};

/// One problem the compiler found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// 1-based; 0 when the compiler gave no place.
    pub line: usize,
    /// 1-based; 0 when the compiler gave no place.
    pub column: usize,
    pub message: String,
    /// An error (the script was not compiled) or a warning.
    pub error: bool,
}

/// A script that did not compile.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {}", path.display(), first_error(diagnostics))]
pub struct CompileError {
    pub path: PathBuf,
    pub diagnostics: Vec<Diagnostic>,
    /// The report as the Rune compiler renders it (no colour).
    pub rendered: String,
}

fn first_error(diagnostics: &[Diagnostic]) -> String {
    match diagnostics.iter().find(|d| d.error) {
        Some(d) if d.line > 0 => format!("{}:{}: {}", d.line, d.column, d.message),
        Some(d) => d.message.clone(),
        None => "it could not be compiled".to_owned(),
    }
}

/// What compiling gave: the unit, and the warnings (rendered) when there were any.
pub(crate) struct Built {
    pub(crate) unit: Arc<Unit>,
    pub(crate) warnings: Vec<Diagnostic>,
}

/// Compiles `text` (read from `path`) against `context`.
pub(crate) fn compile(context: &Context, path: &Path, text: &str) -> Result<Built, CompileError> {
    let failed = |message: String| CompileError {
        path: path.to_owned(),
        diagnostics: vec![Diagnostic { line: 0, column: 0, message: message.clone(), error: true }],
        rendered: message,
    };
    let name = path.display().to_string();
    let source = Source::new(name, text).map_err(|e| failed(e.to_string()))?;
    let mut sources = Sources::new();
    let id = sources.insert(source).map_err(|e| failed(e.to_string()))?;
    let mut diagnostics = Diagnostics::new();
    let unit = rune::prepare(&mut sources)
        .with_context(context)
        .with_diagnostics(&mut diagnostics)
        .build();
    let source = sources.get(id).expect("the source just inserted");
    let listed = list(&diagnostics, source);
    match unit {
        Ok(unit) => Ok(Built { unit: Arc::new(unit), warnings: listed }),
        Err(_) => Err(CompileError {
            path: path.to_owned(),
            diagnostics: listed,
            rendered: render(&diagnostics, &sources, ColorChoice::Never),
        }),
    }
}

/// Renders `diagnostics` as the Rune compiler does, in colour when `color` says.
pub(crate) fn render(diagnostics: &Diagnostics, sources: &Sources, color: ColorChoice) -> String {
    let mut out =
        if matches!(color, ColorChoice::Never) { Buffer::no_color() } else { Buffer::ansi() };
    let _ = diagnostics.emit(&mut out, sources);
    String::from_utf8_lossy(out.as_slice()).into_owned()
}

/// Compiles `text` and renders what the compiler said (errors and warnings) for a terminal.
pub(crate) fn check(
    context: &Context,
    path: &Path,
    text: &str,
    color: ColorChoice,
) -> (bool, String) {
    let mut sources = Sources::new();
    let Ok(source) = Source::new(path.display().to_string(), text) else {
        return (false, format!("{}: could not be read as a source\n", path.display()));
    };
    if sources.insert(source).is_err() {
        return (false, format!("{}: out of memory\n", path.display()));
    }
    let mut diagnostics = Diagnostics::new();
    let built = rune::prepare(&mut sources)
        .with_context(context)
        .with_diagnostics(&mut diagnostics)
        .build();
    (built.is_ok(), render(&diagnostics, &sources, color))
}

fn list(diagnostics: &Diagnostics, source: &Source) -> Vec<Diagnostic> {
    let place = |offset: usize| {
        let (line, column) = source.pos_to_utf8_linecol(offset);
        (line + 1, column + 1)
    };
    diagnostics
        .diagnostics()
        .iter()
        .filter_map(|diagnostic| match diagnostic {
            RuneDiagnostic::Fatal(fatal) => {
                let (line, column) = match fatal.kind() {
                    FatalDiagnosticKind::CompileError(error) => {
                        place(error.span().start.into_usize())
                    }
                    _ => (0, 0),
                };
                Some(Diagnostic { line, column, message: fatal.to_string(), error: true })
            }
            RuneDiagnostic::Warning(warning) => {
                let (line, column) = place(warning.span().start.into_usize());
                Some(Diagnostic { line, column, message: warning.to_string(), error: false })
            }
            _ => None,
        })
        .collect()
}
