//! A stdio server that exits during start-up: the error says how it ended (its exit status,
//! or the signal) beside its last words on stderr.

use std::path::Path;

use toolgate_config::{FixedEnvironment, Format, ServerConfig};
use toolgate_upstream::{ConnectError, ExitReason, Upstream, UpstreamError};

fn stdio(script: &str) -> ServerConfig {
    let text = format!(
        "[servers.quits]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nstartup_timeout = \"10s\"\n"
    );
    let config =
        toolgate_config::parse_str(&text, Format::Toml, Path::new("."), &FixedEnvironment::new())
            .expect("a valid config");
    config.servers.into_iter().next().expect("one server")
}

async fn connect_error(script: &str) -> ConnectError {
    match Upstream::connect(&stdio(script)).await {
        Err(UpstreamError::Connect { error, .. }) => error,
        Err(other) => panic!("not a connection error: {other}"),
        Ok(_) => panic!("it connected"),
    }
}

#[tokio::test]
async fn a_server_that_exits_at_once_is_reported_with_its_status_and_stderr() {
    let error = connect_error("echo 'missing API key' >&2; exit 3").await;
    let ConnectError::Exited { exit, stderr, .. } = &error else { panic!("{error:?}") };
    assert_eq!(*exit, ExitReason::Status(3));
    assert_eq!(stderr.0.last().map(String::as_str), Some("missing API key"));
    assert!(
        error.to_string().starts_with(
            "`sh`: the process exited with status 3 before completing the MCP handshake (its \
             stderr ended with:\n    missing API key"
        ),
        "{error}"
    );
}

#[tokio::test]
async fn a_server_killed_by_a_signal_says_which() {
    // `$$` is toolgate's escape of `$`.
    let error = connect_error("kill -TERM $$$$").await;
    let ConnectError::Exited { exit, .. } = &error else { panic!("{error:?}") };
    assert_eq!(*exit, ExitReason::Signal(15), "{error}");
    assert!(error.to_string().contains("exited on signal 15 (SIGTERM)"), "{error}");
}
