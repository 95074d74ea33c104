//! TLS for both network backends: rustls with ring, as everywhere in toolgate.
//!
//! `rediss://` is the `redis` crate's rustls support, which builds its client configuration with
//! the process's default provider: [`install_provider`] makes that ring unless the program has
//! installed another. PostgreSQL's connector ([`postgres_connector`]) names its provider
//! itself, and trusts the system's roots and the certificates of the URL's `sslrootcert`; the
//! certificate and the host name are always verified, as libpq's `verify-full` does.

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;
use tokio_postgres_rustls::MakeRustlsConnect;

/// Makes ring the process's default rustls provider, unless one is installed.
pub(crate) fn install_provider() {
    if CryptoProvider::get_default().is_none() {
        // Another thread may have installed one in between: theirs stays, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// The connector for PostgreSQL, or why there is none (in words).
pub(crate) fn postgres_connector(root_cert: Option<&Path>) -> Result<MakeRustlsConnect, String> {
    let roots = match root_cert {
        None => Vec::new(),
        Some(file) => {
            let roots = CertificateDer::pem_file_iter(file)
                .and_then(|certificates| certificates.collect::<Result<Vec<_>, _>>())
                .map_err(|error| format!("sslrootcert {}: {error}", file.display()))?;
            if roots.is_empty() {
                return Err(format!("sslrootcert {}: holds no certificate", file.display()));
            }
            roots
        }
    };
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let verifier =
        rustls_platform_verifier::Verifier::new_with_extra_roots(roots, provider.clone())
            .map_err(|error| format!("the TLS roots: {error}"))?;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("TLS: {error}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}
