//! toolgate's OAuth client toward upstream servers (the MCP authorization specification's
//! client side): signing a person in through a browser (`toolgate login`), a gateway's own
//! machine credentials, refreshing and stepping up tokens, and keeping them encrypted at rest.
//!
//! The protocol pieces (discovery from a `401`, client registration, PKCE, `resource`, `iss`,
//! refresh) are rmcp's authorization client, on the `oauth2` crate; this crate decides when
//! to use them, where tokens live, and how an upstream's HTTP client carries them.

pub mod vault;

pub use vault::{Record, Vault, VaultEntry, VaultError, entry_name};
