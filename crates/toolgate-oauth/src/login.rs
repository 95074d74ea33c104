//! The sign-in of one upstream while toolgate uses it: which token a request carries, what to
//! do when the server turns it down (`401`: refresh, or sign in again) or wants more of it
//! (`403 insufficient_scope`: step up), and what state it is in for `toolgate servers`.
//!
//! Tokens come from the vault, where `toolgate login` (another process, maybe) put them; a
//! server with none goes unauthenticated until it answers `401`. Without a [`Browser`] (a
//! gateway serving others) a sign-in that needs a person ends in [`LoginError::NeedsLogin`],
//! which the caller sees as a tool error telling them to run `toolgate login`; the scopes the
//! server asked for are kept, so that the login asks for them.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::auth::{AuthError, AuthorizationManager};
use tokio::sync::Mutex;
use toolgate_config::OAuthFlow;

use crate::error::LoginError;
use crate::machine::{MachineToken, client_credentials};
use crate::probe::challenge_scopes;
use crate::signin::{Browser, SIGN_IN_LIMIT, Target, sign_in};
use crate::vault::{Vault, VaultEntry};

/// Refresh a token this long before it expires.
const REFRESH_AHEAD: u64 = 60;
/// Step-ups tried in a row before giving up (the server keeps asking for more).
const MAX_STEP_UPS: u32 = 3;

/// The sign-in of one upstream (and, for per-caller sign-ins, one caller).
pub struct Login {
    target: Target,
    entry: VaultEntry,
    browser: Option<Arc<dyn Browser>>,
    inner: Mutex<Inner>,
    /// Step-ups since the last request that needed none.
    step_ups: std::sync::atomic::AtomicU32,
}

#[derive(Default)]
struct Inner {
    /// The authorization client, once there are tokens (authorization code).
    manager: Option<AuthorizationManager>,
    /// The gateway's own token (client credentials).
    machine: Option<MachineToken>,
    /// The challenge the last machine token was asked for with, to ask again before it expires.
    machine_challenge: Option<String>,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login").field("target", &self.target).field("entry", &self.entry).finish()
    }
}

impl Login {
    /// The sign-in of `target`, kept in `vault` under `entry` (see [`crate::entry_name`]);
    /// `browser` signs a person in when one is needed during use (none on a gateway serving
    /// others: a person runs `toolgate login` instead).
    pub fn new(
        target: Target,
        vault: &Arc<Vault>,
        entry: String,
        browser: Option<Arc<dyn Browser>>,
    ) -> Login {
        let entry = vault.entry(entry, target.url.to_string());
        Login { target, entry, browser, inner: Mutex::default(), step_ups: Default::default() }
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.target.server
    }

    fn needs_login(&self, scopes: Vec<String>) -> LoginError {
        LoginError::NeedsLogin { server: self.target.server.clone(), scopes }
    }

    /// The token the next request carries: none until there is one (the server's `401` then
    /// says how to get one). A token close to its expiry is refreshed first.
    pub async fn token(&self) -> Result<Option<String>, LoginError> {
        let mut inner = self.inner.lock().await;
        if self.target.config.flow == OAuthFlow::ClientCredentials {
            let Some(token) = &inner.machine else { return Ok(None) };
            if !expiring(token.expires_at) {
                return Ok(Some(token.access_token.clone()));
            }
            // Renewed before it expires, from the same authorization server.
            let challenge = inner.machine_challenge.clone();
            let token = client_credentials(&self.target, challenge.as_deref()).await?;
            inner.machine = Some(token.clone());
            return Ok(Some(token.access_token));
        }
        if inner.manager.is_none() {
            inner.manager = self.stored_manager().await?;
        }
        let Some(manager) = &inner.manager else { return Ok(None) };
        match manager.get_access_token().await {
            Ok(token) => Ok(Some(token)),
            Err(AuthError::AuthorizationRequired) => {
                inner.manager = None;
                Ok(None)
            }
            Err(error) => {
                Err(LoginError::protocol(&self.target.server, "refreshing the token", error))
            }
        }
    }

    /// The authorization client for the tokens in the vault, if there are any.
    async fn stored_manager(&self) -> Result<Option<AuthorizationManager>, LoginError> {
        let Some(record) = self.entry.record()?.filter(|r| r.has_tokens()) else {
            return Ok(None);
        };
        let server = &self.target.server;
        let mut manager = self.target.manager(self.entry.clone()).await?;
        // Discovered as the sign-in discovered it: the same resource and authorization server.
        let resolution = manager
            .resolve_metadata_from_challenge(record.challenge.as_deref())
            .await
            .map_err(|e| LoginError::protocol(server, "discovering the authorization server", e))?;
        manager.set_metadata(resolution.metadata);
        let ready = manager
            .initialize_from_store()
            .await
            .map_err(|e| LoginError::protocol(server, "discovering the authorization server", e))?;
        if !ready {
            return Ok(None);
        }
        self.target.configure_preregistered(&mut manager, "http://127.0.0.1/callback")?;
        Ok(Some(manager))
    }

    /// The server answered `401` with `challenge` to a request that carried `sent`: a fresh
    /// token to retry with (refreshed, or obtained again), or why there is none.
    pub async fn rejected(
        &self,
        sent: Option<&str>,
        challenge: &str,
    ) -> Result<String, LoginError> {
        let mut inner = self.inner.lock().await;
        let server = &self.target.server;
        if self.target.config.flow == OAuthFlow::ClientCredentials {
            // Another request may have got a new one meanwhile; one about to expire is not sent
            // (`token` held it back), so it is not sent again either.
            if let Some(token) = &inner.machine
                && Some(token.access_token.as_str()) != sent
                && !expiring(token.expires_at)
            {
                return Ok(token.access_token.clone());
            }
            let token = client_credentials(&self.target, Some(challenge)).await?;
            inner.machine = Some(token.clone());
            inner.machine_challenge = Some(challenge.to_owned());
            return Ok(token.access_token);
        }
        if inner.manager.is_none() {
            inner.manager = self.stored_manager().await?;
        }
        if let Some(manager) = &inner.manager {
            // Another request may have refreshed it meanwhile.
            if let Ok(current) = manager.get_access_token().await
                && Some(current.as_str()) != sent
            {
                return Ok(current);
            }
            match manager.refresh_token().await {
                Ok(tokens) => {
                    let token = oauth2::TokenResponse::access_token(&tokens).secret().clone();
                    if Some(token.as_str()) != sent {
                        return Ok(token);
                    }
                }
                Err(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => {}
                Err(error) => {
                    return Err(LoginError::protocol(server, "refreshing the token", error));
                }
            }
            inner.manager = None;
        }
        self.sign_in_again(&mut inner, challenge, Vec::new()).await
    }

    /// The server answered `403 insufficient_scope` with `challenge`: a token with the scopes
    /// it asks for as well, or why there is none.
    pub async fn insufficient_scope(&self, challenge: &str) -> Result<String, LoginError> {
        let mut inner = self.inner.lock().await;
        let wanted: Vec<String> = challenge_scopes(challenge, &self.target.url);
        if self.target.config.flow == OAuthFlow::ClientCredentials {
            return Err(LoginError::Machine {
                server: self.target.server.clone(),
                detail: format!(
                    "the server wants scope {:?}, which the configured scopes do not include",
                    wanted.join(" ")
                ),
            });
        }
        let step_ups = self.step_ups.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if step_ups > MAX_STEP_UPS {
            self.step_ups.store(0, std::sync::atomic::Ordering::Relaxed);
            return Err(LoginError::Unsupported {
                server: self.target.server.clone(),
                why: format!("still refused after {MAX_STEP_UPS} sign-ins with more scopes"),
            });
        }
        let mut scopes =
            inner.manager.as_ref().map(|m| m.select_scopes(None, &[])).unwrap_or_default();
        for scope in wanted {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        self.sign_in_again(&mut inner, challenge, scopes).await
    }

    /// A request went through: step-ups start counting again.
    pub fn succeeded(&self) {
        self.step_ups.store(0, std::sync::atomic::Ordering::Relaxed);
    }

    async fn sign_in_again(
        &self,
        inner: &mut Inner,
        challenge: &str,
        mut scopes: Vec<String>,
    ) -> Result<String, LoginError> {
        for scope in challenge_scopes(challenge, &self.target.url) {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        let Some(browser) = &self.browser else {
            // Kept for `toolgate login`, which asks for them.
            let keep = scopes.clone();
            self.entry.update(|record| record.wanted_scopes = keep)?;
            return Err(self.needs_login(scopes));
        };
        let signed_in = sign_in(
            &self.target,
            self.entry.clone(),
            Some(challenge),
            &scopes,
            browser.as_ref(),
            SIGN_IN_LIMIT,
        )
        .await?;
        let token =
            signed_in.manager.get_access_token().await.map_err(|e| {
                LoginError::protocol(&self.target.server, "reading the new token", e)
            })?;
        inner.manager = Some(signed_in.manager);
        Ok(token)
    }
}

/// Whether a token that expires at `at` should be renewed now.
fn expiring(at: Option<u64>) -> bool {
    at.is_some_and(|at| at <= crate::vault::now() + REFRESH_AHEAD)
}

/// How long a person has to sign in when a request needs it (exposed for messages).
pub const STEP_UP_LIMIT: Duration = SIGN_IN_LIMIT;

#[cfg(test)]
mod tests;
