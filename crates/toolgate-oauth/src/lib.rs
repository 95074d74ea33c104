//! toolgate's OAuth client toward upstream servers (the MCP authorization specification's
//! client side): signing a person in through a browser (`toolgate login`), a gateway's own
//! machine credentials, refreshing and stepping up tokens, and keeping them encrypted at rest.
//!
//! The protocol pieces (discovery from a `401`, client registration, PKCE, `resource`, `iss`,
//! refresh) are rmcp's authorization client, on the `oauth2` crate; this crate decides when
//! to use them, where tokens live, and how an upstream's HTTP client carries them.
//!
//! - [`vault`]: tokens at rest, and [`keyring`]: where the key that opens them is kept;
//! - [`signin`]: the authorization code flow, shown to a person by a [`Browser`]
//!   ([`browser`]) and received on a loopback port ([`receiver`]);
//! - [`machine`]: client credentials, with a secret or a signed assertion;
//! - [`login`]: one upstream's sign-in while it is used (token, refresh, step-up);
//! - [`client`]: the upstream HTTP client that carries it;
//! - [`desk`]: sign-ins a gateway hosts for its callers, finished by its own redirect route;
//! - [`http`]: the HTTP client of the OAuth requests themselves;
//! - [`probe`]: asking a server whether (and how) it wants a login.

pub mod browser;
pub mod client;
pub mod desk;
mod error;
pub mod http;
pub mod keyring;
pub mod login;
pub mod machine;
pub mod probe;
pub mod receiver;
pub mod signin;
pub mod vault;

use std::sync::Arc;

pub use browser::{Headless, SystemBrowser};
pub use client::Authorized;
pub use desk::{Desk, Finished};
pub use error::LoginError;
pub use http::OAuthHttp;
pub use keyring::KeyPlace;
pub use login::Login;
pub use signin::{Browser, Pending, SignedIn, Target, begin, finish, sign_in};
pub use vault::{Record, Vault, VaultEntry, VaultError, entry_name};

/// Where the upstreams' sign-ins are kept, and who signs a person in when a request needs it
/// (none on a gateway that serves others: a person runs `toolgate login` instead).
#[derive(Clone)]
pub struct Logins {
    /// The token store.
    pub vault: Arc<Vault>,
    /// Signs a person in during use, when set.
    pub browser: Option<Arc<dyn Browser>>,
    /// Whose sign-ins these are: a caller of a server that signs in per caller
    /// (`per_principal`), or `None` for toolgate's own.
    pub principal: Option<String>,
}

impl std::fmt::Debug for Logins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logins")
            .field("vault", &self.vault)
            .field("browser", &self.browser.is_some())
            .field("principal", &self.principal)
            .finish()
    }
}

impl Logins {
    /// The sign-in of `target`, as toolgate itself or as [`Logins::principal`].
    pub fn login(&self, target: Target) -> Arc<Login> {
        let entry = entry_name(&target.server, self.principal.as_deref());
        Arc::new(Login::new(target, &self.vault, entry, self.browser.clone()))
    }
}
