//! Servers that sign in each caller (`oauth = { per_principal = true }`): a caller who proved
//! who they are to the HTTP front reaches such a server over a connection of their own,
//! carrying their own upstream token, never another's.
//!
//! Those connections are kept in a pool by (server, caller), at most
//! [`MAX_CALLER_UPSTREAMS`] (the least recently used is closed first). A caller who has not
//! signed in to the server gets, as the tool error of their call, a link to its authorization
//! server; its redirect comes back to the gateway's `/oauth/callback`, which finishes the
//! sign-in ([`toolgate_oauth::Desk`]) and keeps the tokens under the caller's vault entry.
//! Callers on this machine (the desktop client, the CLI, the agent) use toolgate's own sign-in
//! (`toolgate login`), as for any server. The gateway lists a per-caller server's tools over
//! its own connection: with its own sign-in, or anonymously where the server allows it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use tokio::time::Instant;
use toolgate_config::{ServerConfig, TransportConfig};
use toolgate_intercept::Principal;
use toolgate_oauth::probe::{Probe, probe};
use toolgate_oauth::{Desk, Finished, LoginError, Logins, entry_name};
use toolgate_upstream::Upstream;

use crate::error::GatewayError;

/// Per-caller connections kept open at once, across servers.
pub(crate) const MAX_CALLER_UPSTREAMS: usize = 256;

/// Whether `config`'s server signs in each caller.
pub(crate) fn signs_in_each_caller(config: &ServerConfig) -> bool {
    matches!(&config.transport, TransportConfig::Http(http) if http.oauth.enabled && http.oauth.per_principal)
}

/// The per-caller connections of a gateway, and the sign-ins it hosts for its callers.
#[derive(Debug)]
pub(crate) struct PerCaller {
    logins: Logins,
    desk: Desk,
    /// Where authorization servers send callers back: `<public_url>/oauth/callback`.
    redirect_uri: RwLock<Option<String>>,
    pool: Mutex<HashMap<Key, (Arc<Upstream>, Instant)>>,
}

/// A pooled connection's server and caller (as `kind:id@tenant`).
type Key = (String, String);

impl PerCaller {
    pub(crate) fn new(logins: Logins) -> PerCaller {
        let logins = Logins { principal: None, browser: None, ..logins };
        PerCaller {
            logins,
            desk: Desk::new(),
            redirect_uri: RwLock::default(),
            pool: Mutex::default(),
        }
    }

    /// Sets the gateway's public URL, under which `/oauth/callback` is reached.
    pub(crate) fn set_public_url(&self, url: Option<&url::Url>) {
        let uri = url.map(|url| format!("{}/oauth/callback", url.as_str().trim_end_matches('/')));
        *self.redirect_uri.write().expect("redirect lock") = uri;
    }

    /// The connection of `principal` to the server of `config`: the pooled one, or a new one
    /// with the caller's own sign-in; a link to sign in when they have none.
    pub(crate) async fn upstream(
        &self,
        config: &ServerConfig,
        principal: &Principal,
    ) -> Result<Arc<Upstream>, GatewayError> {
        if !principal.is_authenticated() {
            return Err(GatewayError::SignIn {
                server: config.name.clone(),
                how: "this server signs in each caller with their own account, and the gateway \
                      does not know who you are (it needs [auth])"
                    .into(),
            });
        }
        let key = (config.name.clone(), principal.to_string());
        if let Some((upstream, used)) = self.pool.lock().expect("pool lock").get_mut(&key)
            && upstream.is_connected()
        {
            *used = Instant::now();
            return Ok(upstream.clone());
        }
        self.forget(&key.0, &key.1);
        let logins = Logins { principal: Some(key.1.clone()), ..self.logins.clone() };
        let upstream = Upstream::start_with(config.clone(), None, Some(&logins));
        match upstream.ready().await {
            Ok(()) => {
                self.keep(key, upstream.clone());
                Ok(upstream)
            }
            Err(error) => {
                upstream.shutdown().await;
                if upstream.needs_login() {
                    Err(self.sign_in_link(config, principal).await)
                } else {
                    Err(GatewayError::Upstream(error))
                }
            }
        }
    }

    fn keep(&self, key: Key, upstream: Arc<Upstream>) {
        let mut pool = self.pool.lock().expect("pool lock");
        while pool.len() >= MAX_CALLER_UPSTREAMS {
            let oldest = pool.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k.clone());
            let Some(oldest) = oldest else { break };
            if let Some((closing, _)) = pool.remove(&oldest) {
                tokio::spawn(async move { closing.shutdown().await });
            }
        }
        pool.insert(key, (upstream, Instant::now()));
    }

    /// Closes the connection of `principal` (by its display form) to `server`, if pooled.
    pub(crate) fn forget(&self, server: &str, principal: &str) {
        let key = (server.to_owned(), principal.to_owned());
        if let Some((closing, _)) = self.pool.lock().expect("pool lock").remove(&key) {
            tokio::spawn(async move { closing.shutdown().await });
        }
    }

    /// What the caller is told when they must sign in: the link, or why there is none.
    pub(crate) async fn sign_in_link(
        &self,
        config: &ServerConfig,
        principal: &Principal,
    ) -> GatewayError {
        let server = config.name.clone();
        let refused = |how: String| GatewayError::SignIn { server: server.clone(), how };
        let Some(redirect_uri) = self.redirect_uri.read().expect("redirect lock").clone() else {
            return refused(
                "this server signs in each caller with their own account, and the gateway has \
                 no [gateway] public_url to receive the sign-in at"
                    .into(),
            );
        };
        let entry = entry_name(&config.name, Some(&principal.to_string()));
        let told = |url: &str| {
            refused(format!(
                "this server signs in each caller with their own account: open {url} to sign \
                 in, then call again"
            ))
        };
        // Calling again before signing in gives the same link, without asking the server.
        if let Some(url) = self.desk.link_for(&entry) {
            return told(&url);
        }
        let target = match toolgate_upstream::sign_in_target(config) {
            Ok(target) => target,
            Err(why) => return refused(why),
        };
        let challenge = match probe(&target).await {
            Ok(Probe::Challenge(challenge)) => Some(challenge),
            Ok(Probe::Open { .. }) => None,
            Err(error) => return refused(error.to_string()),
        };
        let store = self.logins.vault.entry(entry, target.url.to_string());
        let wanted = store.record().ok().flatten().map(|r| r.wanted_scopes).unwrap_or_default();
        match toolgate_oauth::begin(&target, store, challenge.as_deref(), &wanted, &redirect_uri)
            .await
        {
            Ok(pending) => told(&self.desk.hold(pending)),
            Err(error) => refused(error.to_string()),
        }
    }

    /// Finishes the sign-in a redirect to `/oauth/callback` carries; the caller's next call
    /// opens a connection with the new token.
    pub(crate) async fn complete(
        &self,
        query: &[(String, String)],
    ) -> Result<Finished, LoginError> {
        let finished = self.desk.complete(query).await?;
        if let Some(principal) = finished.entry.strip_prefix(&format!("{}/", finished.server)) {
            self.forget(&finished.server, principal);
        }
        Ok(finished)
    }

    /// Deletes `principal`'s tokens for `server` and closes their connection. Returns whether
    /// there were tokens.
    pub(crate) fn revoke(
        &self,
        server: &str,
        principal: &str,
    ) -> Result<bool, toolgate_oauth::VaultError> {
        self.forget(server, principal);
        self.logins.vault.remove(&entry_name(server, Some(principal)))
    }
}
