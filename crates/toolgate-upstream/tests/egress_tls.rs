//! A server's `tls` settings against a real TLS server: the fixture behind a TLS terminator
//! (tokio-rustls) with certificates from a test CA made here (rcgen). The config is written
//! as a user would, with the PEM files beside it.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::json;
use sha2::Digest as _;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use toolgate_config::{FixedEnvironment, Format, ServerConfig};
use toolgate_core::mcp;
use toolgate_testkit::FixtureOptions;
use toolgate_upstream::{CallOptions, Upstream};

/// A CA and what it signed.
struct Authority {
    params: CertificateParams,
    key: KeyPair,
    pem: String,
}

impl Authority {
    fn new(name: &str) -> Authority {
        let key = KeyPair::generate().expect("a key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let pem = params.self_signed(&key).expect("the CA certificate").pem();
        Authority { params, key, pem }
    }

    /// A certificate for `names` (IP addresses or DNS names), for `purpose`: its DER, its PEM,
    /// and its key's PEM.
    fn issue(&self, names: &[&str], purpose: ExtendedKeyUsagePurpose) -> Leaf {
        let key = KeyPair::generate().expect("a key");
        let mut params =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
                .expect("params");
        params
            .distinguished_name
            .push(DnType::CommonName, names.first().copied().unwrap_or("client"));
        params.extended_key_usages = vec![purpose];
        let issuer = Issuer::from_params(&self.params, &self.key);
        let certificate = params.signed_by(&key, &issuer).expect("signed");
        Leaf {
            der: certificate.der().clone(),
            pem: certificate.pem(),
            key_pem: key.serialize_pem(),
            key_der: key.serialize_der(),
        }
    }
}

struct Leaf {
    der: CertificateDer<'static>,
    pem: String,
    key_pem: String,
    key_der: Vec<u8>,
}

/// The fixture (streamable HTTP, or legacy SSE when `sse`) behind a TLS terminator showing
/// `leaf`; with `client_ca`, the terminator asks for a client certificate it signed.
struct TlsFixture {
    url: String,
    stop: CancellationToken,
}

impl Drop for TlsFixture {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl TlsFixture {
    async fn start(leaf: &Leaf, client_ca: Option<&Authority>, sse: bool) -> TlsFixture {
        let stop = CancellationToken::new();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the fixture");
        let fixture = listener.local_addr().expect("the fixture's address");
        let shutdown = stop.clone();
        tokio::spawn(async move {
            let served = if sse {
                toolgate_testkit::serve_sse(listener, shutdown, FixtureOptions::default()).await
            } else {
                toolgate_testkit::serve_http(listener, shutdown, FixtureOptions::default()).await
            };
            served.expect("the fixture serves");
        });
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("versions");
        let builder = match client_ca {
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                roots.add(pem_certificate(&ca.pem)).expect("the client CA");
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                )
                .build()
                .expect("a client verifier");
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf.key_der.clone()));
        let config =
            builder.with_single_cert(vec![leaf.der.clone()], key).expect("a server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let terminator = TcpListener::bind("127.0.0.1:0").await.expect("bind the terminator");
        let address = terminator.local_addr().expect("the terminator's address");
        tokio::spawn(terminate(terminator, acceptor, fixture, stop.clone()));
        let path = if sse { "sse" } else { "mcp" };
        TlsFixture { url: format!("https://{address}/{path}"), stop }
    }
}

fn pem_certificate(pem: &str) -> CertificateDer<'static> {
    use rustls::pki_types::pem::PemObject as _;
    CertificateDer::from_pem_slice(pem.as_bytes()).expect("a PEM certificate")
}

/// Accepts TLS connections on `listener` and relays each, decrypted, to `target`.
async fn terminate(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    target: SocketAddr,
    stop: CancellationToken,
) {
    loop {
        let (tcp, _) = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted.expect("accept"),
        };
        let (acceptor, stop) = (acceptor.clone(), stop.clone());
        tokio::spawn(async move {
            // A refused handshake is what some tests are about: the client sees it.
            let Ok(mut tls) = acceptor.accept(tcp).await else { return };
            let mut server = TcpStream::connect(target).await.expect("connect to the fixture");
            tokio::select! {
                () = stop.cancelled() => {}
                _ = tokio::io::copy_bidirectional(&mut tls, &mut server) => {}
            }
        });
    }
}

/// The files of a test: the CA, another CA, the server's and the client's certificates.
struct Files {
    dir: tempfile::TempDir,
    ca: Authority,
    server: Leaf,
}

impl Files {
    fn new() -> Files {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let ca = Authority::new("toolgate test CA");
        let other = Authority::new("another CA");
        let server = ca.issue(&["127.0.0.1"], ExtendedKeyUsagePurpose::ServerAuth);
        let client = ca.issue(&["client.test"], ExtendedKeyUsagePurpose::ClientAuth);
        let write = |name: &str, text: &str| {
            std::fs::write(dir.path().join(name), text).expect("write a PEM file");
        };
        write("ca.pem", &ca.pem);
        write("other-ca.pem", &other.pem);
        write("client.pem", &client.pem);
        write("client.key", &client.key_pem);
        Files { dir, ca, server }
    }

    /// The upstream `[servers.NAME]` at `url` with `extra`, read from the files' directory.
    fn config(&self, name: &str, url: &str, extra: &str) -> ServerConfig {
        let text =
            format!("[servers.{name}]\nurl = \"{url}\"\nstartup_timeout = \"10s\"\n{extra}\n");
        toolgate_config::parse_str(&text, Format::Toml, self.dir.path(), &FixedEnvironment::new())
            .unwrap_or_else(|errors| panic!("a valid config: {errors}"))
            .servers
            .into_iter()
            .next()
            .expect("one server")
    }
}

/// Connects to `config`'s server and calls `echo` once.
async fn echo(config: &ServerConfig) -> Result<(), String> {
    let upstream = Upstream::connect(config).await.map_err(|error| error.to_string())?;
    let arguments = json!({ "text": "over TLS" }).as_object().cloned().expect("an object");
    let params = mcp::CallToolRequestParams::new("echo").with_arguments(arguments);
    let result = upstream.call_tool(params, &CallOptions::default()).await;
    upstream.shutdown().await;
    let result = result.map_err(|error| error.to_string())?;
    let text = result.content.first().and_then(|block| block.as_text()).map(|t| t.text.clone());
    assert_eq!(text.as_deref(), Some("over TLS"), "{result:?}");
    Ok(())
}

#[tokio::test]
async fn a_server_signed_by_the_configured_ca_is_trusted() {
    let files = Files::new();
    let fixture = TlsFixture::start(&files.server, None, false).await;
    let config = files.config("good", &fixture.url, "tls = { ca = \"ca.pem\" }");
    echo(&config).await.expect("connects with tls.ca");
}

#[tokio::test]
async fn without_its_ca_the_server_is_refused_with_the_cause() {
    let files = Files::new();
    let fixture = TlsFixture::start(&files.server, None, false).await;
    // `ca` adds to the system's roots, which do not know the test CA.
    for extra in ["tls = { ca = \"other-ca.pem\" }", ""] {
        let config = files.config("wrong", &fixture.url, extra);
        let error = echo(&config).await.expect_err("refused");
        assert!(
            error.contains(
                "TLS certificate was not accepted: it is not signed by a trusted authority"
            ),
            "{extra:?}: {error}"
        );
    }
}

#[tokio::test]
async fn a_server_asking_for_a_client_certificate_gets_the_configured_one() {
    let files = Files::new();
    let fixture = TlsFixture::start(&files.server, Some(&files.ca), false).await;
    let mtls =
        "tls = { ca = \"ca.pem\", client_cert = \"client.pem\", client_key = \"client.key\" }";
    echo(&files.config("mtls", &fixture.url, mtls))
        .await
        .expect("connects with a client certificate");
    let error = echo(&files.config("nocert", &fixture.url, "tls = { ca = \"ca.pem\" }"))
        .await
        .expect_err("refused without a client certificate");
    assert!(
        error.contains(
            "upstream nocert: cannot connect to https://127.0.0.1:"
        ) && error.contains(
            "the TLS handshake failed: the server asks for a client certificate (tls.client_cert \
             and tls.client_key)"
        ),
        "{error}"
    );
}

#[tokio::test]
async fn legacy_sse_has_the_same_tls_settings() {
    let files = Files::new();
    let fixture = TlsFixture::start(&files.server, Some(&files.ca), true).await;
    let mtls = "transport = \"sse\"\ntls = { ca = \"ca.pem\", client_cert = \"client.pem\", \
                client_key = \"client.key\" }";
    echo(&files.config("sse", &fixture.url, mtls)).await.expect("connects over legacy SSE");
    let error = echo(&files.config(
        "sse_nocert",
        &fixture.url,
        "transport = \"sse\"\ntls = { ca = \"ca.pem\" }",
    ))
    .await
    .expect_err("refused without a client certificate");
    assert!(error.contains("cannot connect to"), "{error}");
}

#[tokio::test]
async fn a_pin_is_checked_on_top_of_the_ca() {
    let files = Files::new();
    let fixture = TlsFixture::start(&files.server, None, false).await;
    let digest = sha2::Sha256::digest(files.server.der.as_ref());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    let pinned = format!("tls = {{ ca = \"ca.pem\", pin_sha256 = [\"{hex}\"] }}");
    echo(&files.config("pinned", &fixture.url, &pinned)).await.expect("the pin matches");

    // Another certificate from the same CA, for the same address, is refused.
    let wrong = format!("tls = {{ ca = \"ca.pem\", pin_sha256 = [\"{}\"] }}", "00".repeat(32));
    let error = echo(&files.config("mispinned", &fixture.url, &wrong)).await.expect_err("refused");
    assert!(
        error.contains(&format!(
            "the TLS handshake failed: the server's certificate (SHA-256 {hex}) matches no \
             tls.pin_sha256"
        )),
        "{error}"
    );
}

#[tokio::test]
async fn insecure_skip_verify_connects_and_warns_naming_the_server() {
    let logs = capture_logs();
    let files = Files::new();
    let fixture = TlsFixture::start(&files.server, None, false).await;
    let config = files.config("careless", &fixture.url, "tls = { insecure_skip_verify = true }");
    echo(&config).await.expect("connects without verifying");
    let logs = logs.lock().expect("the logs").clone();
    let logs = String::from_utf8_lossy(&logs);
    assert!(
        logs.lines().any(|line| line.contains("WARN")
            && line.contains("upstream=careless")
            && line.contains("TLS certificate not verified (tls.insecure_skip_verify = true)")),
        "{logs}"
    );
}

/// What this test binary logs, from the first call on (a global subscriber: the handshakes
/// run on the runtime's threads).
fn capture_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = logs.clone();
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_env_filter("toolgate_upstream=warn")
            .with_writer(move || Writer(sink.clone()))
            .init();
        logs
    })
    .clone()
}

struct Writer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Writer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("the logs").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn paths_are_relative_to_the_config() {
    let files = Files::new();
    let config = files.config("x", "https://127.0.0.1:9/mcp", "tls = { ca = \"ca.pem\" }");
    let toolgate_config::TransportConfig::Http(http) = &config.transport else { panic!("http") };
    assert_eq!(
        http.tls.ca.as_ref().map(|f| f.path.as_path()),
        Some(files.dir.path().join("ca.pem").as_path())
    );
}

#[tokio::test]
async fn an_https_server_through_a_proxy_keeps_its_tls_settings() {
    let files = Files::new();
    let fixture = TlsFixture::start(&files.server, Some(&files.ca), false).await;
    let proxy = toolgate_testkit::tinyproxy::Tinyproxy::start(files.dir.path(), "").await;
    let digest = sha2::Sha256::digest(files.server.der.as_ref());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    // The tunnel (CONNECT) goes through the proxy; the TLS inside it is toolgate's with the
    // server, CA, pin and client certificate included.
    let extra = format!(
        "proxy = \"{}\"\ntls = {{ ca = \"ca.pem\", pin_sha256 = [\"{hex}\"], client_cert = \
         \"client.pem\", client_key = \"client.key\" }}",
        proxy.url()
    );
    echo(&files.config("tunnelled", &fixture.url, &extra))
        .await
        .expect("connects through the proxy");
    let authority = fixture.url.trim_start_matches("https://").trim_end_matches("/mcp");
    proxy.saw(&format!("CONNECT {authority}")).await;
}
