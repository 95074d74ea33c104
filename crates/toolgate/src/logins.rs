//! Where toolgate keeps its sign-ins to upstream servers: the tokens under the user's state
//! folder (`$XDG_STATE_HOME/toolgate/oauth/`, else `~/.local/state/toolgate/oauth/`), the key
//! that encrypts them under the config folder (`$XDG_CONFIG_HOME/toolgate/oauth.key`, else
//! `~/.config/toolgate/oauth.key`), so that one copied without the other opens nothing.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use toolgate_config::Environment;
use toolgate_oauth::{Logins, Vault};

/// The base folder named by `var` when absolute, else `fallback` under the home folder.
fn base(env: &dyn Environment, var: &str, fallback: &[&str]) -> Option<PathBuf> {
    env.var(var).map(PathBuf::from).filter(|dir| dir.is_absolute()).or_else(|| {
        env.home_dir().map(|home| fallback.iter().fold(home, |dir, part| dir.join(part)))
    })
}

/// The token folder and the key file.
pub(crate) fn locations(env: &dyn Environment) -> anyhow::Result<(PathBuf, PathBuf)> {
    let state = base(env, "XDG_STATE_HOME", &[".local", "state"])
        .context("no state folder for sign-in tokens: set XDG_STATE_HOME or HOME")?;
    let config = base(env, "XDG_CONFIG_HOME", &[".config"])
        .context("no config folder for the sign-in key: set XDG_CONFIG_HOME or HOME")?;
    Ok((state.join("toolgate").join("oauth"), config.join("toolgate").join("oauth.key")))
}

/// The token vault.
pub(crate) fn vault() -> anyhow::Result<Arc<Vault>> {
    let (dir, key) = locations(&toolgate_config::SystemEnvironment)?;
    Ok(Arc::new(Vault::open(&dir, &key).context("cannot open the sign-in token store")?))
}

/// The sign-ins of a gateway that serves others (no person to sign in during use: a server
/// that needs one answers with a tool error saying `toolgate login NAME`). `None`, with a
/// warning, when the store cannot be opened: servers that ask for OAuth then fail as before.
pub(crate) fn for_serving() -> Option<Logins> {
    match vault() {
        Ok(vault) => Some(Logins { vault, browser: None, principal: None }),
        Err(error) => {
            tracing::warn!("upstream sign-ins are off: {error:#}");
            None
        }
    }
}

/// What `toolgate servers` says about a server's sign-in: `state` is `none` (toolgate does not
/// sign in to it: stdio, `oauth = false`, its own `Authorization` header, or it never asked),
/// `logged_in` (with `subject`, `expires_at`, whether it `renews` with a refresh token, and
/// `scopes`), `needs_login`, or `client_credentials` (the gateway's own, with `client_id`).
pub(crate) fn sign_in_state(
    server: &toolgate_config::ServerConfig,
    needs_login: bool,
    vault: Option<&Vault>,
) -> serde_json::Value {
    let Ok(target) = toolgate_upstream::sign_in_target(server) else {
        return serde_json::json!({"state": "none"});
    };
    if target.config.flow == toolgate_config::OAuthFlow::ClientCredentials {
        return serde_json::json!({"state": "client_credentials",
            "client_id": target.config.client_id});
    }
    let entry = toolgate_oauth::entry_name(&server.name, None);
    let record = vault
        .and_then(|vault| vault.read(&entry).ok().flatten())
        .filter(|record| record.url == target.url.as_str());
    match record {
        Some(record) if record.has_tokens() && !needs_login => serde_json::json!({
            "state": "logged_in",
            "subject": record.subject,
            "expires_at": record.expires_at().map(at_time),
            "renews": record.renews(),
            "scopes": record.scopes(),
        }),
        record if needs_login => serde_json::json!({"state": "needs_login",
            "scopes": record.map(|r| r.wanted_scopes).unwrap_or_default()}),
        _ => serde_json::json!({"state": "none"}),
    }
}

/// The sign-in state in a few words, for the table.
pub(crate) fn sign_in_words(state: &serde_json::Value) -> String {
    let text = |key: &str| state[key].as_str().map(str::to_owned);
    match state["state"].as_str() {
        Some("logged_in") => {
            let who = text("subject").unwrap_or_else(|| "someone".into());
            match (text("expires_at"), state["renews"].as_bool()) {
                (Some(at), Some(true)) => format!("{who} (renews; now until {at})"),
                (Some(at), _) => format!("{who} until {at}"),
                (None, _) => who,
            }
        }
        Some("needs_login") => "needs login".into(),
        Some("client_credentials") => {
            format!("client {}", text("client_id").unwrap_or_default())
        }
        _ => "-".into(),
    }
}

/// A Unix time as RFC 3339 (UTC, seconds).
pub(crate) fn at_time(unix: u64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix);
    humantime::format_rfc3339_seconds(time).to_string()
}
