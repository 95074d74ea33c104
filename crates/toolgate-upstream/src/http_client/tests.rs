//! Tests of the HTTP client's repair: an id-less error to a request in a session counts as an
//! expired session.

use super::*;

fn message(json: &str) -> ClientJsonRpcMessage {
    serde_json::from_str(json).expect("a client message")
}

fn answer(json: &str) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
    Ok(StreamableHttpPostResponse::Json(
        serde_json::from_str(json).expect("a server message"),
        None,
    ))
}

const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}"#;
const NOTE: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const ID_LESS: &str = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}"#;
const ANSWERED: &str =
    r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Unknown tool: echo"}}"#;

#[test]
fn an_id_less_error_to_a_request_in_a_session_is_an_expired_session() {
    let session: Arc<str> = "s-1".into();
    let outcome = expired_session(&message(CALL), Some(&session), answer(ID_LESS));
    assert!(matches!(outcome, Err(StreamableHttpError::SessionExpired)), "{outcome:?}");
}

#[test]
fn other_answers_pass_unchanged() {
    let session: Arc<str> = "s-1".into();
    // No session: nothing to re-initialise.
    let outcome = expired_session(&message(CALL), None, answer(ID_LESS));
    assert!(matches!(outcome, Ok(StreamableHttpPostResponse::Json(..))), "{outcome:?}");
    // An error that names the request is the server's answer to it.
    let outcome = expired_session(&message(CALL), Some(&session), answer(ANSWERED));
    assert!(matches!(outcome, Ok(StreamableHttpPostResponse::Json(..))), "{outcome:?}");
    // A notification awaits no answer; retrying it would only repeat it.
    let outcome = expired_session(&message(NOTE), Some(&session), answer(ID_LESS));
    assert!(matches!(outcome, Ok(StreamableHttpPostResponse::Json(..))), "{outcome:?}");
}
