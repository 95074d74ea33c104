//! What a PostgreSQL URL says: tokio-postgres's `Config`, and the `sslrootcert` file, which
//! tokio-postgres does not read (and refuses as an unknown option).

use std::path::PathBuf;
use std::str::FromStr as _;

use tokio_postgres::Config;

/// The URL without `sslrootcert=`, and its value (percent-decoded).
pub(super) fn take_root_cert(url: &str) -> (String, Option<PathBuf>) {
    let Some((base, query)) = url.split_once('?') else { return (url.to_owned(), None) };
    let mut root_cert = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.strip_prefix("sslrootcert=") {
            Some(value) => {
                let value = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
                root_cert = Some(PathBuf::from(value.into_owned()));
                false
            }
            None => true,
        })
        .collect();
    if kept.is_empty() {
        (base.to_owned(), root_cert)
    } else {
        (format!("{base}?{}", kept.join("&")), root_cert)
    }
}

/// tokio-postgres's reading of `url` (without `sslrootcert`).
pub(super) fn config(url: &str) -> Result<Config, tokio_postgres::Error> {
    Config::from_str(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslrootcert_is_read_here_and_the_rest_by_tokio_postgres() {
        let url = "postgres://u:pw@h/db?sslrootcert=%2Fetc%2Fca.pem&sslmode=require";
        let (rest, root_cert) = take_root_cert(url);
        assert_eq!(root_cert, Some(PathBuf::from("/etc/ca.pem")));
        let config = config(&rest).unwrap();
        assert_eq!(config.get_ssl_mode(), tokio_postgres::config::SslMode::Require);
        let (bare, only) = take_root_cert("postgres://u@h/db?sslrootcert=/ca.pem");
        assert_eq!((bare.as_str(), only), ("postgres://u@h/db", Some(PathBuf::from("/ca.pem"))));
    }
}
