//! toolgate's OAuth client toward upstream servers (the MCP authorization specification's
//! client side): signing a person in through a browser (`toolgate login`), a gateway's own
//! machine credentials, refreshing and stepping up tokens, and keeping them encrypted at rest.
//!
//! The protocol pieces (discovery from a `401`, client registration, PKCE, `resource`, `iss`,
//! refresh) are rmcp's authorization client, on the `oauth2` crate; this crate decides when
//! to use them, where tokens live, and how an upstream's HTTP client carries them.
//!
//! - [`vault`]: tokens at rest;
//! - [`signin`]: the authorization code flow, shown to a person by a [`Browser`]
//!   ([`browser`]) and received on a loopback port ([`receiver`]);
//! - [`machine`]: client credentials, with a secret or a signed assertion;
//! - [`login`]: one upstream's sign-in while it is used (token, refresh, step-up);
//! - [`client`]: the upstream HTTP client that carries it;
//! - [`http`]: the HTTP client of the OAuth requests themselves;
//! - [`probe`]: asking a server whether (and how) it wants a login.

pub mod browser;
pub mod client;
mod error;
pub mod http;
pub mod login;
pub mod machine;
pub mod probe;
pub mod receiver;
pub mod signin;
pub mod vault;

pub use browser::{Headless, SystemBrowser};
pub use client::Authorized;
pub use error::LoginError;
pub use http::OAuthHttp;
pub use login::Login;
pub use signin::{Browser, SignedIn, Target, sign_in};
pub use vault::{Record, Vault, VaultEntry, VaultError, entry_name};
