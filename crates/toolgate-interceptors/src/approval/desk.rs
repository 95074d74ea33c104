//! The approval desk: calls held for a person's decision through the admin API, the rulings
//! given on them, and the approvals remembered for a while. Shared by every `approval`
//! interceptor and the admin API, which sees only this small API: the calls waiting, and
//! [`ApprovalDesk::decide_body`].

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;
use toolgate_audit::{Event as AuditEvent, EventBus};
use toolgate_intercept::{CallerKey, Principal};

use super::held::{PendingApproval, Ruling, Settled};
use super::shared::{self, SharedDesk};

#[cfg(doc)]
use toolgate_intercept::call_digest;

/// Why a decision was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecideError {
    /// The ruling could not be read (not JSON, not an object, or a field is wrong).
    #[error("{0}")]
    BadBody(String),
    /// No call with this id is waiting (never was, decided, or expired).
    #[error("no call {0:?} is waiting for approval (it was decided, expired, or never existed)")]
    NotPending(String),
    /// Separation of duties: the approver is the caller.
    #[error("{approver:?} made this call and cannot approve it (separation of duties)")]
    OwnCall {
        /// Who tried.
        approver: String,
    },
    /// The state the replicas share cannot be reached now; try again.
    #[error("the approvals cannot be reached now: {0}")]
    Unavailable(String),
}

impl DecideError {
    fn unavailable(error: &toolgate_state::StateError) -> DecideError {
        DecideError::Unavailable(toolgate_core::ErrorChain(error).to_string())
    }
}

/// Whether `approver`, a name (an admin token's), names `caller`: the caller's `kind:id@tenant`
/// as displayed, its `kind:id` (in any tenant), or its bare id (whatever its kind or tenant).
///
/// An approver is known only by a name, which says nothing of how they would come in as a
/// caller, so a bare name is taken to be the same person under every kind (`alice` is
/// `jwt:alice`, `key:alice` and `local:alice`): separation of duties errs towards refusing. A
/// name with a kind is that identity: `key:alice` is not `jwt:alice`, and `jwt:alice@globex`
/// is not `jwt:alice@acme`.
pub(super) fn is_caller(approver: &str, caller: &Principal) -> bool {
    if approver == caller.id {
        return true;
    }
    let Some(rest) = approver.strip_prefix(caller.kind.as_str()).and_then(|r| r.strip_prefix(':'))
    else {
        return false;
    };
    match rest.strip_prefix(caller.id.as_str()) {
        Some("") => true,
        Some(tenant) => {
            tenant.strip_prefix('@').is_some_and(|t| caller.tenant.as_deref() == Some(t))
        }
        None => false,
    }
}

/// The most calls held at once: each is a request someone is waiting on, and a person can
/// look through only so many; more are refused at once, saying why.
pub(crate) const MOST_HELD: usize = 1_000;

/// The most held calls listed for approvers at once (over every replica).
const MOST_LISTED: usize = 10_000;

/// The most approvals remembered at once; past it, the one that ends soonest is forgotten
/// first (its call will be asked about again).
pub(crate) const MOST_REMEMBERED: usize = 10_000;

/// Calls held for an approver's decision, shared by the `approval` interceptors and the admin
/// API; also remembers approvals that were given for a while.
#[derive(Debug)]
pub struct ApprovalDesk {
    state: Mutex<DeskState>,
    events: EventBus,
    /// Whether anyone can decide (the admin API is serving).
    attended: AtomicBool,
    /// Where held calls, decisions and grants are shared with the other replicas; `None`:
    /// this process's memory only.
    shared: Option<SharedDesk>,
}

#[derive(Debug, Default)]
struct DeskState {
    next: u64,
    pending: BTreeMap<String, Waiting>,
    /// (caller, digest) -> approved until.
    remembered: HashMap<(CallerKey, String), Remembered>,
}

#[derive(Debug)]
struct Waiting {
    request: PendingApproval,
    answer: oneshot::Sender<Settled>,
}

#[derive(Debug, Clone)]
struct Remembered {
    until: Instant,
    by: String,
    /// The caller approved its own call (asked at the client).
    own: bool,
}

impl ApprovalDesk {
    /// An empty desk whose decisions are published on `events`.
    pub fn new(events: EventBus) -> Arc<ApprovalDesk> {
        Arc::new(ApprovalDesk {
            state: Mutex::default(),
            events,
            attended: AtomicBool::new(false),
            shared: None,
        })
    }

    /// An empty desk that shares held calls, decisions and grants through `shared` with every
    /// replica that uses the same backend.
    pub fn shared(events: EventBus, shared: toolgate_state::SharedState) -> Arc<ApprovalDesk> {
        Arc::new(ApprovalDesk {
            state: Mutex::default(),
            events,
            attended: AtomicBool::new(false),
            shared: Some(SharedDesk { state: shared }),
        })
    }

    /// Says whether anyone can decide held calls (the admin API is serving). An unattended
    /// desk refuses at once rather than holding a call nobody can see.
    pub fn set_attended(&self, attended: bool) {
        self.attended.store(attended, Ordering::Release);
    }

    pub(super) fn is_attended(&self) -> bool {
        self.attended.load(Ordering::Acquire)
    }

    /// The calls waiting for a decision on every replica (with shared state; else here),
    /// the one that expires first first.
    pub async fn waiting(&self) -> Result<Vec<PendingApproval>, DecideError> {
        let Some(shared) = &self.shared else { return Ok(self.pending()) };
        let mut waiting =
            shared.held(MOST_LISTED).await.map_err(|e| DecideError::unavailable(&e))?;
        waiting.sort_by_key(|r| r.deadline);
        Ok(waiting)
    }

    /// The calls this replica holds now, the one that expires first first.
    pub fn pending(&self) -> Vec<PendingApproval> {
        let state = self.state.lock().expect("approval desk lock");
        let mut waiting: Vec<_> = state.pending.values().map(|w| w.request.clone()).collect();
        waiting.sort_by_key(|r| r.deadline);
        waiting
    }

    /// Decides the call `id` as `approver` from an admin API request body (see
    /// [`Ruling::from_body`]); returns the call and the decision (`allow` or `deny`).
    pub async fn decide_body(
        &self,
        id: &str,
        approver: &str,
        body: &[u8],
    ) -> Result<(PendingApproval, &'static str), DecideError> {
        let body: Value = serde_json::from_slice(body)
            .map_err(|error| DecideError::BadBody(format!("body is not JSON: {error}")))?;
        let Some(body) = body.as_object() else {
            return Err(DecideError::BadBody("body must be a JSON object".to_owned()));
        };
        let ruling = Ruling::from_body(body).map_err(DecideError::BadBody)?;
        let decision = match &ruling {
            Ruling::Allow { .. } => "allow",
            Ruling::Deny { .. } => "deny",
        };
        Ok((self.decide(id, approver, ruling).await?, decision))
    }

    /// Decides the call `id` as `approver` (held on any replica, with shared state).
    pub async fn decide(
        &self,
        id: &str,
        approver: &str,
        answer: Ruling,
    ) -> Result<PendingApproval, DecideError> {
        if let Some(shared) = &self.shared {
            let unavailable = |e: toolgate_state::StateError| DecideError::unavailable(&e);
            let record = shared.find(id).await.map_err(unavailable)?;
            let record = record.ok_or_else(|| DecideError::NotPending(id.to_owned()))?;
            let request = record_request(&record);
            if request.separate_duties && is_caller(approver, &request.caller_principal) {
                return Err(DecideError::OwnCall { approver: approver.to_owned() });
            }
            if !shared.decide(&record, approver, &answer).await.map_err(unavailable)? {
                return Err(DecideError::NotPending(id.to_owned()));
            }
            return Ok(request);
        }
        let mut state = self.state.lock().expect("approval desk lock");
        let waiting =
            state.pending.get(id).ok_or_else(|| DecideError::NotPending(id.to_owned()))?;
        if waiting.request.separate_duties && is_caller(approver, &waiting.request.caller_principal)
        {
            return Err(DecideError::OwnCall { approver: approver.to_owned() });
        }
        let waiting = state.pending.remove(id).expect("it was just found");
        let request = waiting.request.clone();
        let settled = Settled::Decided { by: approver.to_owned(), answer };
        if waiting.answer.send(settled).is_err() {
            // The caller went away just now; there is nothing left to decide.
            return Err(DecideError::NotPending(id.to_owned()));
        }
        Ok(request)
    }

    /// Who approved this very call for this caller earlier, if that still holds; a grant the
    /// caller gave itself counts only when `own` allows it.
    pub(super) async fn remembered(
        &self,
        caller: &CallerKey,
        digest: &str,
        own: bool,
    ) -> Option<String> {
        if let Some(shared) = &self.shared {
            return match shared.remembered(caller, digest).await {
                Ok(grant) => grant.filter(|(_, mine)| own || !mine).map(|(by, _)| by),
                Err(error) => {
                    // The call is asked about again, as when the grant has run out.
                    tracing::warn!(
                        target: "toolgate::approval",
                        "cannot read remembered approvals: {}",
                        toolgate_core::ErrorChain(&error).to_string()
                    );
                    None
                }
            };
        }
        let mut state = self.state.lock().expect("approval desk lock");
        let now = Instant::now();
        state.remembered.retain(|_, r| r.until > now);
        state
            .remembered
            .get(&(caller.clone(), digest.to_owned()))
            .filter(|r| own || !r.own)
            .map(|r| r.by.clone())
    }

    #[cfg(test)]
    pub(super) fn remembered_count(&self) -> usize {
        self.state.lock().expect("approval desk lock").remembered.len()
    }

    pub(super) async fn remember(
        &self,
        caller: &CallerKey,
        digest: &str,
        by: &str,
        own: bool,
        duration: Duration,
    ) {
        if let Some(shared) = &self.shared {
            if let Err(error) = shared.remember(caller, digest, by, own, duration).await {
                tracing::warn!(
                    target: "toolgate::approval",
                    "cannot remember an approval (the call will be asked about again): {}",
                    toolgate_core::ErrorChain(&error).to_string()
                );
            }
            return;
        }
        let mut state = self.state.lock().expect("approval desk lock");
        let now = Instant::now();
        let until = now + duration;
        if state.remembered.len() >= MOST_REMEMBERED {
            state.remembered.retain(|_, r| r.until > now);
        }
        if state.remembered.len() >= MOST_REMEMBERED {
            let soonest =
                state.remembered.iter().min_by_key(|(_, r)| r.until).map(|(k, _)| k.clone());
            if let Some(soonest) = soonest {
                state.remembered.remove(&soonest);
            }
        }
        state.remembered.insert(
            (caller.clone(), digest.to_owned()),
            Remembered { until, by: by.to_owned(), own },
        );
    }

    /// Puts `request` on the desk, calls `notice` with its id, and waits for a decision until
    /// its deadline. `caller`, when it is one caller, finds the same call it held earlier on a
    /// replica that is gone (with shared state).
    pub(super) async fn hold(
        &self,
        request: PendingApproval,
        caller: Option<&CallerKey>,
        notice: impl FnOnce(&str),
    ) -> Settled {
        if let Some(shared) = &self.shared {
            return self.hold_shared(shared, request, caller, notice).await;
        }
        let (answer, decided) = oneshot::channel();
        let deadline = request.deadline;
        let id = {
            let mut state = self.state.lock().expect("approval desk lock");
            state.next += 1;
            let id = format!("a{}", state.next);
            match Self::put_on_desk(&mut state, &id, request, answer) {
                Ok(()) => id,
                Err(full) => return full,
            }
        };
        notice(&id);
        let _off = OffTheDesk { desk: self, id: &id };
        match tokio::time::timeout_at(deadline, decided).await {
            Ok(Ok(settled)) => settled,
            Ok(Err(_)) | Err(_) => Settled::Expired,
        }
    }

    /// Lists `request` as held here under `id`, unless the desk is full (then the ruling).
    fn put_on_desk(
        state: &mut DeskState,
        id: &str,
        mut request: PendingApproval,
        answer: oneshot::Sender<Settled>,
    ) -> Result<(), Settled> {
        if state.pending.len() >= MOST_HELD {
            let reason = format!(
                "{MOST_HELD} calls are already waiting for approval; try again when fewer are"
            );
            return Err(Settled::Decided {
                by: "toolgate".to_owned(),
                answer: Ruling::Deny { reason: Some(reason) },
            });
        }
        request.id = id.to_owned();
        state.pending.insert(id.to_owned(), Waiting { request, answer });
        Ok(())
    }

    /// [`hold`](Self::hold) with the held call in the shared state, decided on any replica.
    async fn hold_shared(
        &self,
        shared: &SharedDesk,
        request: PendingApproval,
        caller: Option<&CallerKey>,
        notice: impl FnOnce(&str),
    ) -> Settled {
        let refused = |error: toolgate_state::StateError| Settled::Decided {
            by: "toolgate".to_owned(),
            answer: Ruling::Deny {
                reason: Some(format!(
                    "it cannot be held for approval now: {}",
                    toolgate_core::ErrorChain(&error)
                )),
            },
        };
        let call = caller.map(|caller| shared::call_key("call", caller, &request.digest));
        // The same call by the same caller held before (its replica may be gone): its decision
        // if it has one, else wait on it rather than hold it twice.
        let mut earlier = None;
        if let Some(call) = &call {
            match shared.earlier(call).await {
                Ok(Some(id)) => match shared.decision(&id).await {
                    Ok(Some(settled)) => {
                        shared.forget(&id, Some(call)).await;
                        return settled;
                    }
                    Ok(None) => earlier = shared.find(&id).await.map_err(refused).ok().flatten(),
                    Err(error) => return refused(error),
                },
                Ok(None) => {}
                Err(error) => return refused(error),
            }
        }
        let (answer, _unused) = oneshot::channel();
        let (id, deadline) = match &earlier {
            Some(record) => (record.id.clone(), record_request(record).deadline),
            None => {
                (format!("a{}", &uuid::Uuid::new_v4().simple().to_string()[..20]), request.deadline)
            }
        };
        let record = shared::HeldRecord::new(&id, &request);
        {
            let mut state = self.state.lock().expect("approval desk lock");
            if let Err(full) = Self::put_on_desk(&mut state, &id, request, answer) {
                return full;
            }
        }
        let _off = OffTheDesk { desk: self, id: &id };
        let _forget = ForgetShared { shared: shared.clone(), id: id.clone(), call: call.clone() };
        if earlier.is_none()
            && let Err(error) = shared.put(&record, call.as_deref()).await
        {
            return refused(error);
        }
        notice(&id);
        let mut wake = shared.state.subscribe(shared::DECIDED).await.ok();
        loop {
            match shared.decision(&id).await {
                Ok(Some(settled)) => return settled,
                Ok(None) => {}
                Err(error) => tracing::debug!(%id, "cannot look for a decision: {error}"),
            }
            let now = Instant::now();
            if now >= deadline {
                return Settled::Expired;
            }
            let woken = async {
                match wake.as_mut() {
                    Some(subscription) => subscription.recv().await.is_some(),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = tokio::time::sleep_until((now + shared::POLL).min(deadline)) => {}
                open = woken => if !open { wake = None },
            }
        }
    }

    pub(super) fn publish(&self, event: AuditEvent) {
        self.events.publish(event);
    }
}

/// Removes a call from the desk when its wait ends.
struct OffTheDesk<'a> {
    desk: &'a ApprovalDesk,
    id: &'a str,
}

/// Takes a held call out of the shared state when its wait ends, whichever way (a call whose
/// client went away included).
struct ForgetShared {
    shared: SharedDesk,
    id: String,
    call: Option<String>,
}

impl Drop for ForgetShared {
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (shared, id, call) =
            (self.shared.clone(), std::mem::take(&mut self.id), self.call.take());
        runtime.spawn(async move { shared.forget(&id, call.as_deref()).await });
    }
}

/// A held call as the shared state keeps it, as approvers see it.
fn record_request(record: &shared::HeldRecord) -> PendingApproval {
    record.clone().into_pending()
}

impl Drop for OffTheDesk<'_> {
    fn drop(&mut self) {
        if let Ok(mut state) = self.desk.state.lock() {
            state.pending.remove(self.id);
        }
    }
}
