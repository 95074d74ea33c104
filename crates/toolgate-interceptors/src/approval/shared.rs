//! The approval desk across replicas: with `[state] backend` on Redis or PostgreSQL, the calls
//! held on every replica, the decisions taken on any of them and the grants remembered live in
//! the shared state, so that an approver on any replica sees and decides a call another holds.
//!
//! Keys (each expires, see `toolgate-state`):
//! - `approval/held/{id}`: a held call as approvers see it, until its deadline;
//! - `approval/decision/{id}`: the ruling on it, written once (`put_new`: the first approver
//!   wins), kept for [`DECISION_KEPT`] after the deadline for every call waiting on it;
//! - `approval/call/{caller+digest}`: the held call of this very call by this caller, so that
//!   a caller whose replica died while its call was held, and who sends the call again, waits
//!   on (or is answered by) the same held call rather than a new one;
//! - `approval/grant/{caller+digest}`: an approval remembered for a while.
//!
//! A decision also goes out on the channel [`DECIDED`] to wake the replica that waits on it;
//! the bus may lose a message (it is for wake-ups), so a waiting call also looks for its
//! decision every [`POLL`].

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::time::Instant;
use toolgate_intercept::{CallerKey, Principal};
use toolgate_state::{MAX_TTL, MAX_VALUE_BYTES, SharedState, StateError};

use super::held::{PendingApproval, Ruling, Settled};

/// The channel a decision's id is published on.
pub(super) const DECIDED: &str = "approval/decided";

/// How often a waiting call looks for its decision, whatever the bus says.
pub(super) const POLL: Duration = Duration::from_secs(1);

/// How long a decision is kept after its call's deadline: for the calls waiting on it, and a
/// caller that sends its call again after its replica died.
pub(super) const DECISION_KEPT: Duration = Duration::from_secs(120);

fn held_key(id: &str) -> String {
    format!("approval/held/{id}")
}

fn decision_key(id: &str) -> String {
    format!("approval/decision/{id}")
}

pub(super) const HELD_PREFIX: &str = "approval/held/";

/// The key of this call by this caller, under `kind` (`call` or `grant`): a hash, so that no
/// caller's name or argument is in a key.
pub(super) fn call_key(kind: &str, caller: &CallerKey, digest: &str) -> String {
    let mut hash = Sha256::new();
    match caller {
        CallerKey::Principal(p) => {
            hash.update(b"principal\0");
            hash.update(p.kind.as_bytes());
            hash.update(b"\0");
            hash.update(p.id.as_bytes());
            hash.update(b"\0");
            hash.update(p.tenant.as_deref().unwrap_or_default().as_bytes());
        }
        CallerKey::Session(session) => {
            hash.update(b"session\0");
            hash.update(session.as_bytes());
        }
        CallerKey::Address(address) => {
            hash.update(b"address\0");
            hash.update(address.to_string().as_bytes());
        }
        CallerKey::Nobody => hash.update(b"nobody"),
    }
    hash.update(b"\0");
    hash.update(digest.as_bytes());
    let hex: String = hash.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("approval/{kind}/{hex}")
}

/// A held call as it is kept in the shared state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct HeldRecord {
    pub(super) id: String,
    digest: String,
    server: String,
    tool: String,
    exposed: String,
    arguments: Value,
    caller: String,
    principal: PrincipalRecord,
    reason: String,
    asked_by: String,
    requested_at_ms: u64,
    deadline_ms: u64,
    separate_duties: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct PrincipalRecord {
    kind: String,
    id: String,
    groups: Vec<String>,
    tenant: Option<String>,
}

fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// The wall-clock time of `deadline` (an instant of this process).
fn wall_clock(deadline: Instant) -> SystemTime {
    SystemTime::now() + deadline.saturating_duration_since(Instant::now())
}

/// The instant of this process at wall-clock time `ms` (now, if that has passed).
fn instant_at(ms: u64) -> Instant {
    let at = UNIX_EPOCH + Duration::from_millis(ms);
    Instant::now() + at.duration_since(SystemTime::now()).unwrap_or_default()
}

impl HeldRecord {
    /// `request` as kept, under `id`. Arguments too large to keep whole are replaced by a note
    /// (the audit log has them): the record must fit in one shared value.
    pub(super) fn new(id: &str, request: &PendingApproval) -> HeldRecord {
        let principal = &request.caller_principal;
        let mut record = HeldRecord {
            id: id.to_owned(),
            digest: request.digest.clone(),
            server: request.server.clone(),
            tool: request.tool.clone(),
            exposed: request.exposed.clone(),
            arguments: request.arguments.clone(),
            caller: request.caller.clone(),
            principal: PrincipalRecord {
                kind: principal.kind.clone(),
                id: principal.id.clone(),
                groups: principal.groups.clone(),
                tenant: principal.tenant.clone(),
            },
            reason: request.reason.clone(),
            asked_by: request.asked_by.clone(),
            requested_at_ms: unix_ms(request.requested_at),
            deadline_ms: unix_ms(wall_clock(request.deadline)),
            separate_duties: request.separate_duties,
        };
        let size = serde_json::to_vec(&record.arguments).map(|v| v.len()).unwrap_or(0);
        if size > MAX_VALUE_BYTES / 2 {
            record.arguments = Value::String(format!(
                "({size} bytes of arguments, too many to share between replicas: the audit log \
                 has them; their digest is {})",
                record.digest
            ));
        }
        record
    }

    pub(super) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a held record serializes")
    }

    pub(super) fn from_bytes(bytes: &[u8]) -> Option<HeldRecord> {
        serde_json::from_slice(bytes).ok()
    }

    /// How long it has left.
    pub(super) fn remaining(&self) -> Duration {
        (UNIX_EPOCH + Duration::from_millis(self.deadline_ms))
            .duration_since(SystemTime::now())
            .unwrap_or_default()
    }

    pub(super) fn into_pending(self) -> PendingApproval {
        PendingApproval {
            id: self.id,
            digest: self.digest,
            server: self.server,
            tool: self.tool,
            exposed: self.exposed,
            arguments: self.arguments,
            caller: self.caller,
            caller_principal: Principal {
                kind: self.principal.kind,
                id: self.principal.id,
                groups: self.principal.groups,
                tenant: self.principal.tenant,
            },
            reason: self.reason,
            asked_by: self.asked_by,
            requested_at: UNIX_EPOCH + Duration::from_millis(self.requested_at_ms),
            deadline: instant_at(self.deadline_ms),
            separate_duties: self.separate_duties,
        }
    }
}

/// A ruling as it is kept.
#[derive(Debug, Serialize, Deserialize)]
struct DecisionRecord {
    by: String,
    allow: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    remember_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

impl DecisionRecord {
    fn new(by: &str, ruling: &Ruling) -> DecisionRecord {
        match ruling {
            Ruling::Allow { remember } => DecisionRecord {
                by: by.to_owned(),
                allow: true,
                remember_ms: remember.map(|d| d.as_millis() as u64),
                reason: None,
            },
            Ruling::Deny { reason } => DecisionRecord {
                by: by.to_owned(),
                allow: false,
                remember_ms: None,
                reason: reason.clone(),
            },
        }
    }

    fn settled(self) -> Settled {
        let answer = if self.allow {
            Ruling::Allow { remember: self.remember_ms.map(Duration::from_millis) }
        } else {
            Ruling::Deny { reason: self.reason }
        };
        Settled::Decided { by: self.by, answer }
    }
}

/// A grant as it is kept.
#[derive(Debug, Serialize, Deserialize)]
struct GrantRecord {
    by: String,
    own: bool,
}

/// The desk's operations on the shared state.
#[derive(Debug, Clone)]
pub(super) struct SharedDesk {
    pub(super) state: SharedState,
}

impl SharedDesk {
    /// Every held call of every replica (at most `limit`).
    pub(super) async fn held(&self, limit: usize) -> Result<Vec<PendingApproval>, StateError> {
        let entries = self.state.scan(HELD_PREFIX, limit).await?;
        Ok(entries
            .into_iter()
            .filter_map(|(_, bytes)| HeldRecord::from_bytes(&bytes))
            .filter(|record| record.remaining() > Duration::ZERO)
            .map(HeldRecord::into_pending)
            .collect())
    }

    /// The held call `id`, if it is still waiting for a decision.
    pub(super) async fn find(&self, id: &str) -> Result<Option<HeldRecord>, StateError> {
        Ok(self.state.get(&held_key(id)).await?.and_then(|bytes| HeldRecord::from_bytes(&bytes)))
    }

    /// Records `ruling` on `record` as the one decision (false: another came first), takes the
    /// call off the list, and wakes whoever waits on it.
    pub(super) async fn decide(
        &self,
        record: &HeldRecord,
        by: &str,
        ruling: &Ruling,
    ) -> Result<bool, StateError> {
        let decision = serde_json::to_vec(&DecisionRecord::new(by, ruling)).expect("serializes");
        let kept = ttl(record.remaining() + DECISION_KEPT);
        if !self.state.put_new(&decision_key(&record.id), &decision, kept).await? {
            return Ok(false);
        }
        self.state.delete(&held_key(&record.id)).await?;
        if let Err(error) = self.state.publish(DECIDED, record.id.as_bytes()).await {
            // The waiting replica finds the decision when it next looks.
            tracing::debug!(id = %record.id, "cannot announce a decision: {error}");
        }
        Ok(true)
    }

    /// The decision on `id`, if there is one.
    pub(super) async fn decision(&self, id: &str) -> Result<Option<Settled>, StateError> {
        let Some(bytes) = self.state.get(&decision_key(id)).await? else { return Ok(None) };
        Ok(serde_json::from_slice::<DecisionRecord>(&bytes).ok().map(DecisionRecord::settled))
    }

    /// The held call this very call by this caller already has (`call_key`), if any: its id.
    pub(super) async fn earlier(&self, call: &str) -> Result<Option<String>, StateError> {
        Ok(self.state.get(call).await?.and_then(|bytes| String::from_utf8(bytes).ok()))
    }

    /// Puts `record` on the list, with `call` (if any) pointing at it.
    pub(super) async fn put(
        &self,
        record: &HeldRecord,
        call: Option<&str>,
    ) -> Result<(), StateError> {
        let kept = ttl(record.remaining());
        self.state.put(&held_key(&record.id), &record.to_bytes(), kept).await?;
        if let Some(call) = call {
            self.state.put(call, record.id.as_bytes(), kept + DECISION_KEPT).await?;
        }
        Ok(())
    }

    /// Takes `id` off the list and forgets `call`'s pointer (the call was settled or left).
    pub(super) async fn forget(&self, id: &str, call: Option<&str>) {
        for key in [Some(held_key(id)), call.map(str::to_owned)].into_iter().flatten() {
            if let Err(error) = self.state.delete(&key).await {
                tracing::debug!(%key, "cannot remove a settled approval: {error}");
            }
        }
    }

    /// Who approved this very call for this caller earlier, if that still holds.
    pub(super) async fn remembered(
        &self,
        caller: &CallerKey,
        digest: &str,
    ) -> Result<Option<(String, bool)>, StateError> {
        let key = call_key("grant", caller, digest);
        let Some(bytes) = self.state.get(&key).await? else { return Ok(None) };
        Ok(serde_json::from_slice::<GrantRecord>(&bytes).ok().map(|g| (g.by, g.own)))
    }

    /// Remembers an approval for `duration` (at most the state's longest time to live).
    pub(super) async fn remember(
        &self,
        caller: &CallerKey,
        digest: &str,
        by: &str,
        own: bool,
        duration: Duration,
    ) -> Result<(), StateError> {
        let key = call_key("grant", caller, digest);
        let grant =
            serde_json::to_vec(&GrantRecord { by: by.to_owned(), own }).expect("serializes");
        self.state.put(&key, &grant, ttl(duration)).await
    }
}

/// A time to live the state takes: at least a millisecond, at most [`MAX_TTL`].
fn ttl(duration: Duration) -> Duration {
    duration.clamp(Duration::from_millis(1), MAX_TTL)
}

#[cfg(test)]
mod tests;
