//! What a PostgreSQL URL says: tokio-postgres's `Config`, the `sslrootcert` file (which
//! tokio-postgres does not read), the database named without its password, and what must be
//! taken out of any message about it (the password, as written and decoded, and the URL).

use std::path::PathBuf;
use std::str::FromStr as _;

use tokio_postgres::config::{Config, Host};

/// A URL, read.
pub(super) struct Url {
    pub(super) config: Config,
    /// `sslrootcert`: a file of PEM certificates to trust beside the system's.
    pub(super) root_cert: Option<PathBuf>,
}

/// Reads `url` (`postgres://` or `postgresql://`, or libpq's `key=value` form); the error is
/// redacted by `redactor`.
pub(super) fn read(url: &str, redactor: &Redactor) -> Result<Url, String> {
    let (url, root_cert) = take_root_cert(url);
    let config = Config::from_str(&url)
        .map_err(|error| redactor.redact(&toolgate_core::ErrorChain(&error).to_string()))?;
    Ok(Url { config, root_cert })
}

/// The URL without `sslrootcert=` (tokio-postgres refuses options it does not know), and its
/// value.
fn take_root_cert(url: &str) -> (String, Option<PathBuf>) {
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

/// The database as messages name it: `postgres://user@host:port/dbname`, never the password.
pub(super) fn target(config: &Config) -> String {
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match host {
                Host::Tcp(name) => format!("{name}:{port}"),
                Host::Unix(dir) => format!("{}:{port}", dir.display()),
            }
        })
        .collect();
    let user = config.get_user().map(|user| format!("{user}@")).unwrap_or_default();
    format!("postgres://{user}{}/{}", hosts.join(","), config.get_dbname().unwrap_or_default())
}

/// Takes a URL's secrets out of text.
pub(super) struct Redactor {
    /// Longest first, so that a part of one is not left behind by a shorter one.
    secrets: Vec<String>,
}

impl Redactor {
    /// The secrets of `url`: the password as written (percent-encoded in a URL) and decoded,
    /// and the whole URL.
    pub(super) fn of(url: &str) -> Redactor {
        let mut secrets = vec![url.to_owned()];
        if let Some(written) = written_password(url) {
            let decoded = percent_encoding::percent_decode_str(written).decode_utf8_lossy();
            secrets.push(decoded.into_owned());
            secrets.push(written.to_owned());
        }
        if let Ok(config) = Config::from_str(&take_root_cert(url).0)
            && let Some(password) = config.get_password()
        {
            secrets.push(String::from_utf8_lossy(password).into_owned());
        }
        secrets.retain(|secret| !secret.is_empty());
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    /// `text` with every secret replaced by `***`.
    pub(super) fn redact(&self, text: &str) -> String {
        self.secrets.iter().fold(text.to_owned(), |text, secret| text.replace(secret, "***"))
    }
}

/// The password of `scheme://user:password@host...` as written.
fn written_password(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    userinfo.split_once(':').map(|(_, password)| password)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_taken_out_as_written_and_decoded() {
        let url = "postgres://app:p%40ss%2Fw0rd@db.example:6432/toolgate?sslmode=disable";
        let redactor = Redactor::of(url);
        assert_eq!(redactor.redact("said p@ss/w0rd and p%40ss%2Fw0rd"), "said *** and ***");
        assert_eq!(redactor.redact(url), "***");
        let read = read(url, &redactor).unwrap();
        assert_eq!(target(&read.config), "postgres://app@db.example:6432/toolgate");
        assert!(!target(&read.config).contains("w0rd"));
    }

    #[test]
    fn sslrootcert_is_read_here_and_the_rest_by_tokio_postgres() {
        let url = "postgres://u:pw@h/db?sslrootcert=%2Fetc%2Fca.pem&sslmode=require";
        let read = read(url, &Redactor::of(url)).unwrap();
        assert_eq!(read.root_cert, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!(read.config.get_ssl_mode(), tokio_postgres::config::SslMode::Require);
        let (bare, none) = take_root_cert("postgres://u@h/db?sslrootcert=/ca.pem");
        assert_eq!((bare.as_str(), none), ("postgres://u@h/db", Some(PathBuf::from("/ca.pem"))));
    }

    #[test]
    fn an_unreadable_url_is_reported_without_its_password() {
        let url = "postgres://u:hunter2@h:notaport/db";
        let error = read(url, &Redactor::of(url)).err().expect("a bad port");
        assert!(!error.contains("hunter2"), "{error}");
        let url = "postgres://u:hunter2@h/db?nosuchoption=hunter2";
        let error = read(url, &Redactor::of(url)).err().expect("an unknown option");
        assert!(error.contains("nosuchoption") && !error.contains("hunter2"), "{error}");
    }
}
