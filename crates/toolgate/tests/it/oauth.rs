//! toolgate as an OAuth 2.1 resource server, against a real authorization server (npm
//! `oidc-provider`, started by the testkit): the 401 names the protected resource metadata,
//! which names the issuer; a token for `/mcp` from that issuer is served as its principal, with
//! its groups and tenant; a token for another resource, from another signer, expired, unsigned
//! or without the required scope is refused, the last with a 403 that says what to ask for.

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use toolgate_testkit::oidc::{CI_ACME, OidcProvider, Sign};

use crate::support::*;

const ACCEPT: &str = "application/json, text/event-stream";

/// A gateway whose `[auth]` trusts `provider`, requiring `mcp:tools`, serving the fixture as
/// `fx` with an audit log.
async fn gateway_of(provider: &OidcProvider) -> (ConfigDir, HttpGateway) {
    let config = ConfigDir::new(&format!(
        "{}\n[audit]\nfile = \"audit.jsonl\"\n\n[auth]\nissuer = {}\nscopes = [\"mcp:tools\"]\n\
         groups_claim = \"groups\"\ntenant_claim = \"tenant\"\n",
        fixture_server("fx", "stdio", None),
        toml_str(provider.issuer()),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    (config, gateway)
}

/// POSTs an `initialize` with `token`: status, `WWW-Authenticate`, body.
pub(crate) async fn initialize(url: &str, token: Option<&str>) -> (u16, Option<String>, String) {
    let message = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}
        }
    });
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.body(message.to_string()).send().await.expect("answered");
    let challenge =
        response.headers().get("www-authenticate").map(|v| v.to_str().expect("ascii").to_owned());
    (response.status().as_u16(), challenge, response.text().await.expect("body"))
}

/// The value of `name="..."` in a challenge.
fn param<'a>(challenge: &'a str, name: &str) -> Option<&'a str> {
    let start = challenge.find(&format!("{name}=\""))? + name.len() + 2;
    let end = challenge[start..].find('"')?;
    Some(&challenge[start..start + end])
}

#[tokio::test]
async fn a_client_finds_the_issuer_from_the_401_and_its_token_is_served_as_its_principal() {
    let provider = OidcProvider::start().await;
    let (config, gateway) = gateway_of(&provider).await;

    let (status, challenge, _) = initialize(&gateway.url, None).await;
    assert_eq!(status, 401);
    let challenge = challenge.expect("a challenge");
    assert_eq!(param(&challenge, "scope"), Some("mcp:tools"), "{challenge}");
    assert!(!challenge.contains("error="), "no token was refused: {challenge}");
    let metadata_url = param(&challenge, "resource_metadata").expect("the metadata's URL");
    let base = gateway.url.trim_end_matches("/mcp");
    assert_eq!(metadata_url, format!("{base}/.well-known/oauth-protected-resource/mcp"));
    for url in [metadata_url.to_owned(), format!("{base}/.well-known/oauth-protected-resource")] {
        let metadata: Value = reqwest::get(&url).await.expect("served").json().await.expect("JSON");
        assert_eq!(metadata["resource"], gateway.url.as_str(), "{url}: {metadata}");
        assert_eq!(metadata["authorization_servers"], json!([provider.issuer()]), "{metadata}");
        assert_eq!(metadata["scopes_supported"], json!(["mcp:tools"]), "{metadata}");
    }

    // A token the issuer made for this resource, as a machine client gets one.
    let token = provider.client_credentials(CI_ACME, &gateway.url, &["mcp:tools"]).await;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(gateway.url.as_str()).auth_header(token),
    );
    let client = ().serve(transport).await.expect("connects with its token");
    let result = client
        .call_tool(
            CallToolRequestParams::new("fx__echo").with_arguments(object(json!({"text": "ok"}))),
        )
        .await
        .expect("served");
    assert_eq!(first_text(&result), "ok");
    client.cancel().await.expect("closes");
    assert!(gateway.terminate().await.success());

    let audit = std::fs::read_to_string(config.dir().join("audit.jsonl")).expect("the audit log");
    let call = audit
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON"))
        .find(|r| r["exposed"] == "fx__echo" && r["principal"].is_string())
        .unwrap_or_else(|| panic!("a record of the call: {audit}"));
    assert_eq!(call["principal"], "jwt:ci-acme@acme", "{call}");
    assert_eq!(call["groups"], json!(["deploy"]), "{call}");
}

#[tokio::test]
async fn tokens_that_are_wrong_in_one_way_each_are_refused() {
    let provider = OidcProvider::start().await;
    let (_config, gateway) = gateway_of(&provider).await;
    let issuer = provider.issuer().to_owned();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let claims = |extra: Value| {
        let mut claims = json!({
            "sub": "mallory", "aud": gateway.url, "scope": "mcp:tools", "iss": issuer,
        });
        claims.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        claims
    };
    // The control: a minted token that is right in every way is served.
    let good = provider.mint(claims(json!({})), json!({}), Sign::Provider).await;
    let (status, _, body) = initialize(&gateway.url, Some(&good)).await;
    assert_eq!(status, 200, "the control is served: {body}");

    let other_resource =
        provider.client_credentials(CI_ACME, "http://127.0.0.1:9/mcp", &["mcp:tools"]).await;
    let cases = [
        ("another resource's token", other_resource),
        (
            "expired",
            provider
                .mint(
                    claims(json!({"iat": now - 900, "exp": now - 600})),
                    json!({}),
                    Sign::Provider,
                )
                .await,
        ),
        (
            "another issuer",
            provider
                .mint(claims(json!({"iss": "http://127.0.0.1:9"})), json!({}), Sign::Provider)
                .await,
        ),
        (
            "a stranger's signature",
            provider.mint(claims(json!({})), json!({}), Sign::Stranger).await,
        ),
        (
            "a key the issuer does not have",
            provider.mint(claims(json!({})), json!({"kid": "not-theirs"}), Sign::Stranger).await,
        ),
        ("unsigned", provider.mint(claims(json!({})), json!({"alg": "none"}), Sign::None).await),
        ("tampered", {
            let (head, rest) = good.split_once('.').expect("a JWS");
            let (_, signature) = rest.split_once('.').expect("a JWS");
            let forged = base64_url(&claims(json!({"sub": "admin"})).to_string());
            format!("{head}.{forged}.{signature}")
        }),
    ];
    for (what, token) in cases {
        let (status, challenge, body) = initialize(&gateway.url, Some(&token)).await;
        assert_eq!(status, 401, "{what}: {body}");
        let challenge = challenge.expect("a challenge");
        assert!(challenge.contains("error=\"invalid_token\""), "{what}: {challenge}");
        assert!(challenge.contains("resource_metadata="), "{what}: {challenge}");
    }

    // The right token without the scope /mcp needs: 403, naming the scope to step up to.
    let unscoped = provider.client_credentials(CI_ACME, &gateway.url, &["mcp:admin"]).await;
    let (status, challenge, body) = initialize(&gateway.url, Some(&unscoped)).await;
    assert_eq!(status, 403, "{body}");
    let challenge = challenge.expect("a challenge");
    assert!(challenge.contains("error=\"insufficient_scope\""), "{challenge}");
    assert_eq!(param(&challenge, "scope"), Some("mcp:tools"), "{challenge}");
    assert!(gateway.terminate().await.success());
}

/// Base64url without padding, as JWS parts are written.
fn base64_url(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
}
