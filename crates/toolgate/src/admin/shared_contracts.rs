//! Contracts approved on one replica, pinned on every other: with `[state]` on Redis or
//! PostgreSQL, an approval (`POST /integrity/{tool}/approve`, or the console's pins page) is
//! announced on the shared bus, and each other replica pins the same tool in its own lock
//! files, through the same check an approver's request goes through: only if the contract
//! its own server lists has the digest the approver reviewed. A replica whose server lists
//! another contract pins nothing and says so in its log.
//!
//! The bus is for wake-ups (a message sent while the backend is down is lost): a replica that
//! missed an approval keeps withholding the tool until someone approves it again, which is
//! the safe side.

use serde::{Deserialize, Serialize};
use toolgate_state::SharedState;

use super::Admin;

/// The channel approvals are announced on.
const APPROVED: &str = "integrity/approved";

/// The shared state, and this replica's name on the bus (so that it skips its own
/// announcements).
#[derive(Clone)]
pub(crate) struct Replicas {
    state: SharedState,
    me: String,
}

impl Replicas {
    pub(crate) fn new(state: SharedState) -> Replicas {
        Replicas { state, me: uuid::Uuid::new_v4().simple().to_string() }
    }
}

/// One approval, as announced.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Announced {
    from: String,
    by: String,
    exposed: String,
    digest: String,
}

impl Replicas {
    /// Tells the other replicas that `by` approved `exposed`'s contract `digest` here.
    pub(crate) fn announce(&self, by: &str, exposed: &str, digest: &str) {
        let announced = Announced {
            from: self.me.clone(),
            by: by.to_owned(),
            exposed: exposed.to_owned(),
            digest: digest.to_owned(),
        };
        let Ok(payload) = serde_json::to_vec(&announced) else { return };
        let state = self.state.clone();
        tokio::spawn(async move {
            if let Err(error) = state.publish(APPROVED, &payload).await {
                tracing::warn!(
                    target: "toolgate::integrity",
                    tool = %announced.exposed,
                    "the other replicas were not told of this approval (approve it there too): {:#}",
                    anyhow::Error::new(error)
                );
            }
        });
    }
}

/// Pins on this replica what the others approve, until the returned task is aborted; `None`
/// when nothing is shared.
pub(crate) fn follow(admin: &Admin) -> Option<tokio::task::JoinHandle<()>> {
    let replicas = admin.shared.clone()?;
    let admin = admin.clone();
    Some(tokio::spawn(async move {
        // Until the state is reachable: the subscription then comes back by itself.
        let mut subscription = loop {
            match replicas.state.subscribe(APPROVED).await {
                Ok(subscription) => {
                    tracing::info!(
                        target: "toolgate::integrity",
                        "pinning what the other replicas approve"
                    );
                    break subscription;
                }
                Err(error) => {
                    tracing::debug!("cannot follow approvals yet: {error}");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            }
        };
        while let Some(payload) = subscription.recv().await {
            let Ok(announced) = serde_json::from_slice::<Announced>(&payload) else { continue };
            if announced.from == replicas.me {
                continue;
            }
            pin(&admin, &announced);
        }
    }))
}

/// Pins what another replica approved, as an approver's request here would.
fn pin(admin: &Admin, announced: &Announced) {
    let Announced { by, exposed, digest, .. } = announced;
    match super::contracts::pin_tool(admin, by, exposed, digest) {
        Ok(_) => tracing::info!(
            target: "toolgate::integrity",
            tool = %exposed,
            %by,
            %digest,
            "contract approved on another replica, pinned here too"
        ),
        Err(refused) => tracing::warn!(
            target: "toolgate::integrity",
            tool = %exposed,
            %by,
            %digest,
            "contract approved on another replica, not pinned here: {}",
            refused.message()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announcement_reads_back_as_written() {
        let announced = Announced {
            from: "r1".into(),
            by: "alice".into(),
            exposed: "fx__echo".into(),
            digest: "sha256:00".into(),
        };
        let bytes = serde_json::to_vec(&announced).unwrap();
        assert!(bytes.len() < toolgate_state::MAX_PAYLOAD_BYTES);
        assert_eq!(serde_json::from_slice::<Announced>(&bytes).unwrap(), announced);
    }
}
