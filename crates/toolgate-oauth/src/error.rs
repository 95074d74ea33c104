//! What can go wrong while signing in to an upstream, in words that say what to do.

use std::time::Duration;

use rmcp::transport::auth::AuthError;

/// A sign-in, refresh or token request that did not work.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    /// The server needs a person to sign in, and none has (or the sign-in has expired).
    #[error("server {server} needs a login: run `toolgate login {server}`{}", scopes_hint(.scopes))]
    NeedsLogin { server: String, scopes: Vec<String> },
    /// A step of the authorization protocol failed.
    #[error("server {server}: {step}: {source}")]
    Protocol {
        server: String,
        step: &'static str,
        #[source]
        source: Box<AuthError>,
    },
    /// The loopback port for the redirect could not be opened.
    #[error("cannot listen on {address} for the sign-in's redirect: {source}")]
    Listen { address: std::net::SocketAddr, source: std::io::Error },
    /// No redirect came back in time.
    #[error("no sign-in came back within {} (was the page opened and the sign-in finished?)", toolgate_duration(*.waited))]
    NoRedirect { waited: Duration },
    /// The authorization server refused the sign-in.
    #[error("the authorization server refused the sign-in: {error}{}", if .description.is_empty() { String::new() } else { format!(" ({})", .description) })]
    Refused { error: String, description: String },
    /// The token store failed.
    #[error(transparent)]
    Vault(#[from] crate::vault::VaultError),
    /// The HTTP client could not be built.
    #[error("server {server}: cannot build the HTTP client for sign-in: {source}")]
    Client { server: String, source: reqwest::Error },
    /// A machine token (client credentials) could not be obtained.
    #[error("server {server}: client credentials: {detail}")]
    Machine { server: String, detail: String },
    /// The server does not take OAuth: it answered without asking for a login.
    #[error("server {server} did not ask for a login (it answered {status} without a challenge)")]
    NotProtected { server: String, status: u16 },
    /// The server is not one toolgate can sign in to.
    #[error("server {server}: {why}")]
    Unsupported { server: String, why: String },
}

fn scopes_hint(scopes: &[String]) -> String {
    if scopes.is_empty() {
        String::new()
    } else {
        format!(" (it asks for scope {})", scopes.join(" "))
    }
}

fn toolgate_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds >= 60 && seconds.is_multiple_of(60) {
        format!("{} min", seconds / 60)
    } else if seconds > 0 {
        format!("{seconds} s")
    } else {
        format!("{} ms", duration.as_millis())
    }
}

impl LoginError {
    /// `error` from step `step` of signing in to `server`.
    pub(crate) fn protocol(server: &str, step: &'static str, error: AuthError) -> LoginError {
        match error {
            AuthError::AuthorizationRequired => {
                LoginError::NeedsLogin { server: server.to_owned(), scopes: Vec::new() }
            }
            source => {
                LoginError::Protocol { server: server.to_owned(), step, source: Box::new(source) }
            }
        }
    }

    /// Whether a person must sign in (again) to end this.
    pub fn needs_login(&self) -> bool {
        matches!(self, LoginError::NeedsLogin { .. })
    }
}
