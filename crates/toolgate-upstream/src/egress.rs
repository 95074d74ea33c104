//! How requests to an HTTP upstream leave: its proxy and its TLS, as its [`HttpConfig`] says,
//! on the reqwest client of either HTTP transport ([`client_builder`]), and the part of them
//! an OAuth client for the server needs ([`oauth_client_builder`]).
//!
//! The proxy is resolved when the config is loaded ([`ProxyChoice`]): the server's own, or
//! `[proxy]`, set here with the variables not read; `proxy = false`, none; else reqwest reads
//! `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` and `NO_PROXY` (and their lowercase forms) as it
//! builds the client. reqwest does not bypass loopback addresses by itself: only `NO_PROXY`
//! does. A proxy's URL may hold credentials: it is never logged or put in an error.
//!
//! Without `tls`, the client is reqwest's own: the system's roots (rustls-platform-verifier).
//! With it, a rustls config of our own: the same verifier with `ca` added to the system's
//! roots, then the `pin_sha256` check of the leaf certificate on top, and `client_cert` for
//! servers that ask for one. `insecure_skip_verify` replaces the verifier by one that checks
//! nothing and warns, naming the server, on every handshake (session resumption is off so that
//! every connection has one).

use std::sync::Arc;

use rustls::DigitallySignedStruct;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use sha2::Digest as _;
use toolgate_config::{HttpConfig, ProxyChoice, TlsConfig};

/// Why a client for an upstream could not be set up. Never quotes a proxy's URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EgressError {
    /// A proxy's URL was refused by the HTTP client.
    #[error("the proxy for {scheme}:// URLs is not a usable proxy URL")]
    Proxy {
        /// `http` or `https`: which of the server's proxies.
        scheme: &'static str,
    },
    /// A `tls` file could not be used.
    #[error("tls.{field}: {why}")]
    Tls {
        /// `ca`, `client_cert` or `client_key`.
        field: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// The system's roots or the TLS settings could not be set up.
    #[error("the TLS settings cannot be set up: {0}")]
    Setup(String),
}

/// A client builder for the upstream `server` at `config`: the connection settings every HTTP
/// upstream shares ([`crate::http_client::connection_settings`]), its proxy, and its TLS.
pub fn client_builder(
    server: &str,
    config: &HttpConfig,
) -> Result<reqwest::ClientBuilder, EgressError> {
    let builder = crate::http_client::connection_settings(base(), config.pool);
    let builder = proxied(builder, &config.proxy)?;
    if config.tls.is_default() {
        return Ok(builder);
    }
    Ok(builder.tls_backend_preconfigured(rustls_config(server, &config.tls)?))
}

/// A client builder for the OAuth requests made for the server at `config` (to its
/// authorization server, which is another host): the server's proxy and its `ca` on top of the
/// system's roots, but not its pin or client certificate, which are about the server itself,
/// and not `insecure_skip_verify` either. Connections are reqwest's defaults.
pub fn oauth_client_builder(config: &HttpConfig) -> Result<reqwest::ClientBuilder, EgressError> {
    let mut builder = proxied(base(), &config.proxy)?;
    if let Some(ca) = &config.tls.ca {
        let certificates = reqwest::Certificate::from_pem_bundle(ca.pem.expose().as_bytes())
            .map_err(|error| EgressError::Tls { field: "ca", why: error.to_string() })?;
        for certificate in certificates {
            builder = builder.add_root_certificate(certificate);
        }
    }
    Ok(builder)
}

/// A fresh builder, with ring as the process's TLS provider unless the program has installed
/// one already.
fn base() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

/// `builder` with the proxies `choice` says.
fn proxied(
    builder: reqwest::ClientBuilder,
    choice: &ProxyChoice,
) -> Result<reqwest::ClientBuilder, EgressError> {
    let proxies = match choice {
        ProxyChoice::Environment => return Ok(builder),
        ProxyChoice::Direct => return Ok(builder.no_proxy()),
        ProxyChoice::Via(proxies) => proxies,
    };
    // No variables: only what is configured.
    let mut builder = builder.no_proxy();
    let no_proxy = reqwest::NoProxy::from_string(&proxies.no_proxy_string());
    if let Some(url) = &proxies.http {
        let proxy = reqwest::Proxy::http(url.expose())
            .map_err(|_| EgressError::Proxy { scheme: "http" })?;
        builder = builder.proxy(proxy.no_proxy(no_proxy.clone()));
    }
    if let Some(url) = &proxies.https {
        let proxy = reqwest::Proxy::https(url.expose())
            .map_err(|_| EgressError::Proxy { scheme: "https" })?;
        builder = builder.proxy(proxy.no_proxy(no_proxy));
    }
    Ok(builder)
}

/// The rustls config of a server with `tls` settings.
fn rustls_config(server: &str, tls: &TlsConfig) -> Result<rustls::ClientConfig, EgressError> {
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let setup = |error: rustls::Error| EgressError::Setup(error.to_string());
    let verifier: Arc<dyn ServerCertVerifier> = if tls.insecure_skip_verify {
        Arc::new(Unverified { server: server.to_owned(), provider: provider.clone() })
    } else {
        let roots = match &tls.ca {
            Some(ca) => certificates(ca.pem.expose(), "ca")?,
            None => Vec::new(),
        };
        let system =
            rustls_platform_verifier::Verifier::new_with_extra_roots(roots, provider.clone())
                .map_err(setup)?;
        if tls.pin_sha256.is_empty() {
            Arc::new(system)
        } else {
            Arc::new(Pinned { inner: Arc::new(system), pins: tls.pin_sha256.clone() })
        }
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(setup)?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match (&tls.client_cert, &tls.client_key) {
        (Some(cert), Some(key)) => {
            let chain = certificates(cert.pem.expose(), "client_cert")?;
            let key = PrivateKeyDer::from_pem_slice(key.pem.expose().as_bytes()).map_err(|_| {
                EgressError::Tls { field: "client_key", why: "holds no private key".to_owned() }
            })?;
            builder.with_client_auth_cert(chain, key).map_err(|error| EgressError::Tls {
                field: "client_key",
                why: format!("cannot be used with client_cert: {error}"),
            })?
        }
        _ => builder.with_no_client_auth(),
    };
    // reqwest's own config offers only HTTP/1.1 too (no `http2` feature).
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    if tls.insecure_skip_verify {
        config.resumption = rustls::client::Resumption::disabled();
    }
    Ok(config)
}

/// The certificates of a PEM text that the config has checked.
fn certificates(
    pem: &str,
    field: &'static str,
) -> Result<Vec<CertificateDer<'static>>, EgressError> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| EgressError::Tls { field, why: format!("is not valid PEM ({error})") })
}

/// The usual verification, then the leaf certificate's SHA-256 against the pins.
#[derive(Debug)]
struct Pinned {
    inner: Arc<dyn ServerCertVerifier>,
    pins: Vec<[u8; 32]>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified = self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )?;
        let digest: [u8; 32] = sha2::Sha256::digest(end_entity.as_ref()).into();
        if self.pins.contains(&digest) {
            return Ok(verified);
        }
        let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        // `General` is the one kind whose text is shown as written (`cause::tls_failure`).
        Err(rustls::Error::General(format!(
            "the server's certificate (SHA-256 {hex}) matches no tls.pin_sha256"
        )))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `insecure_skip_verify`: any certificate, for any name, with a warning each time. The
/// handshake's signatures are still checked against the certificate shown (which proves
/// nothing about who holds it).
#[derive(Debug)]
struct Unverified {
    server: String,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        tracing::warn!(
            upstream = %self.server,
            "TLS certificate not verified (tls.insecure_skip_verify = true): anyone on the way \
             can read and change this server's traffic"
        );
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_config::{ProxyConfig, Secret};

    fn config(url: &str) -> HttpConfig {
        HttpConfig::new(url.parse().expect("a URL"))
    }

    #[test]
    fn every_proxy_choice_builds() {
        let mut http = config("http://127.0.0.2:9/mcp");
        for choice in [
            ProxyChoice::Environment,
            ProxyChoice::Direct,
            ProxyChoice::Via(ProxyConfig {
                http: Some(Secret::new("http://user:pass@127.0.0.1:3128")),
                https: None,
                no_proxy: vec!["localhost".into(), "10.0.0.0/8".into()],
            }),
        ] {
            http.proxy = choice;
            client_builder("x", &http).expect("a builder").build().expect("a client");
            oauth_client_builder(&http).expect("a builder").build().expect("a client");
        }
    }

    #[test]
    fn insecure_and_pinned_configs_build() {
        let mut http = config("https://127.0.0.2:9/mcp");
        http.tls.insecure_skip_verify = true;
        let tls = rustls_config("x", &http.tls).expect("a config");
        assert!(tls.alpn_protocols == [b"http/1.1".to_vec()]);
        http.tls = TlsConfig { pin_sha256: vec![[0; 32]], ..TlsConfig::default() };
        client_builder("x", &http).expect("a builder").build().expect("a client");
    }

    #[test]
    fn a_bad_key_is_an_error_naming_the_field() {
        let mut http = config("https://127.0.0.2:9/mcp");
        let pem =
            |text: &str| toolgate_config::PemFile { path: "x.pem".into(), pem: Secret::new(text) };
        http.tls.client_cert =
            Some(pem("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"));
        http.tls.client_key =
            Some(pem("-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"));
        let error = client_builder("x", &http).expect_err("refused");
        assert!(matches!(error, EgressError::Tls { field: "client_key", .. }), "{error}");
    }
}
