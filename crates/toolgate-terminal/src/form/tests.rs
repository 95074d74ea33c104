//! Tests of the form module.

use serde_json::json;

use super::super::Reader;
use super::*;

fn params(value: Value) -> mcp::ElicitRequestParams {
    serde_json::from_value(value).expect("valid elicitation params")
}

/// Asks `params` with `answers` (one per line); the result and the transcript.
fn run(params: &mcp::ElicitRequestParams, answers: &str) -> (ElicitResult, String) {
    let mut input = Reader(answers.as_bytes());
    let mut out = Vec::new();
    let result = ask("demo", params, &mut input, &mut out, Paint::new(false)).unwrap();
    (result, String::from_utf8(out).unwrap())
}

fn form(properties: Value, required: Value) -> mcp::ElicitRequestParams {
    params(json!({
        "mode": "form",
        "message": "Tell me",
        "requestedSchema": {"type": "object", "properties": properties, "required": required},
    }))
}

fn accepted(result: &ElicitResult) -> &Value {
    assert_eq!(result.action, ElicitationAction::Accept, "{result:?}");
    result.content.as_ref().expect("content")
}

#[test]
fn every_field_type_is_asked_in_the_servers_order() {
    let params = form(
        json!({
            "name": {"type": "string", "title": "Your name", "minLength": 2, "maxLength": 5},
            "email": {"type": "string", "format": "email", "description": "Where to write"},
            "site": {"type": "string", "format": "uri"},
            "born": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "ratio": {"type": "number", "minimum": 0, "maximum": 1},
            "count": {"type": "integer", "minimum": 1, "maximum": 10},
            "agree": {"type": "boolean"},
            "color": {"type": "string", "enum": ["red", "green", "blue"]},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha", "Beta"]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y", "z"]}, "minItems": 1, "maxItems": 2},
            "langs": {"type": "array", "items": {"anyOf": [{"const": "en", "title": "English"}, {"const": "fr", "title": "French"}]}},
        }),
        json!(["name", "email", "count", "agree", "color", "tags"]),
    );
    let answers = [
        "J",                           // too short
        "Joanna",                      // too long
        "Jo",                          //
        "not-an-email",                // invalid
        "jo@example.org",              //
        "not a uri",                   // invalid
        "https://example.org/x",       //
        "2025-02-29",                  // not a day
        "2024-02-29",                  //
        "2025-11-25 14:30",            // invalid
        "2025-11-25T14:30:00.5+01:00", //
        "1.5",                         // too big
        "0.25",                        //
        "3.5",                         // not whole
        "11",                          // too big
        "7",                           //
        "maybe",                       // invalid
        "y",                           //
        "purple",                      // not an option
        "2",                           // green, by number
        "large",                       // by title, any case
        "Beta",                        // legacy, by title
        "1, 2, 3",                     // too many
        "z, 1, z",                     // by value and number, duplicates dropped
        "French,en",                   //
        "y",                           // send
    ];
    let (result, transcript) = run(&params, &(answers.join("\n") + "\n"));
    assert_eq!(
        accepted(&result),
        &json!({
            "name": "Jo", "email": "jo@example.org", "site": "https://example.org/x",
            "born": "2024-02-29", "at": "2025-11-25T14:30:00.5+01:00", "ratio": 0.25,
            "count": 7, "agree": true, "color": "green", "size": "l", "legacy": "b",
            "tags": ["z", "x"], "langs": ["fr", "en"],
        })
    );
    // The content's keys are in the form's order.
    let keys: Vec<_> = accepted(&result).as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys[..3], ["name", "email", "site"]);
    for reason in [
        "✗ at least 2 characters, please (this has 1)",
        "✗ at most 5 characters, please (this has 6)",
        "✗ \"not-an-email\" is not an email address",
        "✗ not a URI (relative URL without a base)",
        "✗ \"2025-02-29\" is not a date (YYYY-MM-DD)",
        "✗ \"2025-11-25 14:30\" is not a date-time",
        "✗ at most 1, please",
        "✗ \"3.5\" is not a whole number",
        "✗ at most 10, please",
        "✗ answer y or n",
        "✗ \"purple\" is not one of the options (1 to 3)",
        "✗ choose at most 2",
    ] {
        assert!(transcript.contains(reason), "{reason:?} missing in:\n{transcript}");
    }
    for shown in [
        "demo asks:\n  Tell me\n",
        "Your name* (2-5 characters): ",
        "  Where to write\nemail* (email): ",
        "ratio (a number from 0 to 1): ",
        "count* (a whole number from 1 to 10): ",
        "agree* [y/n]: ",
        "  1) red\n  2) green\n  3) blue\ncolor* (a number or a value): ",
        "  1) Small\n  2) Large\n",
        "  1) Alpha\n  2) Beta\n",
        "tags* (numbers or values, separated by commas; 1 to 2): ",
        "  size: Large\n  legacy: Beta\n  tags: z, x\n  langs: French, English\n",
    ] {
        assert!(transcript.contains(shown), "{shown:?} missing in:\n{transcript}");
    }
}

#[test]
fn defaults_are_shown_and_taken_and_optional_fields_can_be_left_out() {
    let params = form(
        json!({
            "name": {"type": "string", "default": "anon"},
            "n": {"type": "number", "default": 2.5},
            "i": {"type": "integer", "default": 3},
            "ok": {"type": "boolean", "default": true},
            "off": {"type": "boolean", "default": false},
            "pick": {"type": "string", "oneOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}], "default": "b"},
            "many": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "default": ["y"]},
            "note": {"type": "string"},
            "skipped": {"type": "string", "default": "dropped"},
        }),
        json!(["name"]),
    );
    let (result, transcript) = run(&params, "\n\n\n\n\n\n\n\n:skip\n\n");
    assert_eq!(
        accepted(&result),
        &json!({"name": "anon", "n": 2.5, "i": 3, "ok": true, "off": false, "pick": "b", "many": ["y"]})
    );
    for shown in [
        "name* [anon]: ",
        "n (a number) [2.5]: ",
        "i (a whole number) [3]: ",
        "ok [Y/n]: ",
        "off [y/N]: ",
        "(a number or a value) [B]: ",
        "[y]: ",
        "note: ",
        "  note: (none)\n",
    ] {
        assert!(transcript.contains(shown), "{shown:?} missing in:\n{transcript}");
    }
}

#[test]
fn a_required_field_cannot_be_left_empty() {
    let params = form(json!({"name": {"type": "string"}}), json!(["name"]));
    let (result, transcript) = run(&params, "\n:skip\nMe\n\n");
    assert_eq!(accepted(&result), &json!({"name": "Me"}));
    assert_eq!(transcript.matches("✗ this field is required").count(), 2, "{transcript}");
}

#[test]
fn a_required_multi_select_without_a_minimum_may_be_empty() {
    let schema = json!({"type": "array", "items": {"type": "string", "enum": ["x"]}});
    let (result, _) = run(&form(json!({"m": schema}), json!(["m"])), "\n\n");
    assert_eq!(accepted(&result), &json!({"m": []}));
    let schema =
        json!({"type": "array", "items": {"type": "string", "enum": ["x"]}, "minItems": 1});
    let (result, transcript) = run(&form(json!({"m": schema}), json!(["m"])), "\nx\n\n");
    assert_eq!(accepted(&result), &json!({"m": ["x"]}));
    assert!(transcript.contains("✗ this field is required"), "{transcript}");
}

#[test]
fn the_form_can_be_edited_before_sending() {
    let params = form(json!({"a": {"type": "string"}, "b": {"type": "integer"}}), json!([]));
    // First pass: a = one, b left out; edit: a kept (Enter), b = 2; send.
    let (result, transcript) = run(&params, "one\n\ne\n\n2\ny\n");
    assert_eq!(accepted(&result), &json!({"a": "one", "b": 2}));
    assert!(transcript.contains("a [one]: "), "{transcript}");
}

#[test]
fn decline_and_cancel_at_any_point() {
    let params = form(json!({"a": {"type": "string"}, "b": {"type": "string"}}), json!([]));
    for (answers, action) in [
        (":decline\n", ElicitationAction::Decline),
        ("x\n:cancel\n", ElicitationAction::Cancel),
        ("x\n", ElicitationAction::Cancel), // end of input at the second field
        ("", ElicitationAction::Cancel),
        ("x\ny\nn\n", ElicitationAction::Decline), // at the summary
        ("x\ny\nc\n", ElicitationAction::Cancel),
        ("x\ny\n", ElicitationAction::Cancel), // end of input at the summary
    ] {
        let (result, _) = run(&params, answers);
        assert_eq!(result.action, action, "answers {answers:?}");
        assert_eq!(result.content, None, "answers {answers:?}");
    }
}

#[test]
fn an_empty_form_is_just_confirmed() {
    let params = form(json!({}), json!([]));
    let (result, _) = run(&params, "\n");
    assert_eq!(accepted(&result), &json!({}));
}

#[test]
fn url_mode_shows_the_url_and_its_site() {
    let params = params(json!({
        "mode": "url", "message": "Sign in", "url": "https://auth.example.com/login?x=1",
        "elicitationId": "e1",
    }));
    let (result, transcript) = run(&params, "later\ny\n");
    assert_eq!(result.action, ElicitationAction::Accept);
    assert_eq!(result.content, None);
    assert!(transcript.contains("https://auth.example.com/login?x=1\n  site: auth.example.com\n"));
    assert!(transcript.contains("  ✗ answer y, n or c\nOpen it yourself"), "{transcript}");
    assert_eq!(run(&params, "n\n").0.action, ElicitationAction::Decline);
    assert_eq!(run(&params, "c\n").0.action, ElicitationAction::Cancel);
    assert_eq!(run(&params, "").0.action, ElicitationAction::Cancel);
}

#[test]
fn the_approval_question_of_the_gateway_can_be_answered() {
    // What toolgate's `approval` interceptor sends (crates/toolgate-interceptors).
    let params = params(json!({
        "message": "toolgate: allow the call fs__write (server fs)?",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "decision": {"type": "string", "title": "Decision", "enum": ["allow once", "allow this exact call for 10m", "deny"]},
                "reason": {"type": "string", "title": "Reason (optional)"},
            },
            "required": ["decision"],
        },
    }));
    let (result, _) = run(&params, "3\nnot now\n\n");
    assert_eq!(accepted(&result), &json!({"decision": "deny", "reason": "not now"}));
}

#[test]
fn escapes_in_what_the_server_sends_are_shown_not_obeyed() {
    let params = params(json!({
        "message": "hi\u{1b}[2J",
        "requestedSchema": {"type": "object", "properties": {"a\u{1b}": {"type": "string", "description": "d\u{1b}"}}},
    }));
    let (_, transcript) = run(&params, "");
    assert!(!transcript.contains('\u{1b}'), "{transcript:?}");
    assert!(transcript.contains("hi\\u{1b}[2J"));
}

#[test]
fn dates_and_times() {
    for good in ["2000-02-29", "1999-12-31"] {
        assert!(check_date(good).is_ok(), "{good}");
    }
    for bad in ["1900-02-29", "2024-13-01", "2024-1-01", "2024-04-31", "20240401"] {
        assert!(check_date(bad).is_err(), "{bad}");
    }
    for good in
        ["2024-01-01T00:00:00Z", "2024-01-01t23:59:60.123-05:30", "2024-01-01T12:00:00+00:00"]
    {
        assert!(check_date_time(good).is_ok(), "{good}");
    }
    for bad in [
        "2024-01-01T24:00:00Z",
        "2024-01-01T12:00Z",
        "2024-01-01T12:00:00",
        "2024-01-01T12:00:00.Z",
        "2024-01-01T12:00:00+0100",
        "2024-01-01",
    ] {
        assert!(check_date_time(bad).is_err(), "{bad}");
    }
    for good in ["a@b", "first.last@example.co.uk"] {
        assert!(check_email(good).is_ok(), "{good}");
    }
    for bad in ["@b", "a@", "a b@c", "a@b..c", "ab"] {
        assert!(check_email(bad).is_err(), "{bad}");
    }
}
