//! toolgate's events, the bus that carries them, and the tamper-evident audit log
//! (see ARCHITECTURE.md, `toolgate-audit`).
//!
//! Everything that happens to a call or an upstream becomes an [`Event`], published on the
//! [`EventBus`]. Publishing never waits: each subscriber has a bounded queue, and a full queue
//! drops the event and counts it. Sinks subscribe with an [`EventPattern`]: the audit sink
//! appends to a hash-chained JSONL file ([`AuditLog`], checked by [`verify`], what is found
//! put in words by [`verdict`], and read as it grows by a [`Follower`]), the tracing sink
//! logs, and the webhook sink ([`spawn_webhook_sink`]) POSTs each event as JSON to a URL, with
//! retries. [`ArgumentRecord`] hashes and redacts tool arguments before they are recorded:
//! fields by path, and every secret the detectors of `toolgate-secrets` (re-exported as
//! [`secrets`]) find in the strings left.
//!
//! Only the webhook module does network IO; the rest of the crate does none. Of the other
//! toolgate crates it uses only `toolgate-core` (retry backoff) and `toolgate-secrets` (the
//! detectors).

#![warn(missing_docs, missing_debug_implementations)]

mod bus;
mod chain;
mod error;
mod event;
mod follow;
mod pattern;
mod place;
mod redact;
mod rfc3339;
mod sink;
pub mod verdict;
mod webhook;
mod written;

pub use bus::{EventBus, Subscription};
pub use chain::{AuditLog, GENESIS, VerifyReport, verify, verify_with_head};
pub use error::{AuditError, ChainProblem, PlaceProblem};
pub use event::{Event, kind};
pub use follow::{FollowError, Follower, Restart};
pub use pattern::{EventPattern, PatternError};
pub use redact::{ArgumentRecord, FieldPath, FieldPathError, REDACTED};
pub use sink::{SINK_CAPACITY, spawn_audit_sink, spawn_tracing_sink};
pub use webhook::{WebhookError, WebhookOptions, WebhookStats, spawn_webhook_sink};
pub use written::{NotWritten, WriteSlot, Written};

/// The detectors of secrets and personal data that [`ArgumentRecord::detect`] runs.
pub use toolgate_secrets as secrets;
