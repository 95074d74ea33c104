//! Unit tests for MRTR rounds and `requestState` sealing.

use super::*;

fn question(text: &str) -> mcp::InputRequest {
    let params =
        mcp::CreateMessageRequestParams::new(vec![mcp::SamplingMessage::user_text(text)], 100);
    mcp::InputRequest::CreateMessage(mcp::CreateMessageRequest::new(params))
}

fn answer() -> serde_json::Value {
    let result = mcp::CreateMessageResult::new(
        mcp::SamplingMessage::assistant_text("sampled"),
        "test-model".to_owned(),
    );
    serde_json::to_value(result).expect("serializable")
}

/// The first round of `question(text)`: its sealed state.
fn first_round(seal: &StateSeal, text: &str) -> String {
    match ask::<mcp::CreateMessageResult>(seal, Retry::default(), "t", SAMPLING_KEY, question(text))
    {
        Ok(Asked::InputRequired(result)) => {
            let requests = result.input_requests.expect("input requests");
            assert_eq!(requests.get(SAMPLING_KEY), Some(&question(text)));
            result.request_state.expect("a request state")
        }
        other => panic!("expected InputRequired, got {other:?}"),
    }
}

fn retry(state: Option<String>, with_answer: bool) -> Retry {
    let responses =
        with_answer.then(|| mcp::InputResponses::from([(SAMPLING_KEY.to_owned(), answer())]));
    Retry { state, responses }
}

#[test]
fn a_sealed_round_is_answered() {
    let seal = StateSeal::new();
    let state = first_round(&seal, "hi");
    let asked = ask::<mcp::CreateMessageResult>(
        &seal,
        retry(Some(state), true),
        "t",
        SAMPLING_KEY,
        question("hi"),
    );
    match asked {
        Ok(Asked::Answered(result)) => assert_eq!(result.model, "test-model"),
        other => panic!("expected an answer, got {other:?}"),
    }
}

#[test]
fn a_state_without_the_answer_asks_again() {
    let seal = StateSeal::new();
    let state = first_round(&seal, "hi");
    let asked = ask::<mcp::CreateMessageResult>(
        &seal,
        retry(Some(state), false),
        "t",
        SAMPLING_KEY,
        question("hi"),
    );
    assert!(matches!(asked, Ok(Asked::InputRequired(_))), "{asked:?}");
}

#[test]
fn bad_states_are_rejected() {
    let seal = StateSeal::new();
    let state = first_round(&seal, "hi");
    let rejected = |state: Option<String>, tool: &str, text: &str| {
        let asked = ask::<mcp::CreateMessageResult>(
            &seal,
            retry(state, true),
            tool,
            SAMPLING_KEY,
            question(text),
        );
        match asked {
            Err(error) => {
                assert_eq!(error.code, mcp::ErrorCode::INVALID_PARAMS);
                error.message.into_owned()
            }
            Ok(other) => panic!("expected a rejection, got {other:?}"),
        }
    };
    assert!(rejected(None, "t", "hi").contains("without a requestState"));
    assert!(rejected(Some(state.clone()), "other", "hi").contains("another tool call"));
    assert!(rejected(Some(state.clone()), "t", "changed").contains("another tool call"));
    let tampered = state.replacen("\"tool\":\"t\"", "\"tool\":\"u\"", 1);
    assert_ne!(tampered, state);
    assert!(rejected(Some(tampered), "u", "hi").contains("bad signature"));
    assert!(rejected(Some("garbage".to_owned()), "t", "hi").contains("malformed"));
    let foreign = first_round(&StateSeal::new(), "hi");
    assert!(rejected(Some(foreign), "t", "hi").contains("bad signature"));
}

#[test]
fn expired_states_are_rejected() {
    let seal = StateSeal::new();
    let round = Round { tool: "t".into(), key: SAMPLING_KEY.into(), request: "r".into() };
    let payload = serde_json::to_string(&Payload { round, expires: 1 }).expect("serializable");
    let state = format!("{}.{payload}", seal.tag(&payload));
    assert_eq!(seal.open(&state), Err("expired"));
}

#[test]
fn malformed_answers_are_invalid_params() {
    let seal = StateSeal::new();
    let state = first_round(&seal, "hi");
    let responses =
        mcp::InputResponses::from([(SAMPLING_KEY.to_owned(), serde_json::json!({ "x": 1 }))]);
    let asked = ask::<mcp::CreateMessageResult>(
        &seal,
        Retry { state: Some(state), responses: Some(responses) },
        "t",
        SAMPLING_KEY,
        question("hi"),
    );
    let error = asked.expect_err("a malformed answer must be rejected");
    assert!(error.message.contains("malformed"), "{error:?}");
}
