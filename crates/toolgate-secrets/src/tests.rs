//! The detectors on realistic text: one public example value of every kind (AWS's and
//! Stripe's documented examples, jwt.io's token, the IBAN registry's examples, Slack's
//! documentation placeholders; the rest made up in the real shape), and the look-alikes that
//! must be left alone.

use serde_json::json;

use super::*;

/// One example of each kind: the value, and (for kinds found by their context) the text it
/// is written in, with `{}` where the value goes.
pub(crate) const EXAMPLES: &[(&str, &str)] = &[
    ("aws_access_key", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("url_credentials", "s3cr3t-user:s3cr3t-pass"),
    ("bearer_token", "0123456789abcdefghijKLMN"),
    ("github_token", "ghp_1234567890abcdefghijABCDEFGHIJ123456"),
    (
        "github_token",
        "github_pat_11EXAMPLE0123456789abcd_0123456789abcdefEXAMPLEexample0123456789abcdefEXAMPLE",
    ),
    ("openai_key", "sk-proj-EXAMPLEexample0123456789EXAMPLEexample0123"),
    ("openai_key", "sk-EXAMPLEexample0123456789EXAMPLEexample01234567"),
    ("anthropic_key", "sk-ant-api03-EXAMPLEexample0123456789-EXAMPLEexample_0123456789AA"),
    ("slack_token", "xoxb-not-a-real-token-this-will-not-work"),
    (
        "slack_webhook",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    ("google_api_key", "AIzaSyEXAMPLE-example_0123456789ABCDEFG"),
    ("stripe_key", "sk_test_4eC39HqLyjWDarjtT1zdp7dc"),
    ("stripe_key", "pk_live_EXAMPLE0123456789abcdef"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ),
    ("email", "jane.doe@example.com"),
    ("card_number", "4242 4242 4242 4242"),
    ("card_number", "378282246310005"),
    ("card_number", "5555-5555-5555-4444"),
    ("iban", "GB82 WEST 1234 5698 7654 32"),
    ("iban", "DE89370400440532013000"),
    ("iban", "FR14 2004 1010 0505 0001 3M02 606"),
];

/// How `value` of `kind` is written in a text.
pub(crate) fn written(kind: &str, value: &str) -> String {
    match kind {
        "aws_secret_key" => format!("aws_secret_access_key={value}"),
        "url_credentials" => format!("https://{value}@db.example.com/"),
        "bearer_token" => format!("Authorization: Bearer {value}"),
        _ => value.to_owned(),
    }
}

fn detector() -> Detector {
    Detector::builtin()
}

/// What `text` becomes.
fn redacted(text: &str) -> String {
    detector().redact(text).text.into_owned()
}

#[test]
fn each_example_is_found_as_its_kind_in_a_sentence() {
    let detector = detector();
    for (kind, value) in EXAMPLES {
        let text = format!("before {} after", written(kind, value));
        let findings = detector.find(&text);
        assert_eq!(findings.len(), 1, "{kind}: {findings:?}");
        assert_eq!(findings[0].kind, *kind, "{value}");
        assert_eq!(&text[findings[0].span.clone()], *value, "{kind}");
        let expected = text.replace(value, &format!("[REDACTED:{kind}]"));
        assert_eq!(detector.redact(&text).text, expected, "{kind}");
    }
}

#[test]
fn values_with_context_keep_the_context() {
    let cases = [
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = [REDACTED:aws_secret_key]",
        ),
        (
            r#"{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}"#,
            r#"{"SecretAccessKey": "[REDACTED:aws_secret_key]"}"#,
        ),
        (
            "postgres://admin:s3cr3t-pass@db.example.com:5432/app",
            "postgres://[REDACTED:url_credentials]@db.example.com:5432/app",
        ),
        (
            "GET https://api.example.com/v1/items?page=2&access_token=abc123def456ghi789 HTTP/1.1",
            "GET https://api.example.com/v1/items?page=2&access_token=[REDACTED:url_credentials] HTTP/1.1",
        ),
        (
            "curl 'https://maps.example.com/geo?token=Zx81kQp20aLm77&q=x'",
            "curl 'https://maps.example.com/geo?token=[REDACTED:url_credentials]&q=x'",
        ),
        ("export API_KEY=f00dfeed1234beef", "export API_KEY=[REDACTED:url_credentials]"),
        (
            "Authorization: Bearer 0123456789abcdefghijKLMN",
            "Authorization: Bearer [REDACTED:bearer_token]",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(redacted(text), expected);
    }
}

#[test]
fn private_key_blocks_whole_escaped_or_cut_off() {
    let block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0example0\nQWERTYexample+/=\n-----END RSA PRIVATE KEY-----";
    assert_eq!(redacted(&format!("key:\n{block}\ndone")), "key:\n[REDACTED:private_key]\ndone");
    let openssh = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----";
    assert_eq!(redacted(openssh), "[REDACTED:private_key]");
    // Inside JSON text, the line breaks are `\n` escapes; the JSON stays valid.
    let json = serde_json::to_string(&json!({ "key": block })).unwrap();
    let out = redacted(&json);
    assert_eq!(out, r#"{"key":"[REDACTED:private_key]"}"#);
    // Cut off before its END line: the header and the body still go.
    let cut = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n\nThat was all.";
    assert_eq!(redacted(cut), "[REDACTED:private_key]\n\nThat was all.");
    // A public key is not a secret.
    let public =
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----";
    assert_eq!(redacted(public), public);
}

#[test]
fn look_alikes_are_left_alone() {
    let text = [
        // Hashes, ids, versions.
        "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (HEAD -> main)",
        "id 123e4567-e89b-12d3-a456-426614174000 and 12345678-1234-5678-1234-567812345678",
        "image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR42mP4z8AARAwQCgAf7gP9Y167WwAAAABJRU5ErkJggg==",
        // Times and numbers.
        "at 2026-01-15T10:30:00.123Z (1700000000000 ms, 1700000000123456 us)",
        "call +1 (555) 123-4567 or +44 20 7946 0958 or 0049 30 1234 5678 90",
        "order 4242424242424241 shipped; ref 1234 5678 9012 3456; total 1234567890123",
        "zeros 0000 0000 0000 0000; nines 9999999999999999",
        "a long reference 4242 4242 4242 4242 4242 4242 is no card",
        // Words and code.
        "skill-based routing with sk-learn-classifier-pipeline-v2 and task-ant-colony-sim",
        "@decorator\ndef f(): pass\n@app.route('/users/<id>')\nx = A@B.T",
        "see icon@2x.png and logo@3x.webp; ssh://git@github.com/org/repo.git; user@localhost",
        "ada..lovelace@example.com has a stray dot, and no part of it is an address",
        "Bearer authentication is in RFC 6750; tokens go in the Authorization header",
        "GB12 is a code; DE89 too; ZZ99 ABCD EFGH IJKL MNOP",
        "AKIAIOSFODNN7EXAMPLEX is too long; akiaiosfodnn7example is lower case",
        "https://example.com/search?q=token&key=short&page=2",
        "xoxb is a word; sk_live is a word; AIza short",
        "eyJhbGciOiJub25lIn0 alone is only a header; eyJub3QiOiJqd3QifQ.eyJhIjoxfQ.sig has no alg",
    ]
    .join("\n");
    let detector = detector();
    let findings = detector.find(&text);
    let shown: Vec<(&str, &str)> =
        findings.iter().map(|f| (f.kind, &text[f.span.clone()])).collect();
    assert!(shown.is_empty(), "found {shown:?}");
}

#[test]
fn cards_inside_longer_numbers_or_next_to_other_numbers() {
    // A valid card after a number that is not part of it.
    assert_eq!(
        redacted("ID 12 4242 4242 4242 4242"),
        "ID 12 [REDACTED:card_number]",
        "a separate number before the card is not part of it"
    );
    assert_eq!(redacted("card:4242424242424242."), "card:[REDACTED:card_number].");
    // Mixed separators are not a card.
    assert_eq!(redacted("4242-4242 4242-4242"), "4242-4242 4242-4242");
}

#[test]
fn two_ibans_next_to_each_other_are_two() {
    let text = "from GB82WEST12345698765432 to GB33BUKB20201555555555.";
    assert_eq!(redacted(text), "from [REDACTED:iban] to [REDACTED:iban].");
    assert_eq!(redacted("IBAN: GB82 WEST 1234 5698 7654 32 EUR"), "IBAN: [REDACTED:iban] EUR");
}

#[test]
fn precedence_when_findings_overlap() {
    // The same span: the more specific kind.
    let anthropic = "sk-ant-api03-EXAMPLEexample0123456789-EXAMPLEexample_0123456789AA";
    assert_eq!(detector().find(anthropic)[0].kind, "anthropic_key");
    let jwt = EXAMPLES.iter().find(|(k, _)| *k == "jwt").unwrap().1;
    assert_eq!(
        redacted(&format!("Authorization: Bearer {jwt}")),
        "Authorization: Bearer [REDACTED:jwt]"
    );
    assert_eq!(
        redacted(&format!("https://x.example.com/cb?id_token={jwt}&state=1")),
        "https://x.example.com/cb?id_token=[REDACTED:jwt]&state=1"
    );
    // Partly overlapping: one redaction over both, of the longer one's kind.
    let mut selection = Selection::all();
    selection.add_custom(Custom::new("ticket", "AKIAIOSFODNN7EXAMPLE-[0-9]+").unwrap()).unwrap();
    let with_custom = Detector::new(&selection);
    let text = "see AKIAIOSFODNN7EXAMPLE-42";
    let found = with_custom.find(text);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, "ticket");
    assert_eq!(&text[found[0].span.clone()], "AKIAIOSFODNN7EXAMPLE-42");
}

#[test]
fn redaction_counts_by_kind_and_is_idempotent() {
    let text = "a@example.com, b@example.org, AKIAIOSFODNN7EXAMPLE";
    let once = detector().redact(text);
    assert_eq!(once.counts.get("email"), 2);
    assert_eq!(once.counts.get("aws_access_key"), 1);
    assert_eq!(once.counts.total(), 3);
    assert_eq!(once.counts.to_json(), json!({"aws_access_key": 1, "email": 2}));
    let twice = detector().redact(&once.text);
    assert!(twice.counts.is_empty(), "markers are not found again");
    assert_eq!(twice.text, once.text);
    // Every kind, in the text around it, and a custom pattern that matches markers.
    let mut selection = Selection::all();
    selection.add_custom(Custom::new("bracketed", r"\[[A-Z]+:[a-z_]+\]").unwrap()).unwrap();
    let detector = Detector::new(&selection);
    for (kind, value) in EXAMPLES {
        let once = detector.redact(&written(kind, value)).text.into_owned();
        let twice = detector.redact(&once);
        assert_eq!(twice.text, once, "{kind}");
        assert!(twice.counts.is_empty(), "{kind}: {:?}", twice.counts);
    }
    assert_eq!(detector.redact("[NOTE:a_b]").text, "[REDACTED:bracketed]");
    // Only a whole marker, with a kind and its `]`, is left alone.
    let mut selection = Selection::none();
    selection.add_custom(Custom::new("bracketed", r"\[[A-Z]+:[a-z_]*\]?").unwrap()).unwrap();
    let detector = Detector::new(&selection);
    for text in ["[REDACTED:]", "[REDACTED:abc"] {
        assert_eq!(detector.redact(text).text, "[REDACTED:bracketed]", "{text}");
    }
    assert_eq!(detector.redact("[REDACTED:abc]").text, "[REDACTED:abc]");
}

#[test]
fn every_kind_together_in_one_text_leaves_none_of_them() {
    let text: String = EXAMPLES
        .iter()
        .map(|(kind, value)| format!("{kind}: {}\n", written(kind, value)))
        .collect();
    let out = detector().redact(&text);
    for (kind, value) in EXAMPLES {
        assert!(!out.text.contains(value), "{kind} left in:\n{}", out.text);
        let expected = written(kind, &format!("[REDACTED:{kind}]"));
        assert!(out.text.contains(&format!("{kind}: {expected}")), "{kind}");
    }
    assert_eq!(out.counts.total(), EXAMPLES.len());
}

#[test]
fn selections_from_names_exclusions_and_custom_detectors() {
    let only_email = Detector::new(&Selection::from_names(&["email"]).unwrap());
    assert_eq!(
        only_email.redact("AKIAIOSFODNN7EXAMPLE x@example.com").text,
        "AKIAIOSFODNN7EXAMPLE [REDACTED:email]"
    );
    let mut most = Selection::from_names(&["all"]).unwrap();
    most.exclude(&["email", "iban"]).unwrap();
    assert_eq!(most.builtins().count(), Builtin::ALL.len() - 2);
    assert_eq!(
        Selection::from_names(&["emails"]).unwrap_err().to_string(),
        format!(
            "unknown detector \"emails\" (known: all, {})",
            Builtin::ALL.map(|k| k.name()).join(", ")
        )
    );
    let mut selection = Selection::none();
    selection.add_custom(Custom::new("employee_id", "EMP-[0-9]{6}").unwrap()).unwrap();
    selection.add_custom(Custom::new("pin", r"pin=(?P<secret>[0-9]{4,8})\b").unwrap()).unwrap();
    let custom = Detector::new(&selection);
    let out = custom.redact("EMP-004211 logged in with pin=1234; EMP-12 is short");
    assert_eq!(
        out.text,
        "[REDACTED:employee_id] logged in with pin=[REDACTED:pin]; EMP-12 is short"
    );
    assert_eq!(custom.kinds(), ["employee_id", "pin"]);
    assert!(Detector::new(&Selection::none()).is_empty());
    assert!(!custom.is_empty() && !only_email.is_empty());
    assert_eq!(Detector::new(&Selection::none()).redact("a@example.com").text, "a@example.com");
    let names: Vec<(&str, &str)> =
        selection.custom().iter().map(|c| (c.name(), c.pattern())).collect();
    assert_eq!(names, [("employee_id", "EMP-[0-9]{6}"), ("pin", r"pin=(?P<secret>[0-9]{4,8})\b")]);
}

#[test]
fn a_selection_is_empty_only_without_builtins_and_custom_detectors() {
    assert!(Selection::none().is_empty());
    assert!(!Selection::all().is_empty());
    assert!(!Selection::from_names(&["email"]).unwrap().is_empty());
    let mut custom = Selection::none();
    custom.add_custom(Custom::new("emp", "EMP-[0-9]{6}").unwrap()).unwrap();
    assert!(!custom.is_empty());
    let mut excluded = Selection::all();
    excluded.exclude(&["all"]).unwrap();
    assert!(excluded.is_empty());
}

#[test]
fn counts_list_each_kind_and_ignore_zero() {
    let mut counts = Counts::default();
    counts.add("email", 0);
    assert!(counts.is_empty(), "adding none records no kind");
    assert_eq!(counts.to_json(), json!({}));
    counts.add("email", 2);
    counts.add("aws_access_key", 1);
    assert!(!counts.is_empty());
    assert_eq!(counts.iter().collect::<Vec<_>>(), [("aws_access_key", 1), ("email", 2)]);
    assert_eq!(marker("email"), "[REDACTED:email]");
}

#[test]
fn text_already_redacted_is_searched_after_its_markers() {
    let out = detector().redact("[REDACTED:email] wrote to b@example.com");
    assert_eq!(out.text, "[REDACTED:email] wrote to [REDACTED:email]");
    assert_eq!(out.counts.get("email"), 1);
}

#[test]
fn custom_detectors_refuse_bad_names_and_patterns() {
    let error = |name: &str, pattern: &str| Custom::new(name, pattern).unwrap_err().to_string();
    assert_eq!(
        error("Employee ID", "x"),
        "invalid detector name \"Employee ID\": use 1 to 64 of a-z, 0-9 and _, starting with a letter"
    );
    assert_eq!(
        error("email", "x"),
        "\"email\" is the name of a built-in detector; give the custom one another name"
    );
    assert_eq!(
        error("emp", "EMP-[0-9"),
        "the regex of detector \"emp\" does not compile: unclosed character class (at character 5)"
    );
    assert_eq!(
        error("emp", "(?P<x>a"),
        "the regex of detector \"emp\" does not compile: unclosed group (at character 1)"
    );
    assert_eq!(error("emp", "[0-9]*"), "the regex of detector \"emp\" matches the empty string");
    let mut selection = Selection::none();
    selection.add_custom(Custom::new("emp", "E").unwrap()).unwrap();
    assert_eq!(
        selection.add_custom(Custom::new("emp", "F").unwrap()).unwrap_err().to_string(),
        "two custom detectors are named \"emp\""
    );
}

#[test]
fn selections_extend_each_other() {
    let mut audit = Selection::from_names(&["email"]).unwrap();
    let mut pipeline = Selection::from_names(&["iban"]).unwrap();
    pipeline.add_custom(Custom::new("emp", "EMP-[0-9]{6}").unwrap()).unwrap();
    audit.extend(&pipeline);
    audit.extend(&pipeline);
    assert_eq!(audit.names(), ["emp", "iban", "email"]);
    // One name with another pattern, or one pattern under another name, is another detector.
    let mut other = Selection::none();
    other.add_custom(Custom::new("emp", "EMP-[0-9]{8}").unwrap()).unwrap();
    other.add_custom(Custom::new("staff", "EMP-[0-9]{6}").unwrap()).unwrap();
    audit.extend(&other);
    let custom: Vec<(&str, &str)> =
        audit.custom().iter().map(|c| (c.name(), c.pattern())).collect();
    assert_eq!(
        custom,
        [("emp", "EMP-[0-9]{6}"), ("emp", "EMP-[0-9]{8}"), ("staff", "EMP-[0-9]{6}")]
    );
}

#[test]
fn json_values_keys_and_card_numbers_as_numbers() {
    let mut value = json!({
        "user": {"email": "jane.doe@example.com", "age": 41},
        "cards": [4242424242424242u64, "4242 4242 4242 4242", 1234567890123u64],
        "by_mail": {"a@example.com": 1, "b@example.com": 2, "[REDACTED:email]": 3},
        "note": "nothing here",
    });
    let counts = detector().redact_json(&mut value);
    assert_eq!(
        value,
        json!({
            "user": {"email": "[REDACTED:email]", "age": 41},
            "cards": ["[REDACTED:card_number]", "[REDACTED:card_number]", 1234567890123u64],
            "by_mail": {"[REDACTED:email]#2": 1, "[REDACTED:email]#3": 2, "[REDACTED:email]": 3},
            "note": "nothing here",
        })
    );
    assert_eq!(counts.to_json(), json!({"card_number": 2, "email": 3}));
    let keys: Vec<&String> = value["by_mail"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["[REDACTED:email]#2", "[REDACTED:email]#3", "[REDACTED:email]"],
        "order kept"
    );
    // Records that repeat a key: a key redacted once is redacted in every record.
    let mut records = json!([{"a@example.com": 1, "n": 1}, {"a@example.com": 2, "n": 2}]);
    let counts = detector().redact_json(&mut records);
    assert_eq!(records, json!([{"[REDACTED:email]": 1, "n": 1}, {"[REDACTED:email]": 2, "n": 2}]));
    assert_eq!(counts.get("email"), 2);
}

#[test]
fn non_ascii_text_around_secrets() {
    assert_eq!(
        redacted(
            "Grüße an juergen@example.com — Schlüssel AKIAIOSFODNN7EXAMPLE ✓ 4242 4242 4242 4242€"
        ),
        "Grüße an [REDACTED:email] — Schlüssel [REDACTED:aws_access_key] ✓ [REDACTED:card_number]€"
    );
}

#[test]
fn json_text_stays_json_when_a_finding_spans_a_quote() {
    let detector = detector();
    // A key block split over two JSON strings: the span crosses the quotes between them.
    let text = r#"{"begin": "-----BEGIN PRIVATE KEY-----", "end": "MIIE-----END PRIVATE KEY-----", "n": 1}"#;
    let out = detector.redact_text(text);
    let value: serde_json::Value = serde_json::from_str(&out.text).expect("still JSON");
    assert_eq!(
        value,
        json!({"begin": "[REDACTED:private_key]", "end": "MIIE-----END PRIVATE KEY-----", "n": 1})
    );
    // Where no finding spans a quote, the text keeps its layout.
    let pretty = "{\n  \"to\": \"jane.doe@example.com\"\n}";
    assert_eq!(detector.redact_text(pretty).text, "{\n  \"to\": \"[REDACTED:email]\"\n}");
    // Not JSON: replaced in place.
    assert_eq!(detector.redact_text("to: jane.doe@example.com").text, "to: [REDACTED:email]");
}

/// Found by the property tests (`props/planted.rs`): a wide whitespace character before an
/// address made the e-mail check cut the text inside it, and the detector panicked.
#[test]
fn an_address_after_a_wide_space_is_found_without_a_panic() {
    for space in ['\u{a0}', '\u{2003}', '\u{3000}'] {
        let text = format!("mail{space}a@a.com");
        assert_eq!(redacted(&text), format!("mail{space}[REDACTED:email]"));
    }
}

/// Found by the property tests (`props/twice.rs`): a key written against a URL has no word
/// boundary until the URL is a marker; what redacting leaves is redacted again.
#[test]
fn a_value_that_its_neighbours_marker_reveals_is_redacted_too() {
    let text = "AKIAA0AA0A00AA00AA00https://hooks.slack.com/services/T00000000/B00000000/XXXX";
    let once = detector().redact(text);
    assert_eq!(once.text, "[REDACTED:aws_access_key][REDACTED:slack_webhook]");
    assert_eq!(once.counts.total(), 2);
    assert!(detector().find(&once.text).is_empty());
}

/// Found by the property tests (`props/json.rs`): a card number written as a JSON number in
/// JSON text became an unquoted marker, and the text was no longer JSON.
#[test]
fn a_card_number_as_a_json_number_in_json_text_stays_json() {
    let text = r#"{"card": 4242424242424242, "note": "x"}"#;
    let redacted = detector().redact_text(text);
    let value: serde_json::Value = serde_json::from_str(&redacted.text).expect("still JSON");
    assert_eq!(value, json!({"card": "[REDACTED:card_number]", "note": "x"}));
}

/// Found by the property tests (`props/json.rs`): in JSON text, an escape before a value hid
/// it (`"\nAKIA…"` reads as `nAKIA…`, with no word boundary before the key).
#[test]
fn a_value_after_an_escape_in_json_text_is_redacted() {
    let text = r#"{"log": "first line\nAKIAIOSFODNN7EXAMPLE", "tab": "\tAIzaSyEXAMPLE-example_0123456789ABCDEFG"}"#;
    let redacted = detector().redact_text(text);
    let value: serde_json::Value = serde_json::from_str(&redacted.text).expect("still JSON");
    assert_eq!(
        value,
        json!({"log": "first line\n[REDACTED:aws_access_key]", "tab": "\t[REDACTED:google_api_key]"})
    );
    // JSON text whose escapes hide nothing keeps its layout.
    let plain = "{\n  \"a\": \"x\\ny\",\n  \"mail\": \"ops@example.com\"\n}";
    assert_eq!(
        detector().redact_text(plain).text,
        "{\n  \"a\": \"x\\ny\",\n  \"mail\": \"[REDACTED:email]\"\n}"
    );
}
