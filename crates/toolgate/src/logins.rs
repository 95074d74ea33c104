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
        Ok(vault) => Some(Logins { vault, browser: None }),
        Err(error) => {
            tracing::warn!("upstream sign-ins are off: {error:#}");
            None
        }
    }
}
