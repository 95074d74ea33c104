//! TLS to PostgreSQL, when the URL's `sslmode` is `prefer` (tokio-postgres's default) or
//! `require`: rustls with the process's provider (ring, as the rest of toolgate, unless the
//! program installed another), trusting the system's roots and the certificates of
//! `sslrootcert`. The certificate and the host name are always verified, as libpq's
//! `verify-full` does; `sslmode=disable` connects in plain text.

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The connector, or why there is none (in words).
pub(super) fn connector(root_cert: Option<&Path>) -> Result<MakeRustlsConnect, String> {
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
