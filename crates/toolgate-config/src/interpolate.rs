//! `${VAR}`, `${VAR:-default}` and `$$` in config strings.
//!
//! - `${NAME}` is the value of variable `NAME`; unset is an error.
//! - `${NAME:-default}` is the value of `NAME`, or `default` when it is unset or empty. The
//!   default is literal text up to the first `}` (no nesting).
//! - `${env:NAME}` is accepted as a spelling of `${NAME}` (VS Code writes it that way).
//! - `${input:id}` (a VS Code prompt) cannot be resolved here and is an error.
//! - `$$` is a literal `$`; any other `$` is kept as it is.
//!
//! Errors never quote the text being interpolated, which may hold a secret: they name a variable
//! or give a character position.

use thiserror::Error;

/// Why a string could not be interpolated.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub(crate) enum InterpolationError {
    #[error("environment variable {0} is not set")]
    Unset(String),
    #[error(
        "VS Code input variable ${{input:{0}}} cannot be resolved (use an environment variable instead)"
    )]
    Input(String),
    #[error("`${{` at character {0} has no closing `}}`")]
    Unterminated(usize),
    #[error(
        "invalid variable reference at character {0} (expected ${{NAME}} or ${{NAME:-default}})"
    )]
    Invalid(usize),
}

/// Expands the references in `text`, looking variables up with `lookup`. Returns every problem
/// found (each unset variable once).
pub(crate) fn interpolate(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, Vec<InterpolationError>> {
    let mut out = String::with_capacity(text.len());
    let mut errors = Vec::new();
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let at = text.len() - rest.len() + dollar;
        let after = &rest[dollar + 1..];
        if let Some(after_escape) = after.strip_prefix('$') {
            out.push('$');
            rest = after_escape;
            continue;
        }
        let Some(body_and_rest) = after.strip_prefix('{') else {
            out.push('$');
            rest = after;
            continue;
        };
        let Some(close) = body_and_rest.find('}') else {
            errors.push(InterpolationError::Unterminated(char_position(text, at)));
            rest = "";
            break;
        };
        let body = &body_and_rest[..close];
        rest = &body_and_rest[close + 1..];

        let (name, default) = match body.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (body, None),
        };
        if let Some(id) = name.strip_prefix("input:") {
            errors.push(InterpolationError::Input(id.to_owned()));
            continue;
        }
        let name = name.strip_prefix("env:").unwrap_or(name);
        if !is_variable_name(name) {
            errors.push(InterpolationError::Invalid(char_position(text, at)));
            continue;
        }
        match (lookup(name), default) {
            (Some(value), Some(default)) if value.is_empty() => out.push_str(default),
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                let error = InterpolationError::Unset(name.to_owned());
                if !errors.contains(&error) {
                    errors.push(error);
                }
            }
        }
    }
    out.push_str(rest);
    if errors.is_empty() { Ok(out) } else { Err(errors) }
}

/// `[A-Za-z_][A-Za-z0-9_]*`
fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// 1-based position in characters of byte offset `at`.
fn char_position(text: &str, at: usize) -> usize {
    text[..at].chars().count() + 1
}

#[cfg(test)]
mod tests;
