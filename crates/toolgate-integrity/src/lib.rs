//! Tool integrity: what a server promised about each tool, prompt and resource when a user
//! trusted it, and what changed since.
//!
//! - [`contract`]: an item's contract and its digest (SHA-256 of RFC 8785 canonical JSON);
//! - [`lock`]: the lock file (`toolgate.lock`) that pins contracts, and drift against it;
//! - [`diff`]: a change shown readably (a word diff of text, a schema path by path,
//!   annotations spelled out);
//! - [`scan`]: the poisoning scan, offline and deterministic;
//! - [`judge`]: a model's second opinion on the scan: its prompt, and its answer read strictly.
//!
//! Nothing here talks to a network or a server: callers list what servers offer and hand the
//! lists in (and, for the judge, send its requests).

pub mod contract;
pub mod diff;
mod excerpt;
pub mod judge;
pub mod lock;
pub mod scan;

pub use contract::{Contract, Kind};
pub use lock::{Lock, LockError, ServerDrift};
