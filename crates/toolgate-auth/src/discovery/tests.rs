//! Discovery: the challenge parser (against what `challenge.rs` builds, and odd input), the
//! candidate URLs, and `discover` over an in-memory [`Fetch`].

use serde_json::json;

use super::*;
use crate::challenge;
use crate::jwks::tests::Documents;

fn url(s: &str) -> url::Url {
    url::Url::parse(s).unwrap()
}

fn strings(urls: &[url::Url]) -> Vec<String> {
    urls.iter().map(url::Url::to_string).collect()
}

#[test]
fn what_challenge_rs_builds_parses_back() {
    let metadata = "https://gw.example.com/.well-known/oauth-protected-resource/mcp";
    let scopes = vec!["mcp:tools".to_owned(), "b:c".to_owned()];

    let parsed = Challenge::parse(&challenge::unauthorized(metadata, &[], false)).unwrap();
    assert_eq!(
        parsed,
        Challenge { resource_metadata: Some(metadata.into()), ..Challenge::default() }
    );

    let parsed = Challenge::parse(&challenge::unauthorized(metadata, &scopes, true)).unwrap();
    assert_eq!(parsed.resource_metadata.as_deref(), Some(metadata));
    assert_eq!(parsed.scope, Some(scopes.clone()));
    assert_eq!(parsed.error.as_deref(), Some("invalid_token"));

    let parsed = Challenge::parse(&challenge::insufficient_scope(metadata, &scopes)).unwrap();
    assert_eq!(parsed.resource_metadata.as_deref(), Some(metadata));
    assert_eq!(parsed.scope, Some(scopes));
    assert_eq!(parsed.error.as_deref(), Some("insufficient_scope"));

    // Quotes and backslashes survive the trip.
    let odd = "https://gw.example.com/a\"b\\c";
    let parsed = Challenge::parse(&challenge::unauthorized(odd, &[], false)).unwrap();
    assert_eq!(parsed.resource_metadata.as_deref(), Some(odd));
}

#[test]
fn tokens_quoting_and_case() {
    let parsed = Challenge::parse(
        "bearer Error=invalid_token ,SCOPE = \"a  b\" , error_description=\"say \\\"no\\\", \
         twice\"",
    )
    .unwrap();
    assert_eq!(parsed.error.as_deref(), Some("invalid_token"));
    assert_eq!(parsed.scope, Some(vec!["a".into(), "b".into()]));
    assert_eq!(parsed.error_description.as_deref(), Some("say \"no\", twice"));
    // The first of a parameter given twice counts.
    let parsed = Challenge::parse("Bearer error=a, error=b").unwrap();
    assert_eq!(parsed.error.as_deref(), Some("a"));
    // A bare Bearer, and an empty scope.
    assert_eq!(Challenge::parse("Bearer"), Some(Challenge::default()));
    assert_eq!(Challenge::parse("Bearer scope=\"\"").unwrap().scope, Some(vec![]));
}

#[test]
fn the_bearer_challenge_among_others() {
    for value in [
        "Basic realm=\"x, y\", Bearer error=e",
        "Basic dXNlcjpwYXNz==, Bearer error=e",
        "Negotiate, Bearer error=e, Basic realm=r",
        "Negotiate abc/def=,Bearer error=e",
        "DPoP algs=\"ES256\", Bearer error=\"e\", Bearer error=f",
        ", , Bearer  error=e ,",
    ] {
        let parsed = Challenge::parse(value).unwrap_or_else(|| panic!("{value:?}"));
        assert_eq!(parsed.error.as_deref(), Some("e"), "{value:?}");
    }
    // The Bearer challenge's parameters stop where the next challenge starts.
    let parsed = Challenge::parse("Bearer scope=a, Basic error=x").unwrap();
    assert_eq!(parsed.error, None);
    assert_eq!(Challenge::parse("Basic realm=r"), None);
    assert_eq!(Challenge::parse("Bearerx error=e"), None);
}

#[test]
fn garbage_is_none() {
    for value in [
        "",
        " , ",
        "\"Bearer\"",
        "Bearer error=\"unterminated",
        "Bearer error=\"a\\",
        "Bearer error=a b=c",
        "Bearer error=,",
        "Bearer error=\"a\"x",
        "=Bearer",
    ] {
        let parsed = Challenge::parse(value);
        assert!(parsed.is_none() || parsed == Some(Challenge::default()), "{value:?}: {parsed:?}");
    }
}

#[test]
fn never_panics() {
    // Every short string over an alphabet of the grammar's delimiters, and a few long ones.
    let alphabet = ['B', 'e', 'a', 'r', '=', '"', '\\', ',', ' ', '\t', '/', 'é', '\u{7f}'];
    let mut count = 0;
    let mut stack = vec![String::new()];
    while let Some(prefix) = stack.pop() {
        let _ = Challenge::parse(&format!("Bearer {prefix}"));
        let _ = Challenge::parse(&prefix);
        count += 1;
        if prefix.chars().count() < 5 {
            stack.extend(alphabet.iter().map(|c| format!("{prefix}{c}")));
        }
    }
    assert!(count > 30_000);
    for long in ["\\".repeat(10_000), "\"".repeat(10_001), "a=b,".repeat(5_000)] {
        let _ = Challenge::parse(&format!("Bearer {long}"));
    }
}

#[test]
fn resource_metadata_urls() {
    let server = url("https://mcp.example.com/public/mcp?x=1");
    assert_eq!(
        strings(&protected_resource_metadata_urls(&server, None)),
        [
            "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
            "https://mcp.example.com/.well-known/oauth-protected-resource",
        ]
    );
    // The path-inserted URL is the one challenge.rs serves.
    assert_eq!(
        protected_resource_metadata_urls(&server, None)[0].as_str(),
        challenge::metadata_url(&server)
    );
    assert_eq!(
        strings(&protected_resource_metadata_urls(&url("https://mcp.example.com/"), None)),
        ["https://mcp.example.com/.well-known/oauth-protected-resource"]
    );
    let given = Challenge {
        resource_metadata: Some("https://other.example.com/prm".into()),
        ..Challenge::default()
    };
    assert_eq!(
        strings(&protected_resource_metadata_urls(&server, Some(&given))),
        ["https://other.example.com/prm"]
    );
    // A challenge without a usable one falls back to the well-known URLs.
    let unusable =
        Challenge { resource_metadata: Some("not a url".into()), ..Challenge::default() };
    assert_eq!(protected_resource_metadata_urls(&server, Some(&unusable)).len(), 2);
}

#[test]
fn authorization_server_urls_in_the_spec_order() {
    assert_eq!(
        strings(&authorization_server_metadata_urls(&url("https://auth.example.com/tenant1"))),
        [
            "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
            "https://auth.example.com/.well-known/openid-configuration/tenant1",
            "https://auth.example.com/tenant1/.well-known/openid-configuration",
        ]
    );
    assert_eq!(
        strings(&authorization_server_metadata_urls(&url("https://auth.example.com"))),
        [
            "https://auth.example.com/.well-known/oauth-authorization-server",
            "https://auth.example.com/.well-known/openid-configuration",
        ]
    );
}

#[test]
fn the_resource_must_name_the_server() {
    let server = url("https://mcp.example.com/team/mcp");
    for ok in [
        "https://mcp.example.com/team/mcp",
        "https://mcp.example.com/team/mcp/",
        "https://mcp.example.com/team",
        "https://mcp.example.com",
        "https://MCP.example.com:443/",
    ] {
        assert!(names_server(ok, &server), "{ok}");
    }
    for wrong in [
        "",
        "mcp.example.com/team/mcp",
        "https://mcp.example.com/te",
        "https://mcp.example.com/team/mcp2",
        "https://mcp.example.com/other",
        "http://mcp.example.com/team/mcp",
        "https://mcp.example.com:8443/team/mcp",
        "https://evil.example.com/team/mcp",
        "https://mcp.example.com/team/mcp#x",
        "https://mcp.example.com/team/mcp?x=1",
        "https://user@mcp.example.com/team/mcp",
    ] {
        assert!(!names_server(wrong, &server), "{wrong}");
    }
}

const SERVER: &str = "https://mcp.example.com/mcp";
const PRM: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const ISSUER: &str = "https://auth.example.com/t1";
const OPENID: &str = "https://auth.example.com/.well-known/openid-configuration/t1";

fn as_metadata() -> serde_json::Value {
    json!({
        "issuer": ISSUER,
        "authorization_endpoint": "https://auth.example.com/t1/authorize",
        "token_endpoint": "https://auth.example.com/t1/token",
        "registration_endpoint": "https://auth.example.com/t1/register",
        "code_challenge_methods_supported": ["plain", "S256"],
        "client_id_metadata_document_supported": true,
        "scopes_supported": ["openid", "mcp:tools", 7],
    })
}

fn documents() -> Documents {
    let documents = Documents::default();
    documents.put(
        PRM,
        challenge::protected_resource_metadata(SERVER, &[ISSUER.into()], &["mcp:tools".into()]),
    );
    // The RFC 8414 URL answers with a page, as a catch-all route would; OpenID's has it.
    documents
        .put("https://auth.example.com/.well-known/oauth-authorization-server/t1", json!("<html>"));
    documents.put(OPENID, as_metadata());
    documents
}

async fn run(
    documents: &Documents,
    challenge: Option<&Challenge>,
) -> Result<Discovered, DiscoveryError> {
    discover(documents, &url(SERVER), challenge, Limits::default()).await
}

#[tokio::test]
async fn discovers_through_the_well_known_urls() {
    let documents = documents();
    // Callers may spawn it.
    fn send<T: Send>(_: &T) {}
    send(&run(&documents, None));
    let found = run(&documents, None).await.unwrap();
    assert_eq!(
        found,
        Discovered {
            resource_metadata_url: url(PRM),
            resource: SERVER.into(),
            resource_scopes: Some(vec!["mcp:tools".into()]),
            authorization_server: AuthorizationServer {
                issuer: ISSUER.into(),
                metadata_url: url(OPENID),
                authorization_endpoint: url("https://auth.example.com/t1/authorize"),
                token_endpoint: url("https://auth.example.com/t1/token"),
                registration_endpoint: Some(url("https://auth.example.com/t1/register")),
                client_id_metadata_document_supported: true,
                scopes_supported: Some(vec!["openid".into(), "mcp:tools".into()]),
            },
        }
    );
    // The root PRM was not needed.
    assert_eq!(documents.hits("https://mcp.example.com/.well-known/oauth-protected-resource"), 0);
}

#[tokio::test]
async fn the_challenge_url_is_used_alone() {
    let documents = documents();
    let elsewhere = "https://mcp.example.com/prm-elsewhere";
    documents.put(elsewhere, challenge::protected_resource_metadata(SERVER, &[ISSUER.into()], &[]));
    let given = Challenge { resource_metadata: Some(elsewhere.into()), ..Challenge::default() };
    let found = run(&documents, Some(&given)).await.unwrap();
    assert_eq!(found.resource_metadata_url.as_str(), elsewhere);
    assert_eq!(found.resource_scopes, None);
    assert_eq!(documents.hits(PRM), 0);

    let missing = Challenge {
        resource_metadata: Some("https://mcp.example.com/gone".into()),
        ..Challenge::default()
    };
    let error = run(&documents, Some(&missing)).await.unwrap_err();
    assert_eq!(
        error,
        DiscoveryError::NoResourceMetadata {
            server: SERVER.into(),
            tried: vec!["https://mcp.example.com/gone: HTTP status 404".into()],
        }
    );
}

#[tokio::test]
async fn the_root_metadata_may_name_the_origin() {
    let documents = Documents::default();
    documents.put(
        "https://mcp.example.com/.well-known/oauth-protected-resource",
        challenge::protected_resource_metadata("https://mcp.example.com", &[ISSUER.into()], &[]),
    );
    documents.put(OPENID, as_metadata());
    let found = run(&documents, None).await.unwrap();
    assert_eq!(found.resource, "https://mcp.example.com");
    assert_eq!(documents.hits(PRM), 1);
}

#[tokio::test]
async fn checks_name_the_url() {
    let prm = |resource: &str, servers: serde_json::Value| {
        let documents = documents();
        documents.put(PRM, json!({"resource": resource, "authorization_servers": servers}));
        documents
    };

    let error = run(&prm("https://evil.example.com/mcp", json!([ISSUER])), None).await;
    assert_eq!(
        error.unwrap_err(),
        DiscoveryError::WrongResource {
            url: PRM.into(),
            resource: "https://evil.example.com/mcp".into(),
            server: SERVER.into(),
        }
    );
    let error = run(&prm(SERVER, json!([])), None).await.unwrap_err();
    assert_eq!(
        error,
        DiscoveryError::Invalid { url: PRM.into(), reason: "no authorization_servers".into() }
    );
    let error = run(&prm(SERVER, json!(["http://auth.example.com"])), None).await.unwrap_err();
    assert!(
        matches!(error, DiscoveryError::Invalid { ref reason, .. } if reason.contains("https"))
    );

    let error = run(&prm(SERVER, json!(["https://nowhere.example.com"])), None).await.unwrap_err();
    let DiscoveryError::NoServerMetadata { issuer, tried } = error else { panic!("{error:?}") };
    assert_eq!(issuer, "https://nowhere.example.com");
    assert_eq!(tried.len(), 2);

    let server_metadata = |change: &dyn Fn(&mut serde_json::Value)| {
        let documents = documents();
        let mut metadata = as_metadata();
        change(&mut metadata);
        documents.put(OPENID, metadata);
        documents
    };
    let error = run(&server_metadata(&|m| m["issuer"] = json!("https://auth.example.com")), None)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        DiscoveryError::WrongIssuer {
            url: OPENID.into(),
            found: Some("https://auth.example.com".into()),
            expected: ISSUER.into(),
        }
    );
    for pkce in [json!(null), json!(["plain"]), json!("S256")] {
        let documents = server_metadata(&|m| m["code_challenge_methods_supported"] = pkce.clone());
        let error = run(&documents, None).await.unwrap_err();
        assert_eq!(error, DiscoveryError::NoPkce { url: OPENID.into() }, "{pkce}");
    }
    let documents = server_metadata(&|m| drop(m.as_object_mut().unwrap().remove("token_endpoint")));
    let error = run(&documents, None).await.unwrap_err();
    assert_eq!(
        error,
        DiscoveryError::Invalid { url: OPENID.into(), reason: "no token_endpoint".into() }
    );
    let documents = server_metadata(&|m| {
        m["authorization_endpoint"] = json!("http://auth.example.com/authorize")
    });
    let error = run(&documents, None).await.unwrap_err();
    assert_eq!(
        error,
        DiscoveryError::Invalid {
            url: OPENID.into(),
            reason: "authorization_endpoint is not an https URL".into()
        }
    );
    // Optional members may be absent.
    let documents = server_metadata(&|m| {
        let m = m.as_object_mut().unwrap();
        for name in
            ["registration_endpoint", "client_id_metadata_document_supported", "scopes_supported"]
        {
            m.remove(name);
        }
    });
    let server = run(&documents, None).await.unwrap().authorization_server;
    assert_eq!(server.registration_endpoint, None);
    assert!(!server.client_id_metadata_document_supported);
    assert_eq!(server.scopes_supported, None);
}

#[tokio::test]
async fn documents_are_bounded() {
    let documents = documents();
    documents.put(PRM, json!({"padding": "x".repeat(300 * 1024)}));
    let limits = Limits { max_document: 256 * 1024, ..Limits::default() };
    let error = discover(&documents, &url(SERVER), None, limits).await.unwrap_err();
    let DiscoveryError::NoResourceMetadata { tried, .. } = error else { panic!("{error:?}") };
    assert!(tried[0].ends_with("document larger than 262144 bytes"), "{tried:?}");
}

#[tokio::test]
async fn plain_http_is_not_fetched() {
    let documents = Documents::default();
    let error = discover(&documents, &url("http://mcp.example.com/mcp"), None, Limits::default())
        .await
        .unwrap_err();
    let DiscoveryError::NoResourceMetadata { tried, .. } = error else { panic!("{error:?}") };
    assert_eq!(tried.len(), 2);
    assert!(tried.iter().all(|t| t.contains("not https")));
    assert_eq!(
        documents.hits("http://mcp.example.com/.well-known/oauth-protected-resource/mcp"),
        0
    );
}

#[tokio::test]
async fn a_remote_server_cannot_name_a_local_port() {
    let documents = documents();
    let local = "http://127.0.0.1:8931/admin";
    let given = Challenge { resource_metadata: Some(local.into()), ..Challenge::default() };
    let error = run(&documents, Some(&given)).await.unwrap_err();
    assert!(matches!(error, DiscoveryError::NoResourceMetadata { .. }), "{error:?}");
    assert_eq!(documents.hits(local), 0);

    documents.put(PRM, challenge::protected_resource_metadata(SERVER, &[local.into()], &[]));
    let error = run(&documents, None).await.unwrap_err();
    assert!(matches!(error, DiscoveryError::Invalid { .. }), "{error:?}");

    // A loopback server may (local development), over plain http.
    let server = "http://127.0.0.1:9/mcp";
    let documents = Documents::default();
    documents.put(
        "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp",
        challenge::protected_resource_metadata(server, &[ISSUER.into()], &[]),
    );
    documents.put(OPENID, as_metadata());
    assert!(discover(&documents, &url(server), None, Limits::default()).await.is_ok());
}
