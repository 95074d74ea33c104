//! `oauth` on a server: what is kept, and what `config check` says about it.

use std::path::Path;

use crate::{FixedEnvironment, Format, OAuthConfig, OAuthFlow, TransportConfig};

fn parse_in(dir: &Path, oauth: &str, env: &FixedEnvironment) -> Result<OAuthConfig, String> {
    let text = format!("[servers.acme]\nurl = \"https://mcp.acme.test/mcp\"\noauth = {oauth}\n");
    let config =
        crate::parse_str(&text, Format::Toml, dir, env).map_err(|errors| errors.to_string())?;
    match &config.servers[0].transport {
        TransportConfig::Http(http) => Ok(http.oauth.clone()),
        other => panic!("an HTTP server, not {other:?}"),
    }
}

fn parse(oauth: &str) -> Result<OAuthConfig, String> {
    parse_in(Path::new("/"), oauth, &FixedEnvironment::new())
}

#[test]
fn absent_means_sign_in_when_asked_and_false_means_never() {
    let text = "[servers.acme]\nurl = \"https://mcp.acme.test/mcp\"\n";
    let config = crate::parse_str(text, Format::Toml, Path::new("/"), &FixedEnvironment::new())
        .expect("valid");
    let TransportConfig::Http(http) = &config.servers[0].transport else { panic!("http") };
    assert_eq!(http.oauth, OAuthConfig::default());
    assert!(http.oauth.enabled);
    assert!(!parse("false").expect("valid").enabled);
    assert!(parse("true").expect("valid").enabled);
}

#[test]
fn a_preregistered_client_keeps_its_secret_as_a_secret() {
    let env = FixedEnvironment::new().with_var("ACME_SECRET", "s3cret");
    let oauth = parse_in(
        Path::new("/"),
        r#"{ client_id = "toolgate", client_secret = "${ACME_SECRET}", scopes = ["repo", "read:org"], redirect_port = 8765 }"#,
        &env,
    )
    .expect("valid");
    assert_eq!(oauth.flow, OAuthFlow::AuthorizationCode);
    assert_eq!(oauth.client_id.as_deref(), Some("toolgate"));
    assert_eq!(oauth.client_secret.as_ref().map(|s| s.expose()), Some("s3cret"));
    assert_eq!(oauth.scopes, ["repo", "read:org"]);
    assert_eq!(oauth.redirect_port, Some(8765));
    assert!(!format!("{oauth:?}").contains("s3cret"), "Debug shows no secret");
}

#[test]
fn client_credentials_need_an_id_and_one_way_to_authenticate() {
    let error = parse(r#"{ flow = "client_credentials" }"#).unwrap_err();
    assert!(
        error.contains(
            "servers.acme.oauth.client_id: flow = \"client_credentials\" needs a client_id"
        ),
        "{error}"
    );
    let error = parse(r#"{ flow = "client_credentials", client_id = "ci" }"#).unwrap_err();
    assert!(error.contains("needs a client_secret or a private_key"), "{error}");
    let oauth = parse(r#"{ flow = "client_credentials", client_id = "ci", client_secret = "x" }"#)
        .expect("valid");
    assert_eq!(oauth.flow, OAuthFlow::ClientCredentials);
    let error = parse(r#"{ client_secret = "x" }"#).unwrap_err();
    assert!(error.contains("a client_secret or private_key needs its client_id"), "{error}");
    let error =
        parse(r#"{ flow = "client_credentials", client_id = "ci", client_secret = "x", per_principal = true }"#)
            .unwrap_err();
    assert!(error.contains("oauth.per_principal"), "{error}");
}

#[test]
fn a_private_key_is_read_from_its_file_and_checked() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("key.pem"),
        "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n",
    )
    .expect("write");
    std::fs::write(dir.path().join("cert.pem"), "-----BEGIN CERTIFICATE-----\n").expect("write");
    let env = FixedEnvironment::new();
    let oauth = parse_in(
        dir.path(),
        r#"{ flow = "client_credentials", client_id = "ci", private_key = "key.pem", algorithm = "ES256" }"#,
        &env,
    )
    .expect("valid");
    assert!(oauth.private_key.expect("kept").expose().contains("BEGIN PRIVATE KEY"));
    assert_eq!(oauth.algorithm, "ES256");

    let error = parse_in(
        dir.path(),
        r#"{ flow = "client_credentials", client_id = "ci", private_key = "cert.pem" }"#,
        &env,
    )
    .unwrap_err();
    assert!(
        error.contains("servers.acme.oauth.private_key") && error.contains("no PEM private key"),
        "{error}"
    );
    let error = parse_in(
        dir.path(),
        r#"{ flow = "client_credentials", client_id = "ci", private_key = "missing.pem" }"#,
        &env,
    )
    .unwrap_err();
    assert!(error.contains("cannot read"), "{error}");
    let error = parse_in(
        dir.path(),
        r#"{ flow = "client_credentials", client_id = "ci", private_key = "key.pem", algorithm = "HS256" }"#,
        &env,
    )
    .unwrap_err();
    assert!(error.contains("unknown algorithm \"HS256\""), "{error}");
    let error =
        parse_in(dir.path(), r#"{ client_id = "ci", private_key = "key.pem" }"#, &env).unwrap_err();
    assert!(
        error.contains("for flow = \\\"client_credentials\\\"")
            || error.contains("client_credentials"),
        "{error}"
    );
}

#[test]
fn bad_values_are_errors_with_their_place() {
    let error = parse(r#"{ flow = "implicit" }"#).unwrap_err();
    assert!(error.contains("servers.acme.oauth.flow: unknown flow \"implicit\""), "{error}");
    let error =
        parse(r#"{ client_metadata_url = "http://toolgate.test/client.json" }"#).unwrap_err();
    assert!(error.contains("must be an https URL with a path"), "{error}");
    let error = parse(r#"{ client_metadata_url = "https://toolgate.test/" }"#).unwrap_err();
    assert!(error.contains("must be an https URL with a path"), "{error}");
    let error = parse(r#"{ scopes = ["a b"] }"#).unwrap_err();
    assert!(error.contains("servers.acme.oauth.scopes[0]"), "{error}");
    let error = parse(r#"{ redirect_port = 0 }"#).unwrap_err();
    assert!(error.contains("servers.acme.oauth.redirect_port"), "{error}");
    let error = parse(r#"{ client_id = "" }"#).unwrap_err();
    assert!(error.contains("must not be empty"), "{error}");
    let error = parse(r#"{ scope = ["a"] }"#).unwrap_err();
    assert!(error.contains("did you mean scopes?"), "{error}");
    let error = parse(r#""yes""#).unwrap_err();
    assert!(error.contains("servers.acme.oauth"), "{error}");
}

#[test]
fn a_stdio_server_has_no_oauth() {
    let text = "[servers.local]\ncommand = \"x\"\noauth = false\n";
    let error = crate::parse_str(text, Format::Toml, Path::new("/"), &FixedEnvironment::new())
        .unwrap_err()
        .to_string();
    assert!(error.contains("oauth"), "{error}");
}

#[test]
fn signing_in_each_caller_needs_the_gateways_public_url() {
    let text =
        "[servers.acme]\nurl = \"https://mcp.acme.test/mcp\"\noauth = { per_principal = true }\n";
    let error = crate::parse_str(text, Format::Toml, Path::new("/"), &FixedEnvironment::new())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("servers.acme.oauth.per_principal: needs [gateway] public_url"),
        "{error}"
    );
    let text = format!("[gateway]\npublic_url = \"https://gw.example.test\"\n{text}");
    let config = crate::parse_str(&text, Format::Toml, Path::new("/"), &FixedEnvironment::new())
        .expect("valid");
    assert_eq!(config.gateway.public_url.expect("kept").as_str(), "https://gw.example.test/");
    let TransportConfig::Http(http) = &config.servers[0].transport else { panic!("http") };
    assert!(http.oauth.per_principal);
}
