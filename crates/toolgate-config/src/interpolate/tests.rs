//! Tests of `${VAR}` interpolation: defaults, `$$`, and each problem reported once, never
//! quoting the text.

use super::{InterpolationError, interpolate};

fn check(text: &str) -> Result<String, Vec<InterpolationError>> {
    interpolate(text, |name| match name {
        "HOME" => Some("/home/ada".to_owned()),
        "TOKEN" => Some("t0k3n".to_owned()),
        "EMPTY" => Some(String::new()),
        _ => None,
    })
}

fn ok(text: &str) -> String {
    check(text).expect("interpolation must succeed")
}

#[test]
fn plain_text_is_unchanged() {
    assert_eq!(ok(""), "");
    assert_eq!(ok("hello world"), "hello world");
    assert_eq!(ok("naïve ✓"), "naïve ✓");
}

#[test]
fn variables_are_replaced() {
    assert_eq!(ok("${HOME}/notes"), "/home/ada/notes");
    assert_eq!(ok("Bearer ${TOKEN}"), "Bearer t0k3n");
    assert_eq!(ok("${HOME}${TOKEN}"), "/home/adat0k3n");
    assert_eq!(ok("${EMPTY}"), "");
}

#[test]
fn defaults_apply_when_unset_or_empty() {
    assert_eq!(ok("${MISSING:-none}"), "none");
    assert_eq!(ok("${MISSING:-}"), "");
    assert_eq!(ok("${EMPTY:-fallback}"), "fallback");
    assert_eq!(ok("${TOKEN:-fallback}"), "t0k3n");
    assert_eq!(ok("${MISSING:-a b:c-d}"), "a b:c-d");
    assert_eq!(ok("${MISSING:-$x}"), "$x");
}

#[test]
fn dollars() {
    assert_eq!(ok("$$"), "$");
    assert_eq!(ok("$${HOME}"), "${HOME}");
    assert_eq!(ok("$$$$"), "$$");
    assert_eq!(ok("cost: $5"), "cost: $5");
    assert_eq!(ok("end$"), "end$");
    assert_eq!(ok("$HOME"), "$HOME");
}

#[test]
fn env_prefix_is_accepted() {
    assert_eq!(ok("${env:HOME}"), "/home/ada");
}

#[test]
fn unset_variables_are_all_reported_once() {
    assert_eq!(
        check("${A} ${B} ${A}"),
        Err(vec![
            InterpolationError::Unset("A".to_owned()),
            InterpolationError::Unset("B".to_owned())
        ])
    );
}

#[test]
fn malformed_references() {
    assert_eq!(check("ab${HOME"), Err(vec![InterpolationError::Unterminated(3)]));
    assert_eq!(check("${}"), Err(vec![InterpolationError::Invalid(1)]));
    assert_eq!(check("é${1X}"), Err(vec![InterpolationError::Invalid(2)]));
    assert_eq!(check("${A-b}"), Err(vec![InterpolationError::Invalid(1)]));
    assert_eq!(check("${input:token}"), Err(vec![InterpolationError::Input("token".to_owned())]));
}

#[test]
fn messages_never_quote_the_text() {
    let text = "Bearer s3cret-${";
    let errors = check(text).expect_err("unterminated reference must fail");
    for error in errors {
        assert!(!error.to_string().contains("s3cret"), "{error}");
    }
    assert_eq!(
        InterpolationError::Unset("GITHUB_TOKEN".to_owned()).to_string(),
        "environment variable GITHUB_TOKEN is not set"
    );
}
