//! Tests of tool filters: allow and deny globs and which one wins.

use crate::model::ToolFilter;

fn filter(allow: &[&str], deny: &[&str]) -> ToolFilter {
    ToolFilter {
        allow: allow.iter().map(|s| s.to_string()).collect(),
        deny: deny.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn empty_filter_exposes_everything() {
    let compiled = ToolFilter::default().compile().expect("empty filter must compile");
    assert!(compiled.matches("anything"));
    assert!(compiled.matches(""));
}

#[test]
fn allow_then_deny() {
    let f = filter(&["read_*", "list_?"], &["read_secret*"]);
    let compiled = f.compile().expect("filter must compile");
    for (name, expected) in [
        ("read_file", true),
        ("read_secret_key", false),
        ("list_a", true),
        ("list_ab", false),
        ("write_file", false),
    ] {
        assert_eq!(compiled.matches(name), expected, "{name}");
        assert_eq!(f.matches(name), expected, "{name}");
    }
}

#[test]
fn deny_only() {
    let compiled = filter(&[], &["write_*", "move_file"]).compile().expect("filter must compile");
    assert!(compiled.matches("read_file"));
    assert!(!compiled.matches("write_file"));
    assert!(!compiled.matches("move_file"));
    assert!(compiled.matches("move_file2"));
}

#[test]
fn slashes_and_classes() {
    let compiled = filter(&["a*", "[xy]z", "{p,q}"], &[]).compile().expect("filter must compile");
    assert!(compiled.matches("a/b"));
    assert!(compiled.matches("yz"));
    assert!(compiled.matches("q"));
    assert!(!compiled.matches("r"));
}

#[test]
fn invalid_pattern() {
    let f = filter(&["[a"], &[]);
    let error = f.compile().expect_err("unclosed class must not compile");
    assert_eq!(error.to_string(), r#"invalid tool pattern "[a""#);
    assert!(!f.matches("a"));
}
