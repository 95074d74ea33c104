//! Each way a server can fail to connect, as `toolgate servers` reports it: the server's name,
//! its URL or command, and the cause in words, never a Rust type path. Every failing server is
//! real and local: a closed port, HTTP servers answering 401, 403, 404 or HTML, a plain HTTP
//! server asked for TLS, a server that accepts and never answers, a command that does not
//! exist, a process that exits at once. (An unknown host needs a name server, which tests do
//! not reach; `toolgate-upstream`'s `cause` tests cover it with a resolver that knows no
//! names.)

use std::net::SocketAddr;

use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde_json::Value;

use crate::support::{ConfigDir, run_toolgate, toml_str};

/// An HTTP server on a free port answering every request with `status`, an HTML body, and
/// (for 401) a bearer challenge.
async fn answering(status: StatusCode) -> SocketAddr {
    let app = axum::Router::new().fallback(move || async move {
        let mut response =
            (status, [(header::CONTENT_TYPE, "text/html")], "<html>hi</html>").into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, "Bearer realm=\"test\"".parse().unwrap());
        }
        response
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    address
}

/// A server that accepts connections and never says anything.
async fn silent() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    address
}

fn closed_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address")
}

fn http(name: &str, url: &str, extra: &str) -> String {
    format!("[servers.{name}]\nurl = {}\nstartup_timeout = \"3s\"\n{extra}\n", toml_str(url))
}

#[tokio::test]
async fn every_connection_failure_names_the_server_where_it_is_and_the_cause_in_words() {
    let html = answering(StatusCode::OK).await;
    let unauthorized = answering(StatusCode::UNAUTHORIZED).await;
    let forbidden = answering(StatusCode::FORBIDDEN).await;
    let missing = answering(StatusCode::NOT_FOUND).await;
    let quiet = silent().await;
    let refused = closed_port();
    let mut config = String::new();
    config += &http("refused", &format!("http://{refused}/mcp"), "");
    config += &http("tls", &format!("https://{html}/mcp"), "");
    config += &http("unauthorized", &format!("http://{unauthorized}/mcp"), "");
    config += &http("forbidden", &format!("http://{forbidden}/mcp"), "");
    config += &http("missing", &format!("http://{missing}/mcp"), "");
    config += &http("quiet", &format!("http://{quiet}/mcp"), "transport = \"streamable-http\"");
    config += &http("html", &format!("http://{html}/mcp"), "");
    config += "[servers.nocommand]\ncommand = \"toolgate-no-such-command-anywhere\"\n\n";
    config += "[servers.exits]\ncommand = \"sh\"\nargs = [\"-c\", \"echo 'missing API key' >&2; exit 3\"]\n";
    let config = ConfigDir::new(&config);
    let path = config.path();
    let output = run_toolgate(&["servers", "--json", "--config", path.to_str().unwrap()]).await;
    let servers: Vec<Value> = serde_json::from_slice(&output.stdout).expect("JSON");
    let error = |name: &str| -> String {
        let server = servers.iter().find(|s| s["name"] == name).expect("listed");
        server["error"].as_str().unwrap_or_else(|| panic!("{name} has no error")).to_owned()
    };
    let expected: [(&str, String, &str); 9] = [
        ("refused", format!("http://{refused}/mcp"), "connection refused"),
        ("tls", format!("https://{html}/mcp"), "TLS handshake failed"),
        ("unauthorized", format!("http://{unauthorized}/mcp"), "401 Unauthorized"),
        ("forbidden", format!("http://{forbidden}/mcp"), "403 Forbidden"),
        ("missing", format!("http://{missing}/mcp"), "404 Not Found"),
        ("quiet", format!("http://{quiet}/mcp"), "did not complete the MCP handshake within 3s"),
        ("html", format!("http://{html}/mcp"), "text/html, which is not MCP"),
        ("nocommand", "`toolgate-no-such-command-anywhere`".into(), "command not found"),
        ("exits", "`sh`".into(), "the process exited"),
    ];
    for (name, place, cause) in expected {
        let text = error(name);
        assert!(text.starts_with(&format!("upstream {name}: ")), "{name}: {text}");
        assert!(text.contains(&place), "{name} must say where: {text}");
        assert!(text.contains(cause), "{name} must say {cause:?}: {text}");
        for type_noise in ["::", "Transport [", "Some(", "Os {", "os error"] {
            assert!(!text.contains(type_noise), "{name} shows {type_noise:?}: {text}");
        }
    }
    assert!(error("exits").contains("missing API key"), "its stderr is shown");
}
