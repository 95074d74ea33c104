//! Tests of checking a whole pipeline: unknown kinds, bad options, and approval without the admin API.

use serde_json::json;

use super::*;

fn paths(errors: &[OptionError]) -> Vec<&str> {
    errors.iter().map(|e| e.path.as_str()).collect()
}

#[test]
fn a_valid_pipeline_passes() {
    let entries = vec![
        test_entry("policy", "pipeline[0]", json!({ "default": "allow" })),
        test_entry("approval", "pipeline[1]", json!({ "via": "deny" })),
        test_entry("validate_args", "pipeline[2]", json!({})),
        test_entry("arg_map", "pipeline[3]", json!({ "map": { "fs__read": { "alias": "read" } } })),
        test_entry("limits", "pipeline[4]", json!({ "server": { "a": { "concurrency": 1 } } })),
    ];
    assert_eq!(check_pipeline(&entries, false), Vec::new());
}

#[test]
fn an_unknown_kind_is_named_with_the_known_ones() {
    let errors = check_pipeline(&[test_entry("polcy", "pipeline[0]", json!({}))], false);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].path, "pipeline[0].kind");
    assert!(errors[0].message.contains("\"polcy\""), "{}", errors[0]);
    assert!(errors[0].message.contains(&KINDS.join(", ")), "{}", errors[0]);
}

#[test]
fn every_entry_is_checked_and_the_findings_are_those_of_the_build() {
    let entries = vec![
        test_entry("policy", "pipeline[0]", json!({ "default": "maybe" })),
        test_entry("approval", "pipeline[1]", json!({ "via": "phone" })),
        test_entry("validate_args", "pipeline[2]", json!({ "strict": 1 })),
        test_entry("arg_map", "pipeline[3]", json!({ "aliases": 3 })),
        test_entry("limits", "pipeline[4]", json!({ "server": { "a": { "rate": "fast" } } })),
    ];
    let checked = check_pipeline(&entries, true);
    let services = Services::new(EventBus::new()).with_admin_api(true);
    let built = build_pipeline(&entries, &services).expect_err("the pipeline is invalid");
    assert_eq!(checked, built);
    for i in 0..entries.len() {
        let prefix = format!("pipeline[{i}].");
        assert!(checked.iter().any(|e| e.path.starts_with(&prefix)), "{prefix}: {checked:?}");
    }
}

#[test]
fn holding_calls_for_approvers_needs_an_admin_section() {
    let via = || vec![test_entry("approval", "pipeline[0]", json!({ "via": "external" }))];
    let errors = check_pipeline(&via(), false);
    assert_eq!(paths(&errors), ["pipeline[0].via"]);
    assert!(errors[0].message.contains("[admin]"), "{}", errors[0]);
    assert_eq!(check_pipeline(&via(), true), Vec::new());

    let fallback = vec![test_entry("approval", "pipeline[0]", json!({ "fallback": "external" }))];
    assert_eq!(paths(&check_pipeline(&fallback, false)), ["pipeline[0].fallback"]);

    let services = Services::new(EventBus::new());
    let built = build_pipeline(&via(), &services).expect_err("no admin API");
    assert_eq!(paths(&built), ["pipeline[0].via"]);
}

#[test]
fn duplicate_names_are_found_too() {
    let entries = vec![
        test_entry("policy", "pipeline[0]", json!({})),
        test_entry("policy", "pipeline[1]", json!({})),
    ];
    let errors = check_pipeline(&entries, false);
    assert_eq!(paths(&errors), ["pipeline"]);
}
