//! `[proxy]`, and the servers' `proxy` and `tls`: good and bad values of each field, where a
//! server's proxy comes from, and what is kept secret.

use std::path::Path;

use super::*;
use crate::{Config, FixedEnvironment, Format, HttpConfig, TransportConfig};

const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBAAAA\n-----END CERTIFICATE-----\n";
const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIIBAAAA\n-----END PRIVATE KEY-----\n";

fn load(text: &str, dir: &Path) -> Result<Config, String> {
    let env = FixedEnvironment::new().with_var("PROXY_PASS", "hunter2");
    crate::parse_str(text, Format::Toml, dir, &env).map_err(|errors| errors.to_string())
}

fn http<'c>(config: &'c Config, name: &str) -> &'c HttpConfig {
    let server = config.servers.iter().find(|s| s.name == name).expect("the server");
    match &server.transport {
        TransportConfig::Http(http) => http,
        other => panic!("not an HTTP server: {other:?}"),
    }
}

fn files() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("ca.pem"), CERT).expect("write");
    std::fs::write(dir.path().join("cert.pem"), CERT).expect("write");
    std::fs::write(dir.path().join("key.pem"), KEY).expect("write");
    std::fs::write(dir.path().join("junk.pem"), "not a certificate\n").expect("write");
    std::fs::write(dir.path().join("bad.pem"), "-----BEGIN CERTIFICATE-----\n%%%\n")
        .expect("write");
    dir
}

#[test]
fn proxy_precedence_server_then_table_then_environment() {
    let text = r#"
        [proxy]
        http = "http://proxy.corp:3128"
        https = "http://user:${PROXY_PASS}@proxy.corp:3129"
        no_proxy = ["localhost", ".internal", "10.0.0.0/8", "192.168.1.7", "*"]

        [servers.table]
        url = "http://a.example/mcp"

        [servers.own]
        url = "http://b.example/mcp"
        proxy = "http://other:8080"

        [servers.direct]
        url = "http://c.example/mcp"
        proxy = false

        [servers.local]
        command = "x"
    "#;
    let config = load(text, Path::new("/")).expect("valid");
    let ProxyChoice::Via(table) = &http(&config, "table").proxy else { panic!("via [proxy]") };
    assert_eq!(table.http.as_ref().map(Secret::expose), Some("http://proxy.corp:3128"));
    assert_eq!(
        table.https.as_ref().map(Secret::expose),
        Some("http://user:hunter2@proxy.corp:3129")
    );
    assert_eq!(table.no_proxy_string(), "localhost,.internal,10.0.0.0/8,192.168.1.7,*");
    assert_eq!(
        http(&config, "own").proxy,
        ProxyChoice::Via(ProxyConfig::all(Secret::new("http://other:8080")))
    );
    assert_eq!(http(&config, "direct").proxy, ProxyChoice::Direct);
    // The password came from a variable: no stdio child inherits it.
    assert!(config.secret_env.contains("PROXY_PASS"));

    let without =
        load("[servers.x]\nurl = \"http://a.example/mcp\"", Path::new("/")).expect("valid");
    assert_eq!(http(&without, "x").proxy, ProxyChoice::Environment);
}

#[test]
fn no_proxy_may_be_one_string_as_the_variable_has_it() {
    let config = load(
        "[proxy]\nhttp = \"http://p:1\"\nno_proxy = \"localhost, .corp ,::1,fd00::/8\"\n[servers.x]\nurl = \"http://a/\"",
        Path::new("/"),
    )
    .expect("valid");
    let ProxyChoice::Via(proxy) = &http(&config, "x").proxy else { panic!("via [proxy]") };
    assert_eq!(proxy.no_proxy, ["localhost", ".corp", "::1", "fd00::/8"]);
    assert_eq!(proxy.https, None);
}

#[test]
fn proxy_secrets_are_not_shown() {
    let config = load(
        "[proxy]\nhttps = \"http://user:${PROXY_PASS}@p:1\"\n[servers.x]\nurl = \"https://a/\"",
        Path::new("/"),
    )
    .expect("valid");
    let shown = format!("{config:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    // Nor in an error.
    let error = load("[proxy]\nhttps = \"socks5://user:hunter2@p:1\"", Path::new("/")).unwrap_err();
    assert!(!error.contains("hunter2"), "{error}");
}

#[test]
fn bad_proxy_values_are_errors_naming_the_field() {
    let cases = [
        (
            "[proxy]\nhttp = \"socks5://p:1\"",
            "proxy.http: invalid proxy URL: the scheme must be http or https",
        ),
        (
            "[proxy]\nhttps = \"p:1\"",
            "proxy.https: invalid proxy URL: no scheme (write http:// before the host)",
        ),
        (
            "[proxy]\nhttp = \"http://p:1/path\"",
            "proxy.http: invalid proxy URL: a proxy URL has no path",
        ),
        ("[proxy]\nhttp = 3128", "proxy.http: expected a string"),
        ("[proxy]\nhttp = \"${NOPE}\"", "proxy.http: "),
        (
            "[proxy]\nno_proxy = [\"ok\", \"bad host\"]",
            "proxy.no_proxy[1]: invalid no_proxy entry \"bad host\"",
        ),
        (
            "[proxy]\nno_proxy = \"10.0.0.0/33\"",
            "proxy.no_proxy: invalid no_proxy entry \"10.0.0.0/33\": the prefix length",
        ),
        ("[proxy]\nno_proxy = 1", "proxy.no_proxy: expected a list of hosts"),
        ("[proxy]\nhtps = \"http://p:1\"", "proxy.htps: unknown key, did you mean https?"),
        ("proxy = \"http://p:1\"", "proxy: expected a table"),
        ("[servers.x]\nurl = \"http://a/\"\nproxy = true", "servers.x.proxy: `true` says nothing"),
        (
            "[servers.x]\nurl = \"http://a/\"\nproxy = \"ftp://p\"",
            "servers.x.proxy: invalid proxy URL",
        ),
        ("[servers.x]\nurl = \"http://a/\"\nproxy = 1", "servers.x.proxy: expected a proxy URL"),
        (
            "[servers.x]\ncommand = \"c\"\nproxy = false",
            "servers.x.proxy: only valid for a url server",
        ),
        ("[agent]\nproxy = \"nope\"", "agent.proxy: invalid proxy URL"),
    ];
    for (text, expected) in cases {
        let error = load(text, Path::new("/")).expect_err(text);
        assert!(error.contains(expected), "{text:?}\n  gave: {error}\n  expected: {expected}");
    }
}

#[test]
fn agent_proxy() {
    let config = load("[agent]\nproxy = false", Path::new("/")).expect("valid");
    assert_eq!(config.agent.proxy, ProxyChoice::Direct);
    let config = load("[agent]\nproxy = \"http://p:1\"", Path::new("/")).expect("valid");
    assert_eq!(config.agent.proxy, ProxyChoice::Via(ProxyConfig::all(Secret::new("http://p:1"))));
    // `[proxy]` is MCP traffic only.
    let config = load("[proxy]\nhttp = \"http://p:1\"", Path::new("/")).expect("valid");
    assert_eq!(config.agent.proxy, ProxyChoice::Environment);
}

#[test]
fn tls_files_are_read_relative_to_the_config() {
    let dir = files();
    let pin = "ab".repeat(32);
    let text = format!(
        "[servers.x]\nurl = \"https://a/\"\ntls = {{ ca = \"ca.pem\", client_cert = \"cert.pem\", \
         client_key = \"key.pem\", pin_sha256 = [\"{pin}\", \"{}\", \"{}\"] }}",
        "AB:".repeat(31) + "AB",
        base64::engine::general_purpose::STANDARD.encode([0xab; 32]),
    );
    let config = load(&text, dir.path()).expect("valid");
    let tls = &http(&config, "x").tls;
    assert_eq!(tls.ca.as_ref().map(|f| f.path.clone()), Some(dir.path().join("ca.pem")));
    assert_eq!(tls.ca.as_ref().map(|f| f.pem.expose()), Some(CERT));
    assert_eq!(tls.client_key.as_ref().map(|f| f.pem.expose()), Some(KEY));
    assert_eq!(tls.pin_sha256, vec![[0xab; 32]; 3]);
    assert!(!tls.insecure_skip_verify);
    assert!(!format!("{config:?}").contains("MIIBAAAA"), "PEM text is not shown");

    let plain = load("[servers.x]\nurl = \"https://a/\"", dir.path()).expect("valid");
    assert!(http(&plain, "x").tls.is_default());
}

#[test]
fn insecure_skip_verify_warns() {
    let config = load(
        "[servers.x]\nurl = \"https://a/\"\ntls = { insecure_skip_verify = true }",
        Path::new("/"),
    )
    .expect("valid");
    assert!(http(&config, "x").tls.insecure_skip_verify);
    assert!(
        config.warnings.iter().any(|w| w.starts_with("servers.x.tls.insecure_skip_verify: ")),
        "{:?}",
        config.warnings
    );
}

#[test]
fn bad_tls_values_are_errors_naming_the_field() {
    let dir = files();
    let server = "[servers.x]\nurl = \"https://a/\"\n";
    let cases = [
        (
            "tls = { ca = \"missing.pem\" }",
            "servers.x.tls.ca: cannot read \"missing.pem\": file not found",
        ),
        ("tls = { ca = \"junk.pem\" }", "servers.x.tls.ca: \"junk.pem\" holds no certificate"),
        ("tls = { ca = \"bad.pem\" }", "servers.x.tls.ca: \"bad.pem\" is not valid PEM"),
        ("tls = { ca = \"key.pem\" }", "servers.x.tls.ca: \"key.pem\" holds no certificate"),
        ("tls = { ca = \"\" }", "servers.x.tls.ca: must not be empty"),
        (
            "tls = { client_cert = \"cert.pem\", client_key = \"cert.pem\" }",
            "servers.x.tls.client_key: \"cert.pem\" holds no private key",
        ),
        ("tls = { client_cert = \"cert.pem\" }", "servers.x.tls.client_cert: needs client_key"),
        ("tls = { client_key = \"key.pem\" }", "servers.x.tls.client_key: needs client_cert"),
        ("tls = { pin_sha256 = [\"abc\"] }", "servers.x.tls.pin_sha256[0]: invalid pin \"abc\""),
        ("tls = { pin_sha256 = [] }", "servers.x.tls.pin_sha256: is empty"),
        ("tls = { pin_sha256 = \"ab\" }", "servers.x.tls.pin_sha256: expected an array of strings"),
        (
            "tls = { insecure_skip_verify = \"yes\" }",
            "servers.x.tls.insecure_skip_verify: expected a boolean",
        ),
        (
            "tls = { insecure_skip_verify = true, ca = \"ca.pem\" }",
            "servers.x.tls.ca: means nothing with insecure_skip_verify",
        ),
        ("tls = { verify = false }", "servers.x.tls.verify: unknown key"),
        ("tls = \"ca.pem\"", "servers.x.tls: expected a table"),
    ];
    for (line, expected) in cases {
        let text = format!("{server}{line}");
        let error = load(&text, dir.path()).expect_err(&text);
        assert!(error.contains(expected), "{line:?}\n  gave: {error}\n  expected: {expected}");
    }
    let error = load("[servers.x]\nurl = \"http://a/\"\ntls = { ca = \"ca.pem\" }", dir.path())
        .unwrap_err();
    assert!(error.contains("servers.x.tls: only for a server with an https:// url"), "{error}");
    let error = load("[servers.x]\ncommand = \"c\"\ntls = {}", dir.path()).unwrap_err();
    assert!(error.contains("servers.x.tls: only valid for a url server"), "{error}");
}

#[test]
fn pins_in_hex_or_base64() {
    let digest = [0x5au8; 32];
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(parse_pin(&hex), Some(digest));
    assert_eq!(parse_pin(&hex.to_uppercase()), Some(digest));
    let b64 = base64::engine::general_purpose::STANDARD.encode(digest);
    assert_eq!(parse_pin(&b64), Some(digest));
    assert_eq!(parse_pin(b64.trim_end_matches('=')), Some(digest));
    assert_eq!(parse_pin(&hex[2..]), None);
    assert_eq!(parse_pin(&base64::engine::general_purpose::STANDARD.encode([1u8; 31])), None);
}
