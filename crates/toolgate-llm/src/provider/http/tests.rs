//! Tests of the HTTP loop against a server in this process on 127.0.0.1: headers, retries
//! with `Retry-After` on tokio's paused clock, errors, the idle timeout, cancellation.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State as AxumState;
use axum::http::{HeaderMap as AxumHeaders, Response, Uri};
use futures::{Stream, StreamExt};
use serde_json::json;
use tokio::sync::oneshot;

use super::*;
use crate::chat::{Message, StopReason};
use crate::provider::decode::MESSAGE_LIMIT;

/// What the server answers, in order.
enum Reply {
    /// A status with headers and a body.
    Status(u16, Vec<(&'static str, String)>, String),
    /// An event stream of these chunks; then it ends, or hangs if `hang`; `dropped` fires when
    /// the server's side of the stream is dropped (the client went away).
    Sse { chunks: Vec<String>, hang: bool, dropped: Option<oneshot::Sender<()>> },
    /// A success whose body breaks before its first byte.
    Broken,
}

/// One request as the server saw it.
struct Seen {
    path: String,
    headers: AxumHeaders,
    body: Value,
}

#[derive(Clone, Default)]
struct Script {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// Fires a oneshot when dropped.
struct DropSignal(Option<oneshot::Sender<()>>);
impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(signal) = self.0.take() {
            let _ = signal.send(());
        }
    }
}

fn body_of(chunks: Vec<String>, hang: bool, dropped: Option<oneshot::Sender<()>>) -> Body {
    let signal = DropSignal(dropped);
    let chunks = futures::stream::iter(chunks).map(|c| Ok::<_, Infallible>(Bytes::from(c)));
    let tail: std::pin::Pin<Box<dyn Stream<Item = Result<Bytes, Infallible>> + Send>> =
        if hang { futures::stream::pending().boxed() } else { futures::stream::empty().boxed() };
    Body::from_stream(chunks.chain(tail).map(move |item| {
        let _keep = &signal;
        item
    }))
}

async fn handle(
    AxumState(script): AxumState<Script>,
    uri: Uri,
    headers: AxumHeaders,
    body: Bytes,
) -> Response<Body> {
    script.seen.lock().expect("lock").push(Seen {
        path: uri.path().to_owned(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let reply = script.replies.lock().expect("lock").pop_front();
    match reply {
        Some(Reply::Status(status, headers, body)) => {
            let mut response = Response::builder().status(status);
            for (name, value) in headers {
                response = response.header(name, value);
            }
            response.body(Body::from(body)).expect("response")
        }
        Some(Reply::Sse { chunks, hang, dropped }) => Response::builder()
            .header("content-type", "text/event-stream")
            .body(body_of(chunks, hang, dropped))
            .expect("response"),
        Some(Reply::Broken) => {
            let broken = futures::stream::iter([Err::<Bytes, _>(std::io::Error::other("boom"))]);
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(broken))
                .expect("response")
        }
        None => Response::builder().status(500).body(Body::from("no more replies")).expect("500"),
    }
}

/// A server answering `replies`, and its address.
async fn server(replies: Vec<Reply>) -> (Script, String) {
    let script = Script::default();
    script.replies.lock().expect("lock").extend(replies);
    let app = Router::new().fallback(handle).with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (script, address)
}

fn config(dialect: Dialect, address: &str, max_retries: u32) -> ProviderConfig {
    ProviderConfig {
        dialect,
        base_url: format!("http://{address}/v1/"),
        api_key: Some("sk-secret-key".into()),
        max_retries,
        idle_timeout: Duration::from_secs(30),
        proxy: Default::default(),
    }
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "m".into(),
        messages: vec![Message::user_text("hi")],
        ..ChatRequest::default()
    }
}

async fn collect(provider: &Arc<dyn Provider>) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let mut events = Vec::new();
    let mut stream = provider.stream(request());
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => {
                assert!(stream.next().await.is_none(), "nothing after an error");
                return (events, Some(error));
            }
        }
    }
    (events, None)
}

const HELLO: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

fn rate_limited(headers: Vec<(&'static str, String)>) -> Reply {
    let body = json!({"error": {"message": "Rate limit reached for gpt-4o", "type": "requests",
        "param": null, "code": "rate_limit_exceeded"}});
    Reply::Status(429, headers, body.to_string())
}

#[tokio::test(start_paused = true)]
async fn retries_honour_retry_after_and_retry_after_ms_then_stream() {
    let (script, address) = server(vec![
        rate_limited(vec![("retry-after", "2".into())]),
        Reply::Status(503, vec![("retry-after-ms", "1500".into())], "upstream busy".into()),
        Reply::Sse { chunks: vec![HELLO.into()], hang: false, dropped: None },
    ])
    .await;
    let provider = connect(config(Dialect::OpenaiChat, &address, 2)).expect("provider");
    let start = tokio::time::Instant::now();
    let (events, error) = collect(&provider).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        events[..2],
        [
            StreamEvent::Retrying {
                attempt: 1,
                wait: Duration::from_secs(2),
                reason: format!(
                    "{address} answered HTTP 429 (rate_limit_exceeded): Rate limit reached for gpt-4o"
                ),
            },
            StreamEvent::Retrying {
                attempt: 2,
                wait: Duration::from_millis(1500),
                reason: format!("{address} answered HTTP 503: Service Unavailable"),
            },
        ]
    );
    assert_eq!(events[2], StreamEvent::Text("Hello".into()));
    assert!(matches!(&events[3], StreamEvent::Finished(f) if f.stop == StopReason::End));
    assert_eq!(events.len(), 4);
    assert!(start.elapsed() >= Duration::from_millis(3500), "{:?}", start.elapsed());

    let seen = script.seen.lock().expect("lock");
    assert_eq!(seen.len(), 3);
    for request in seen.iter() {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.headers["authorization"], "Bearer sk-secret-key");
        assert_eq!(request.headers["content-type"], "application/json");
        assert_eq!(request.headers["accept"], "text/event-stream");
        assert_eq!(request.body["stream"], json!(true));
        assert_eq!(request.body["messages"], json!([{"role": "user", "content": "hi"}]));
    }
}

#[tokio::test(start_paused = true)]
async fn out_of_retries_the_providers_error_is_returned_without_the_key() {
    let (script, address) =
        server(vec![rate_limited(vec![]), rate_limited(vec![("retry-after", "1".into())])]).await;
    let provider = connect(config(Dialect::OpenaiChat, &address, 1)).expect("provider");
    let (events, error) = collect(&provider).await;
    // No Retry-After: backoff from 500 ms, jittered to half at least.
    assert!(
        matches!(&events[..], [StreamEvent::Retrying { attempt: 1, wait, .. }]
            if *wait >= Duration::from_millis(250) && *wait <= Duration::from_millis(500)),
        "{events:?}"
    );
    let error = error.expect("error");
    assert!(
        matches!(&error, ProviderError::Status { status: 429, code: Some(code), .. } if code == "rate_limit_exceeded"),
        "{error:?}"
    );
    let text = error.to_string();
    assert_eq!(
        text,
        format!("{address} answered HTTP 429 (rate_limit_exceeded): Rate limit reached for gpt-4o")
    );
    assert!(!format!("{error:?}").contains("sk-secret"));
    assert_eq!(script.seen.lock().expect("lock").len(), 2);
}

#[tokio::test(start_paused = true)]
async fn client_errors_and_long_retry_afters_are_not_retried() {
    let anthropic_error = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "messages: roles must alternate"}, "request_id": "req_1"});
    let (script, address) = server(vec![
        Reply::Status(400, vec![], anthropic_error.to_string()),
        rate_limited(vec![("retry-after", "3600".into())]),
    ])
    .await;
    let provider = connect(config(Dialect::Anthropic, &address, 3)).expect("provider");
    let (events, error) = collect(&provider).await;
    assert!(events.is_empty());
    assert_eq!(
        error.expect("error").to_string(),
        format!(
            "{address} answered HTTP 400 (invalid_request_error): messages: roles must alternate"
        )
    );
    {
        let seen = script.seen.lock().expect("lock");
        assert_eq!(seen[0].path, "/v1/messages");
        assert_eq!(seen[0].headers["x-api-key"], "sk-secret-key");
        assert_eq!(seen[0].headers["anthropic-version"], "2023-06-01");
        assert!(seen[0].headers.get("authorization").is_none());
        assert_eq!(seen[0].body["max_tokens"], json!(8192));
    }
    let (events, error) = collect(&provider).await;
    assert!(events.is_empty());
    assert!(matches!(error, Some(ProviderError::Status { status: 429, .. })), "{error:?}");
    assert_eq!(script.seen.lock().expect("lock").len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_refused_connection_is_retried_then_reported() {
    // Bound but not listening: connections are refused, and the port stays this test's.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind("127.0.0.1:0".parse().expect("address")).expect("bind");
    let address = socket.local_addr().expect("address").to_string();
    let provider = connect(config(Dialect::OpenaiResponses, &address, 2)).expect("provider");
    let (events, error) = collect(&provider).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events.iter().all(|e| matches!(e, StreamEvent::Retrying { .. })));
    match error {
        Some(ProviderError::Network { provider, message }) => {
            assert_eq!(provider, address);
            assert!(message.to_lowercase().contains("refused"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_stream_broken_before_its_first_event_is_retried() {
    let (script, address) = server(vec![
        Reply::Broken,
        Reply::Sse { chunks: vec![HELLO.into()], hang: false, dropped: None },
    ])
    .await;
    let provider = connect(config(Dialect::OpenaiChat, &address, 1)).expect("provider");
    let (events, error) = collect(&provider).await;
    assert!(error.is_none(), "{error:?}");
    assert!(
        matches!(&events[0], StreamEvent::Retrying { attempt: 1, reason, .. }
            if reason.starts_with(&format!("cannot reach {address}: "))),
        "{events:?}"
    );
    assert_eq!(events[1], StreamEvent::Text("Hello".into()));
    assert!(matches!(events[2], StreamEvent::Finished(_)));
    assert_eq!(script.seen.lock().expect("lock").len(), 2);
}

#[tokio::test(start_paused = true)]
async fn an_answer_in_one_json_body_is_read_whole_and_never_retried() {
    let json = || vec![("content-type", "application/json".to_owned())];
    let completion = json!({
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    });
    let (script, address) = server(vec![
        Reply::Status(200, json(), completion.to_string()),
        Reply::Status(200, json(), "{\"choices\": [".into()),
        Reply::Status(200, json(), "{\"object\": \"list\"}".into()),
    ])
    .await;
    let provider = connect(config(Dialect::OpenaiChat, &address, 3)).expect("provider");
    let (events, error) = collect(&provider).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(events[0], StreamEvent::Text("Hello".into()));
    let StreamEvent::Finished(finished) = &events[1] else { panic!("{events:?}") };
    assert_eq!((finished.turn.text.as_str(), &finished.stop), ("Hello", &StopReason::End));
    assert_eq!(finished.usage.map(|u| u.output_tokens), Some(1));

    let (events, error) = collect(&provider).await;
    assert!(events.is_empty());
    assert_eq!(
        error.expect("error").to_string(),
        format!("{address} sent something unexpected: a body that is not JSON (line 1, column 13)")
    );
    let (_, error) = collect(&provider).await;
    assert_eq!(
        error.expect("error").to_string(),
        format!(
            "{address} sent something unexpected: a body that is not a chat completion (no \
             choices)"
        )
    );
    assert_eq!(script.seen.lock().expect("lock").len(), 3, "none was retried");

    // A dialect that always streams refuses one.
    let (_, address) = server(vec![Reply::Status(200, json(), completion.to_string())]).await;
    let provider = connect(config(Dialect::Anthropic, &address, 0)).expect("provider");
    let (_, error) = collect(&provider).await;
    assert_eq!(
        error.expect("error").to_string(),
        format!(
            "{address} sent something unexpected: a JSON body where an event stream was asked for"
        )
    );
}

#[tokio::test(start_paused = true)]
async fn silence_longer_than_the_idle_timeout_ends_the_stream() {
    let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let (_script, address) =
        server(vec![Reply::Sse { chunks: vec![first.into()], hang: true, dropped: None }]).await;
    let mut config = config(Dialect::OpenaiChat, &address, 0);
    config.idle_timeout = Duration::from_secs(5);
    let provider = connect(config).expect("provider");
    let start = tokio::time::Instant::now();
    let (events, error) = collect(&provider).await;
    assert_eq!(events, vec![StreamEvent::Text("Hel".into())]);
    let error = error.expect("error");
    assert!(matches!(error, ProviderError::Idle { after, .. } if after == Duration::from_secs(5)));
    assert!(start.elapsed() >= Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn a_stream_cut_short_is_truncated_and_an_in_stream_error_is_reported() {
    let cut = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let error = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let (_script, address) = server(vec![
        Reply::Sse { chunks: vec![cut.into()], hang: false, dropped: None },
        Reply::Sse { chunks: vec![error.into()], hang: false, dropped: None },
    ])
    .await;
    let provider = connect(config(Dialect::OpenaiChat, &address, 3)).expect("provider");
    let (events, error) = collect(&provider).await;
    assert_eq!(events, vec![StreamEvent::Text("Hel".into())]);
    assert_eq!(
        error.expect("error").to_string(),
        format!("{address}'s stream ended before the response was complete")
    );
    let provider = connect(config(Dialect::Anthropic, &address, 3)).expect("provider");
    let (events, error) = collect(&provider).await;
    assert!(events.is_empty());
    assert_eq!(
        error.expect("error").to_string(),
        format!("{address} reported an error in its stream (overloaded_error): Overloaded")
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_the_stream_cancels_the_request() {
    let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let (dropped, gone) = oneshot::channel();
    let (_script, address) =
        server(vec![Reply::Sse { chunks: vec![first.into()], hang: true, dropped: Some(dropped) }])
            .await;
    let provider = connect(config(Dialect::OpenaiChat, &address, 0)).expect("provider");
    let mut stream = provider.stream(request());
    assert_eq!(stream.next().await.expect("event").expect("ok"), StreamEvent::Text("Hel".into()));
    drop(stream);
    // The server's body is dropped when the connection closes.
    gone.await.expect("the server saw the client go");
}

#[test]
fn bad_base_urls_are_refused_with_what_is_wrong() {
    let with = |url: &str| {
        let mut config = config(Dialect::OpenaiChat, "x", 0);
        config.base_url = url.into();
        connect(config).err().map(|e| e.to_string())
    };
    assert_eq!(
        with("ftp://example.com/v1"),
        Some("the provider's base_url \"ftp://example.com/v1\" is not an http or https URL".into())
    );
    assert_eq!(
        with("https://user:pw@example.com/v1"),
        Some(
            "the provider's base_url \"(a URL with credentials)\" must not hold credentials: \
             give the key as the API key"
                .into()
        )
    );
    assert!(with("https://example.com/v1?x=1").expect("error").contains("no query"));
    assert!(with("not a url").expect("error").contains("is not a URL"));
    assert_eq!(with("https://api.openai.com/v1"), None);
}

#[test]
fn a_key_never_goes_to_another_machine_over_plain_http() {
    let with = |url: &str, key: Option<&str>| {
        let mut config = config(Dialect::OpenaiChat, "x", 0);
        config.base_url = url.into();
        config.api_key = key.map(str::to_owned);
        connect(config).err()
    };
    let refused = with("http://10.0.0.5:8080/v1", Some("sk-secret-key")).expect("refused");
    assert_eq!(refused, ConnectError::KeyInTheClear { provider: "10.0.0.5:8080".into() });
    let message = refused.to_string();
    assert!(message.contains("plain http://") && message.contains("https://"), "{message}");
    assert!(!message.contains("sk-secret-key"), "{message}");
    // No key, nothing to leak: a server on the LAN that wants none is fine.
    assert!(with("http://10.0.0.5:8080/v1", None).is_none());
    assert!(with("http://localhost:11434/v1", Some("sk-secret-key")).is_none());
    assert!(with("https://10.0.0.5/v1", Some("sk-secret-key")).is_none());
}

#[test]
fn retry_after_in_seconds_milliseconds_or_as_a_date() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
    let headers = |pairs: &[(&'static str, &str)]| {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).expect("value"));
        }
        map
    };
    assert_eq!(retry_after(&headers(&[]), now), None);
    assert_eq!(retry_after(&headers(&[("retry-after", "7")]), now), Some(Duration::from_secs(7)));
    assert_eq!(
        retry_after(&headers(&[("retry-after", "0.5")]), now),
        Some(Duration::from_millis(500))
    );
    // 2015-10-21 07:28:00 GMT is `now`; ten seconds later:
    assert_eq!(
        retry_after(&headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:10 GMT")]), now),
        Some(Duration::from_secs(10))
    );
    assert_eq!(
        retry_after(&headers(&[("retry-after", "Wed, 21 Oct 2015 07:27:00 GMT")]), now),
        Some(Duration::ZERO)
    );
    assert_eq!(
        retry_after(&headers(&[("retry-after", "7"), ("retry-after-ms", "250")]), now),
        Some(Duration::from_millis(250))
    );
    assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
    assert_eq!(retry_after(&headers(&[("retry-after", "-1")]), now), None);
}

#[test]
fn error_bodies_in_each_providers_shape() {
    let status = StatusCode::TOO_MANY_REQUESTS;
    let openai = br#"{"error":{"message":"Rate limit","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
    assert_eq!(
        error_body(openai, status),
        (Some("rate_limit_exceeded".into()), "Rate limit".into())
    );
    let openai_no_code =
        br#"{"error":{"message":"Bad","type":"invalid_request_error","code":null}}"#;
    assert_eq!(
        error_body(openai_no_code, status),
        (Some("invalid_request_error".into()), "Bad".into())
    );
    let anthropic =
        br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    assert_eq!(
        error_body(anthropic, status),
        (Some("overloaded_error".into()), "Overloaded".into())
    );
    let ollama = br#"{"error":"model \"llama9\" not found, try pulling it first"}"#;
    assert_eq!(
        error_body(ollama, StatusCode::NOT_FOUND),
        (None, "model \"llama9\" not found, try pulling it first".into())
    );
    // Not JSON, or JSON without a message: the status's reason, nothing of the body.
    assert_eq!(
        error_body(b"<html>Bad Gateway at 10.0.0.7</html>", StatusCode::BAD_GATEWAY),
        (None, "Bad Gateway".into())
    );
    assert_eq!(error_body(b"{}", StatusCode::BAD_GATEWAY), (None, "Bad Gateway".into()));
    let long = json!({"error": {"message": "x".repeat(5000)}}).to_string();
    assert_eq!(error_body(long.as_bytes(), status).1.chars().count(), MESSAGE_LIMIT + 1);
}
