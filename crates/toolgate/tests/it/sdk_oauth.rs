//! The official MCP SDKs' own OAuth clients through toolgate's HTTP front, against a real
//! authorization server (oidc-provider, [`OidcProvider`]).
//!
//! The Python SDK (`mcp` 2.x: `OAuthClientProvider`, `ClientCredentialsOAuthProvider`) and the
//! TypeScript SDK v1 (an `OAuthClientProvider` on `StreamableHTTPClientTransport`, and
//! `ClientCredentialsProvider`) each start from toolgate's 401: its challenge names the
//! protected resource metadata, which names the authorization server, whose metadata the SDK
//! reads; for the authorization code flow it registers a client, gets a code with PKCE for the
//! resource toolgate names, and later refreshes the token. Each calls a tool, and the audit log
//! says who called: alice (a user), ci-acme (a client), or an API key.
//! The drivers are `tests/clients/py_oauth_client.py` and `tests/clients/ts_oauth_client.mjs`.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::process::Command;
use toolgate_testkit::oidc::{CI_ACME, OidcProvider, Sign};

use crate::deps;
use crate::support::*;

/// An authorization server, and toolgate trusting it (plus the API key `ci` of tenant `acme`)
/// in front of the fixture as `fx`, with an audit log.
struct Front {
    provider: OidcProvider,
    config: ConfigDir,
    gateway: HttpGateway,
    key: String,
}

impl Front {
    async fn start() -> Front {
        let provider = OidcProvider::start().await;
        let key = toolgate_auth::generate_key().expect("a key");
        let text = format!(
            "{}\n[audit]\nfile = \"audit.jsonl\"\n\n[auth]\nissuer = {}\nscopes = [\"mcp:tools\"]\n\
             groups_claim = \"groups\"\ntenant_claim = \"tenant\"\n\n[auth.api_keys]\n{}\n",
            fixture_server("fx", "stdio", None),
            toml_str(provider.issuer()),
            key.config_line("ci", &[], Some("acme")),
        );
        let config = ConfigDir::new(&text);
        let gateway = HttpGateway::start(&config.path()).await;
        Front { provider, config, gateway, key: key.key }
    }

    /// An access token for alice and this gateway that expired ten minutes ago (well past any
    /// clock skew the gateway allows), signed by the
    /// authorization server.
    async fn expired_token(&self) -> String {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs();
        let claims = json!({
            "sub": "alice", "aud": self.gateway.url, "scope": "mcp:tools", "client_id": "sdk",
            "groups": ["oncall"], "tenant": "acme", "iat": now - 1200, "exp": now - 600,
        });
        self.provider.mint(claims, json!({}), Sign::Provider).await
    }

    /// Stops toolgate; the `tools/call/started` records of calls whose `text` is `text`.
    async fn calls(self, text: &str) -> Vec<Value> {
        assert!(self.gateway.terminate().await.success());
        let audit = std::fs::read_to_string(self.config.dir().join("audit.jsonl")).expect("audit");
        audit
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("JSON"))
            .filter(|r| r["kind"] == "tools/call/started" && r["arguments"]["text"] == text)
            .collect()
    }
}

#[derive(Clone, Copy)]
enum Sdk {
    Python,
    TypeScript,
}

/// Runs the driver of `sdk` with `args` against `url`; its report, which says the tool was
/// called.
async fn run(sdk: Sdk, args: &[&str], url: &str) -> Value {
    let mut command = match sdk {
        Sdk::Python => {
            let mut command = Command::new(deps::python());
            command.arg(deps::client_script("py_oauth_client.py"));
            command
        }
        Sdk::TypeScript => {
            let npm = deps::npm_dir();
            deps::require(
                npm.join("node_modules/@modelcontextprotocol/sdk/package.json"),
                "the MCP TypeScript SDK (in the npm test dependencies)",
                "TOOLGATE_TEST_NPM_DIR",
            );
            let mut command = Command::new(deps::node22());
            command
                .arg(deps::client_script("ts_oauth_client.mjs"))
                .env("TOOLGATE_TEST_NPM_DIR", npm);
            command
        }
    };
    let output = command.args(args).arg(url).output().await.expect("run the SDK client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{args:?} failed: {stdout}\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// The text of the first content of a tool result.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The token requests of a report, as `(grant, resource)`.
fn grants(report: &Value) -> Vec<(String, String)> {
    let requests = report["requests"].as_array().expect("requests");
    let field = |r: &Value, name: &str| r[name].as_str().unwrap_or_default().to_owned();
    requests
        .iter()
        .filter(|r| r["grantType"].is_string())
        .map(|r| (field(r, "grantType"), field(r, "resource")))
        .collect()
}

/// The SDK found the authorization server itself: toolgate's 401, then the metadata its
/// challenge names, then the authorization server's metadata, each answered.
fn assert_discovered(report: &Value, front: &Front) {
    let requests = report["requests"].as_array().expect("requests");
    let seen = |i: usize| {
        format!("{} {} {}", requests[i]["method"], requests[i]["url"], requests[i]["status"])
    };
    let origin = front.gateway.url.strip_suffix("/mcp").expect("an /mcp URL");
    assert_eq!(seen(0), format!("\"POST\" \"{}\" 401", front.gateway.url), "{report}");
    let prm = format!("{origin}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(seen(1), format!("\"GET\" \"{prm}\" 200"), "{report}");
    let as_metadata = requests[2]["url"].as_str().expect("a URL");
    assert!(
        as_metadata.starts_with(&format!("{}/.well-known/", front.provider.issuer()))
            && requests[2]["status"] == 200,
        "{report}"
    );
}

async fn authorization_code_with_refresh(sdk: Sdk, label: &str) {
    let front = Front::start().await;
    let expired = front.expired_token().await;
    let report = run(
        sdk,
        &["--flow", "code", "--text", label, "--expired-token", &expired],
        &front.gateway.url,
    )
    .await;
    assert_discovered(&report, &front);
    let requests = report["requests"].as_array().expect("requests");
    let registered = format!("{}/reg", front.provider.issuer());
    assert!(
        requests.iter().any(|r| r["method"] == "POST"
            && r["url"] == registered.as_str()
            && r["status"] == 201),
        "dynamic client registration: {report}"
    );
    let asked = &report["authorization"];
    assert_eq!(asked["code_challenge_method"], "S256", "{report}");
    assert_eq!(asked["resource"], front.gateway.url.as_str(), "{report}");
    assert!(asked["scope"].as_str().unwrap_or_default().contains("mcp:tools"), "{report}");
    let resource = front.gateway.url.clone();
    assert_eq!(
        grants(&report),
        [
            ("authorization_code".to_owned(), resource.clone()),
            ("refresh_token".to_owned(), resource)
        ],
        "one authorization, then one refresh, no second authorization: {report}"
    );
    assert_eq!(text(&report["result"]), label, "{report}");
    let refreshed = &report["refreshed"];
    assert_eq!(text(&refreshed["result"]), label, "{report}");
    assert_eq!(refreshed["tokenChanged"], true, "{report}");
    assert_eq!(refreshed["tokensSaved"], 1, "{report}");

    let calls = front.calls(label).await;
    assert_eq!(calls.len(), 2, "before and after the refresh: {calls:?}");
    for call in &calls {
        assert_eq!(call["principal"], "jwt:alice@acme", "{call}");
        assert_eq!(call["groups"], json!(["oncall"]), "{call}");
    }
}

async fn client_credentials(sdk: Sdk, label: &str) {
    let front = Front::start().await;
    let issuer = front.provider.issuer().to_owned();
    let mut args = vec![
        "--flow",
        "client-credentials",
        "--client-id",
        CI_ACME.id,
        "--client-secret",
        CI_ACME.secret,
        "--issuer",
        &issuer,
        "--text",
        label,
    ];
    // The TypeScript SDK asks the grant for the scope it is configured with; the Python SDK
    // asks for the one toolgate's challenge names.
    if let Sdk::TypeScript = sdk {
        args.extend(["--scope", "mcp:tools"]);
    }
    let report = run(sdk, &args, &front.gateway.url).await;
    assert_discovered(&report, &front);
    assert_eq!(
        grants(&report),
        [("client_credentials".to_owned(), front.gateway.url.clone())],
        "{report}"
    );
    assert_eq!(text(&report["result"]), label, "{report}");
    let calls = front.calls(label).await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["principal"], "jwt:ci-acme@acme", "{}", calls[0]);
    assert_eq!(calls[0]["groups"], json!(["deploy"]), "{}", calls[0]);
}

async fn api_key(sdk: Sdk, label: &str) {
    let front = Front::start().await;
    let report =
        run(sdk, &["--flow", "key", "--key", &front.key, "--text", label], &front.gateway.url)
            .await;
    assert_eq!(text(&report["result"]), label, "{report}");
    assert!(grants(&report).is_empty(), "{report}");
    let statuses: Vec<&Value> =
        report["requests"].as_array().expect("requests").iter().map(|r| &r["status"]).collect();
    assert!(!statuses.contains(&&json!(401)), "the key is taken at once: {report}");
    let key = front.key.clone();
    let calls = front.calls(label).await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["principal"], "key:ci@acme", "{}", calls[0]);
    assert!(!calls[0].to_string().contains(&key), "the key itself is never written");
}

#[tokio::test]
async fn python_sdk_authorization_code_from_the_401_with_registration_pkce_and_refresh() {
    authorization_code_with_refresh(Sdk::Python, "python, authorization code").await;
}

#[tokio::test]
async fn python_sdk_client_credentials_from_the_401() {
    client_credentials(Sdk::Python, "python, client credentials").await;
}

#[tokio::test]
async fn python_sdk_api_key() {
    api_key(Sdk::Python, "python, api key").await;
}

#[tokio::test]
async fn typescript_sdk_authorization_code_from_the_401_with_registration_pkce_and_refresh() {
    authorization_code_with_refresh(Sdk::TypeScript, "typescript, authorization code").await;
}

#[tokio::test]
async fn typescript_sdk_client_credentials_from_the_401() {
    client_credentials(Sdk::TypeScript, "typescript, client credentials").await;
}

#[tokio::test]
async fn typescript_sdk_api_key() {
    api_key(Sdk::TypeScript, "typescript, api key").await;
}
