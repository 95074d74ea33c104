//! Property tests of the HTTP front's JSON-RPC entry, through the whole router: any body
//! POSTed to `/mcp` that is not a JSON-RPC message gets `400` with exactly the JSON-RPC error
//! the stdio front would write (its id the request's where one can be read, else `null`);
//! any other body gets an answer that is not a server error, in time.

use std::time::Duration;

use axum::body::Body;
use http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolgate_audit::EventBus;
use toolgate_gateway::{Gateway, Recorder, StartupWait};
use toolgate_intercept::Pipeline;
use tower::ServiceExt as _;

use crate::jsonrpc::{self, props::bytes};
use crate::serve::{HttpOptions, MCP_PATH, http_router};

/// POSTs `body` and checks the answer.
async fn check(router: axum::Router, body: Vec<u8>) -> Result<(), TestCaseError> {
    let request = Request::post(MCP_PATH)
        .header(header::HOST, "127.0.0.1")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.clone()))
        .expect("a request");
    let response = tokio::time::timeout(Duration::from_secs(10), router.oneshot(request))
        .await
        .map_err(|_| TestCaseError::fail("no answer in 10 s"))?
        .expect("the router is infallible");
    let status = response.status();
    prop_assert!(!status.is_server_error(), "{} for {:?}", status, String::from_utf8_lossy(&body));
    let Err(rejection) = jsonrpc::parse_message(&body) else { return Ok(()) };
    prop_assert_eq!(status, StatusCode::BAD_REQUEST);
    let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
    prop_assert_eq!(content_type.as_ref().and_then(|v| v.to_str().ok()), Some("application/json"));
    let answer = response.into_body().collect().await.expect("the body").to_bytes();
    let answer: Value = serde_json::from_slice(&answer).expect("a JSON answer");
    prop_assert_eq!(&answer, &rejection.to_json());
    jsonrpc::props::check_error_answer(&answer, &body)
}

#[test]
fn any_body_gets_its_json_rpc_error_or_an_answer() {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let shutdown = CancellationToken::new();
    let router = runtime.block_on(async {
        let gateway = Gateway::start(
            &[],
            StartupWait::All,
            Pipeline::new(Vec::new()).expect("an empty pipeline"),
            Recorder::new(EventBus::new(), Vec::new()),
        )
        .await;
        http_router(gateway, &HttpOptions::default(), shutdown.clone())
    });
    // As `proptest!` does: the case count from `PROPTEST_CASES`, failures kept beside the source.
    let mut runner = TestRunner::new(Config { source_file: Some(file!()), ..Config::default() });
    let result = runner.run(&bytes(), |body| runtime.block_on(check(router.clone(), body)));
    shutdown.cancel();
    if let Err(error) = result {
        panic!("{error}");
    }
}
