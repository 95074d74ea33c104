//! A server that signs in each caller (`oauth = { per_principal = true }`), end to end with
//! real parts: a real authorization server (oidc-provider), a real MCP resource server behind
//! it (a second toolgate with `[auth]`, which records who each call came as), and the gateway
//! under test serving two callers who proved who they are with their own tokens. Each caller
//! is first given a link to sign in (their call does not go out with anyone else's token),
//! signs in as a different person, and from then on their calls reach the server as that
//! person, never as the other or as the gateway's own sign-in.

use std::path::Path;
use std::process::Stdio;

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::Command;
use toolgate_testkit::oidc::{CI_ACME, CI_GLOBEX, OidcProvider};

use crate::deps::free_port;
use crate::support::*;

/// The bearer token of the gateway's admin API.
const ADMIN_TOKEN: &str = "per-caller-admin-token-0123456789";

/// The resource server: toolgate serving the fixture, its `/mcp` guarded by `provider`'s
/// tokens, recording each call's principal in its audit log.
async fn resource_server(provider: &OidcProvider) -> (ConfigDir, HttpGateway) {
    let config = ConfigDir::new(&format!(
        "{}\n[audit]\nfile = \"audit.jsonl\"\n\n[auth]\nissuer = {}\nscopes = [\"mcp:tools\"]\n\
         tenant_claim = \"tenant\"\n",
        fixture_server("fx", "stdio", None),
        toml_str(provider.issuer()),
    ));
    let server = HttpGateway::start(&config.path()).await;
    (config, server)
}

/// Signs the gateway's own sign-in to `up` in, as `account`: `toolgate login up
/// --no-browser`, its address followed through the authorization server's automatic login.
async fn operator_login(
    config: &Path,
    home: &[(&str, &Path)],
    provider: &OidcProvider,
    account: &str,
) {
    let mut login = Command::new(toolgate_bin())
        .args(["login", "up", "--no-browser", "--config"])
        .arg(config)
        .envs(home.iter().map(|(k, v)| (*k, *v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn toolgate login");
    let mut stderr = BufReader::new(login.stderr.take().expect("stderr")).lines();
    let address = loop {
        let line = stderr.next_line().await.expect("read").expect("an address before the end");
        if line.trim_start().starts_with("http") {
            break line.trim().to_owned();
        }
    };
    let redirect = provider.authorize(&format!("{address}&login_hint={account}")).await;
    reqwest::get(&redirect).await.expect("the redirect reaches toolgate login");
    let output = login.wait_with_output().await.expect("login ends");
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success() && said.contains(&format!("as {account}")), "{said}");
}

/// Calls `up__fx__echo` (the fixture's `echo` behind the resource server) through the gateway at `url` with the caller's `token`: the result's text
/// and whether it is an error.
async fn echo(url: &str, token: &str, text: &str) -> (String, bool) {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
    );
    let client = ().serve(transport).await.expect("the gateway takes the caller");
    let mut arguments = serde_json::Map::new();
    arguments.insert("text".into(), text.into());
    let result = client
        .call_tool(CallToolRequestParams::new("up__fx__echo").with_arguments(arguments))
        .await
        .expect("an answer");
    let _ = client.cancel().await;
    let said = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    (said, result.is_error == Some(true))
}

/// The sign-in link in a tool error.
fn link(said: &str) -> String {
    let start = said.find("http").unwrap_or_else(|| panic!("no link in: {said}"));
    said[start..].split_whitespace().next().expect("a link").to_owned()
}

/// The principals the resource server recorded calls of its `echo` from.
fn callers_seen(audit: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(audit).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|r| r["kind"] == "tools/call/started")
        .filter_map(|r| r["principal"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn each_caller_reaches_the_server_with_their_own_sign_in_only() {
    let provider = OidcProvider::start().await;
    let (upstream_config, upstream) = resource_server(&provider).await;
    let audit = upstream_config.dir().join("audit.jsonl");

    let home = tempfile::tempdir().expect("temp dir");
    let state = home.path().join("state");
    let conf = home.path().join("config");
    let env: [(&str, &Path); 2] = [("XDG_STATE_HOME", &state), ("XDG_CONFIG_HOME", &conf)];
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}");
    let config = ConfigDir::new(&format!(
        "[gateway]\npublic_url = {}\n\n[servers.up]\nurl = {}\noauth = {{ per_principal = true }}\n\n\
         [auth]\nissuer = {}\nscopes = [\"mcp:tools\"]\ntenant_claim = \"tenant\"\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntokens = {{ ops = \"{ADMIN_TOKEN}\" }}\n",
        toml_str(&public),
        toml_str(&upstream.url),
        toml_str(provider.issuer()),
    ));
    // The gateway's own sign-in, with which it lists the server's tools: bob's.
    operator_login(&config.path(), &env, &provider, "bob").await;
    let listen = format!("127.0.0.1:{port}");
    let gateway = HttpGateway::start_with_env(&config.path(), &["--listen", &listen], &env).await;
    let acme = provider.client_credentials(CI_ACME, &gateway.url, &["mcp:tools"]).await;
    let globex = provider.client_credentials(CI_GLOBEX, &gateway.url, &["mcp:tools"]).await;

    // Not signed in: a link, and nothing reaches the server (not even as the gateway's bob).
    let (said, error) = echo(&gateway.url, &acme, "from acme").await;
    assert!(error && said.contains("sign in"), "{said}");
    assert!(callers_seen(&audit).is_empty(), "{:?}", callers_seen(&audit));
    // Calling again before signing in gives the same link (no new sign-in is started).
    let (again, _) = echo(&gateway.url, &acme, "from acme").await;
    assert_eq!(link(&again), link(&said));
    let redirect = provider.authorize(&format!("{}&login_hint=alice", link(&said))).await;
    assert!(redirect.starts_with(&format!("{public}/oauth/callback?")), "{redirect}");
    let page = reqwest::get(&redirect).await.expect("the gateway takes the redirect");
    let status = page.status();
    let text = page.text().await.expect("a page");
    assert!(status.is_success() && text.contains("Signed in to up as alice"), "{status}: {text}");

    let (said, error) = echo(&gateway.url, &acme, "from acme").await;
    assert!(!error && said.contains("from acme"), "{said}");
    assert_eq!(callers_seen(&audit), ["jwt:alice@acme"]);

    // The second caller is not let through on the first one's sign-in either.
    let (said, error) = echo(&gateway.url, &globex, "from globex").await;
    assert!(error && said.contains("sign in"), "{said}");
    assert_eq!(callers_seen(&audit), ["jwt:alice@acme"]);
    let redirect = provider.authorize(&format!("{}&login_hint=bob", link(&said))).await;
    reqwest::get(&redirect).await.expect("the gateway takes the redirect");
    let (said, error) = echo(&gateway.url, &globex, "from globex").await;
    assert!(!error && said.contains("from globex"), "{said}");
    let (said, error) = echo(&gateway.url, &acme, "acme again").await;
    assert!(!error && said.contains("acme again"), "{said}");
    assert_eq!(callers_seen(&audit), ["jwt:alice@acme", "jwt:bob@globex", "jwt:alice@acme"]);

    // A redirect played twice, or made up, signs no one in.
    let again = reqwest::get(&redirect).await.expect("answered");
    assert_eq!(again.status(), 400);

    // Each caller's tokens are theirs, in their own vault entries beside the gateway's.
    let vault = || {
        let files = std::fs::read_dir(state.join("toolgate/oauth")).expect("the vault");
        files
            .filter(|f| {
                f.as_ref().is_ok_and(|f| f.path().extension().is_some_and(|e| e == "token"))
            })
            .count()
    };
    assert_eq!(vault(), 3, "the gateway's own sign-in and one per caller");

    // An administrator revokes the first caller's: their tokens go, their connection closes,
    // and their next call is a link again; the other caller is untouched.
    let line = gateway.wait_for_log(&["admin API at http://"]).await;
    let admin = line[line.find("http://").expect("a URL")..]
        .split_whitespace()
        .next()
        .expect("the admin URL")
        .trim_end_matches('/')
        .to_owned();
    let revoke = |principal: &str| {
        reqwest::Client::new()
            .delete(format!("{admin}/sign-ins/up/{principal}"))
            .bearer_auth(ADMIN_TOKEN)
            .send()
    };
    let answer: Value =
        revoke("jwt:ci-acme@acme").await.expect("answered").json().await.expect("JSON");
    assert_eq!(answer["revoked"], true, "{answer}");
    assert_eq!(vault(), 2);
    let (said, error) = echo(&gateway.url, &acme, "after revocation").await;
    assert!(error && said.contains("sign in"), "{said}");
    let (said, error) = echo(&gateway.url, &globex, "still here").await;
    assert!(!error && said.contains("still here"), "{said}");
    let unauthorised = reqwest::Client::new()
        .delete(format!("{admin}/sign-ins/up/jwt:ci-globex@globex"))
        .send()
        .await
        .expect("answered");
    assert_eq!(unauthorised.status(), 401, "only an administrator revokes");
}
