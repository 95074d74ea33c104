//! Opaque access tokens at toolgate's front, checked at a real authorization server's
//! introspection endpoint (npm `oidc-provider`, started by the testkit): a token for `/mcp` is
//! served as `token:<client>` with its groups and tenant, and the audit log says so; an
//! unknown, a revoked and another resource's token are refused with 401.

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use toolgate_testkit::oidc::{CI_OPAQUE, OidcProvider, TOOLGATE};

use crate::support::*;

/// A gateway whose `[auth]` trusts `provider` and introspects its opaque tokens as the client
/// `toolgate`, requiring `mcp:tools`, serving the fixture as `fx` (tenant `acme`'s) and as
/// `other` (no tenant's), with an audit log.
async fn gateway_of(provider: &OidcProvider) -> (ConfigDir, HttpGateway) {
    let config = ConfigDir::new(&format!(
        "{}\n[audit]\nfile = \"audit.jsonl\"\n\n[auth]\nissuer = {}\nscopes = [\"mcp:tools\"]\n\
         groups_claim = \"groups\"\ntenant_claim = \"tenant\"\nintrospection_url = {}\n\
         introspection_client_id = {}\nintrospection_client_secret = {}\n\n\
         [tenants.acme]\nservers = [\"fx\"]\n{}",
        fixture_server("fx", "stdio", None),
        toml_str(provider.issuer()),
        toml_str(&provider.introspection_endpoint()),
        toml_str(TOOLGATE.id),
        toml_str(TOOLGATE.secret),
        fixture_server("other", "stdio", None),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    (config, gateway)
}

/// The status of a POSTed `initialize` with `token`.
async fn initialize(url: &str, token: &str) -> u16 {
    crate::oauth::initialize(url, Some(token)).await.0
}

#[tokio::test]
async fn an_opaque_token_is_introspected_served_and_attributed() {
    let provider = OidcProvider::start().await;
    let (config, gateway) = gateway_of(&provider).await;
    gateway.wait_for_log(&["opaque tokens introspected at", "/token/introspection"]).await;

    let token = provider.client_credentials(CI_OPAQUE, &gateway.url, &["mcp:tools"]).await;
    assert!(!token.contains('.'), "an opaque token: {token}");
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
    // An introspected principal is bound by its tenant like any other from the network.
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().all(|tool| !tool.name.starts_with("other__")), "{tools:?}");
    let elsewhere = client
        .call_tool(
            CallToolRequestParams::new("other__echo").with_arguments(object(json!({"text": "x"}))),
        )
        .await;
    assert!(elsewhere.is_err(), "a server of no tenant's is not acme's: {elsewhere:?}");
    client.cancel().await.expect("closes");

    let revoked = provider.client_credentials(CI_OPAQUE, &gateway.url, &["mcp:tools"]).await;
    assert_eq!(initialize(&gateway.url, &revoked).await, 200, "served before its revocation");
    let fresh = provider.client_credentials(CI_OPAQUE, &gateway.url, &["mcp:tools"]).await;
    provider.revoke(CI_OPAQUE, &fresh).await;
    let other =
        provider.client_credentials(CI_OPAQUE, "http://127.0.0.1:9/mcp", &["mcp:tools"]).await;
    for (what, token) in [
        ("unknown", "no-such-token-0123456789"),
        ("revoked", &fresh),
        ("another resource's", &other),
    ] {
        assert_eq!(initialize(&gateway.url, token).await, 401, "{what}");
    }
    assert!(gateway.terminate().await.success());

    let audit = std::fs::read_to_string(config.dir().join("audit.jsonl")).expect("the audit log");
    assert!(!audit.contains(TOOLGATE.secret), "the client's secret is not in the audit log");
    let call = audit
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON"))
        .find(|r| r["exposed"] == "fx__echo" && r["principal"].is_string())
        .unwrap_or_else(|| panic!("a record of the call: {audit}"));
    assert_eq!(call["principal"], "token:ci-opaque@acme", "{call}");
    assert_eq!(call["groups"], json!(["deploy"]), "{call}");
}
