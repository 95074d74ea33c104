//! The causes in words, from real errors of the libraries involved where they can be made
//! here without reaching beyond 127.0.0.1.

use std::net::SocketAddr;
use std::sync::Arc;

use super::*;

/// A free port nothing listens on.
fn closed_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address")
}

/// A resolver that knows no names, so that a lookup fails here without asking anyone.
struct KnowsNoNames;

impl reqwest::dns::Resolve for KnowsNoNames {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let error: Box<dyn Error + Send + Sync> =
                Box::new(io::Error::other(format!("failed to lookup address information: {host}")));
            Err(error)
        })
    }
}

#[tokio::test]
async fn a_refused_connection_is_called_that() {
    let url = format!("http://{}/mcp", closed_port());
    let error = reqwest::Client::new().get(&url).send().await.expect_err("nothing listens");
    assert_eq!(describe(&error, Some(&url)), "connection refused");
}

#[tokio::test]
async fn an_unknown_host_is_named() {
    let client =
        reqwest::Client::builder().dns_resolver(Arc::new(KnowsNoNames)).build().expect("a client");
    let url = "http://mcp.nowhere.test/mcp";
    let error = client.get(url).send().await.expect_err("no such host");
    assert_eq!(describe(&error, Some(url)), "cannot resolve host `mcp.nowhere.test`");
}

#[test]
fn a_missing_command_is_called_that() {
    let error = std::process::Command::new("toolgate-no-such-command-anywhere")
        .spawn()
        .expect_err("no such command");
    assert_eq!(describe(&error, None), "command not found");
}

#[test]
fn http_statuses_say_what_they_usually_mean() {
    let unauthorized = StreamableHttpError::<reqwest::Error>::UnexpectedServerResponse(
        "HTTP 401 Unauthorized: go away".into(),
    );
    let text = describe(&unauthorized, Some("http://127.0.0.1:9/mcp"));
    assert!(
        text.starts_with("the server answered 401 Unauthorized (it wants credentials"),
        "{text}"
    );
    let missing = StreamableHttpError::<reqwest::Error>::UnexpectedServerResponse(
        "HTTP 404 Not Found: nope".into(),
    );
    assert!(describe(&missing, None).contains("404 Not Found (nothing is served at this URL"));
    let html =
        StreamableHttpError::<reqwest::Error>::UnexpectedContentType(Some("text/html".into()));
    assert!(describe(&html, None).contains("text/html, which is not MCP"));
}

#[test]
fn a_closed_handshake_of_a_child_says_the_process_exited() {
    let error = ClientInitializeError::ConnectionClosed("initialize response".into());
    assert!(describe(&error, None).starts_with("the process exited"));
    assert!(describe(&error, Some("http://x/mcp")).starts_with("the server closed"));
}

#[test]
fn unknown_errors_keep_their_own_words_without_os_error_numbers() {
    let error = io::Error::other("something odd (os error 99)");
    assert_eq!(describe(&error, None), "something odd");
    assert_eq!(strip_os_error("plain"), "plain");
}
