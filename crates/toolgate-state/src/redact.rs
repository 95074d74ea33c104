//! A backend URL's secrets, taken out of any text about it, and the backend as logs name it
//! (`redis://host:port/0`, never the password).

/// Takes a URL's secrets out of text.
pub(crate) struct Redactor {
    /// Longest first, so that a part of one is not left behind by a shorter one.
    secrets: Vec<String>,
}

impl Redactor {
    /// The secrets of `url`: the whole URL, and its password as written (percent-encoded) and
    /// decoded.
    pub(crate) fn of(url: &str) -> Redactor {
        let mut secrets = vec![url.to_owned()];
        if let Some(written) = written_password(url) {
            let decoded = percent_encoding::percent_decode_str(written).decode_utf8_lossy();
            secrets.push(decoded.into_owned());
            secrets.push(written.to_owned());
        }
        secrets.retain(|secret| !secret.is_empty());
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    /// Also takes out `secret` (a password a URL gives in its query, as PostgreSQL's may).
    pub(crate) fn also(mut self, secret: &str) -> Redactor {
        if !secret.is_empty() && !self.secrets.iter().any(|known| known == secret) {
            self.secrets.push(secret.to_owned());
            self.secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        }
        self
    }

    /// `text` with every secret replaced by `***`.
    pub(crate) fn redact(&self, text: &str) -> String {
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

/// The backend as messages name it: `scheme://user@host:port/path`, without the password or
/// the query (which may hold one too).
pub(crate) fn target(url: &str, default_port: u16) -> String {
    let Ok(parsed) = url::Url::parse(url) else { return "(unreadable URL)".to_owned() };
    let user = match parsed.username() {
        "" => String::new(),
        user => format!("{user}@"),
    };
    format!(
        "{}://{user}{}:{}{}",
        parsed.scheme(),
        parsed.host_str().unwrap_or_default(),
        parsed.port().unwrap_or(default_port),
        parsed.path()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_taken_out_as_written_and_decoded() {
        let url = "redis://app:p%40ss%2Fw0rd@cache.example:6380/2";
        let redactor = Redactor::of(url);
        assert_eq!(redactor.redact("said p@ss/w0rd and p%40ss%2Fw0rd"), "said *** and ***");
        assert_eq!(redactor.redact(&format!("bad URL {url}")), "bad URL ***");
        assert_eq!(target(url, 6379), "redis://app@cache.example:6380/2");
        let bare = "redis://:hunter2@127.0.0.1";
        assert_eq!(Redactor::of(bare).redact("hunter2!"), "***!");
        assert_eq!(target(bare, 6379), "redis://127.0.0.1:6379");
        assert_eq!(
            target("postgres://u:pw@db/app?password=pw&sslmode=require", 5432),
            "postgres://u@db:5432/app"
        );
    }
}
