//! Requests in flight on one upstream, by the ids and progress tokens the upstream sees, so
//! that what the upstream sends about a request (progress, questions) reaches its caller.
//!
//! rmcp picks a request's id and progress token as it sends it, and a quick server can answer
//! with progress or a question before `send_request` has even returned. So a request is
//! entered from the transport, as it is written: it carries a [`Registration`] in its
//! (never serialized) extensions, and the transport enters it under the id and token it is
//! about to write (see [`crate::progress::ProgressCounting`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use toolgate_core::mcp;

use crate::call::Caller;
use crate::progress_ledger::ProgressLedger;
use crate::raw::RawSlot;

/// Where what an upstream sends about one request goes: the request's caller, and the ledger
/// that makes its result wait until what was read before it has been forwarded.
#[derive(Clone)]
pub(crate) struct Route {
    pub(crate) caller: Arc<dyn Caller>,
    pub(crate) ledger: Option<Arc<ProgressLedger>>,
}

/// Requests in flight, by the ids and progress tokens the upstream sees.
#[derive(Default)]
pub(crate) struct CallTable {
    by_request: HashMap<mcp::RequestId, Option<Route>>,
    by_token: HashMap<mcp::ProgressToken, (Arc<dyn Caller>, Arc<ProgressLedger>)>,
    /// The requests that want their result as the upstream wrote it (see [`crate::raw`]).
    raw: HashMap<mcp::RequestId, Arc<RawSlot>>,
}

impl CallTable {
    pub(crate) fn by_request(&self, id: &mcp::RequestId) -> Option<Arc<dyn Caller>> {
        self.route(id).map(|route| route.caller)
    }

    /// Where what the upstream sends about request `id` goes, while it is in flight.
    pub(crate) fn route(&self, id: &mcp::RequestId) -> Option<Route> {
        self.by_request.get(id).cloned().flatten()
    }

    /// Whether request `id` is in flight.
    pub(crate) fn in_flight(&self, id: &mcp::RequestId) -> bool {
        self.by_request.contains_key(id)
    }

    /// The caller whose call has this progress token, and that call's progress ledger.
    pub(crate) fn by_token(
        &self,
        token: &mcp::ProgressToken,
    ) -> Option<(Arc<dyn Caller>, Arc<ProgressLedger>)> {
        self.by_token.get(token).cloned()
    }

    /// Where the raw result of request `id` goes, when it asked for one.
    pub(crate) fn raw_slot(&self, id: &mcp::RequestId) -> Option<Arc<RawSlot>> {
        self.raw.get(id).cloned()
    }

    /// Whether any request in flight wants its result raw.
    pub(crate) fn wants_raw(&self) -> bool {
        !self.raw.is_empty()
    }

    pub(crate) fn ledger(&self, token: &mcp::ProgressToken) -> Option<Arc<ProgressLedger>> {
        self.by_token.get(token).map(|(_, ledger)| ledger.clone())
    }

    /// The caller of the only request in flight that has one, if exactly one has (toolgate's
    /// own requests, such as a re-listing, have none and do not make it ambiguous); or, with
    /// several, any of them when they all name the same [`Caller::party`].
    pub(crate) fn only_caller(&self) -> Option<Arc<dyn Caller>> {
        self.only_route().map(|route| route.caller)
    }

    /// The route of the request [`only_caller`](Self::only_caller) finds.
    pub(crate) fn only_route(&self) -> Option<Route> {
        self.only_route_by(|caller| caller.party())
    }

    /// The route of the only request in flight with a caller; else of the only one of them
    /// that is not [holding](Caller::holding) (a call whose questions wait with its client
    /// asks and logs nothing until it has their answers, so what arrives meanwhile is not
    /// its); else of any of them when they all have the same `key` (and it is not `None`).
    pub(crate) fn only_route_by(
        &self,
        key: impl Fn(&dyn Caller) -> Option<String>,
    ) -> Option<Route> {
        let mut routes = self.by_request.values().flatten();
        let first = routes.next()?;
        let Some(rest) = routes.next() else { return Some(first.clone()) };
        let mut active = self.routes().filter(|route| !route.caller.holding());
        if let (Some(only), None) = (active.next(), active.next()) {
            return Some(only.clone());
        }
        let first_key = key(first.caller.as_ref())?;
        let same = std::iter::once(rest)
            .chain(routes)
            .all(|r| key(r.caller.as_ref()).as_ref() == Some(&first_key));
        same.then(|| first.clone())
    }

    /// The routes of the requests in flight that have a caller.
    fn routes(&self) -> impl Iterator<Item = &Route> {
        self.by_request.values().flatten()
    }

    /// How many requests in flight have a caller (toolgate's own have none).
    pub(crate) fn callers(&self) -> usize {
        self.routes().count()
    }

    /// Whether any request in flight has a caller.
    pub(crate) fn has_callers(&self) -> bool {
        self.routes().next().is_some()
    }

    /// The ids of every request in flight.
    pub(crate) fn request_ids(&self) -> Vec<mcp::RequestId> {
        self.by_request.keys().cloned().collect()
    }

    fn insert(
        &mut self,
        id: mcp::RequestId,
        token: mcp::ProgressToken,
        registration: &Registration,
    ) {
        if let (Some(caller), Some(ledger)) = (&registration.caller, &registration.ledger) {
            self.by_token.insert(token, (caller.clone(), ledger.clone()));
        }
        if let Some(raw) = &registration.raw {
            self.raw.insert(id.clone(), raw.clone());
        }
        let route = registration
            .caller
            .clone()
            .map(|caller| Route { caller, ledger: registration.ledger.clone() });
        self.by_request.insert(id, route);
    }

    fn remove(&mut self, id: &mcp::RequestId, token: &mcp::ProgressToken) {
        self.by_request.remove(id);
        self.by_token.remove(token);
        self.raw.remove(id);
    }
}

/// The call table of one upstream, shared by its requests and its connection's handler.
#[derive(Default)]
pub(crate) struct Calls(Mutex<CallTable>);

impl Calls {
    pub(crate) fn lock(&self) -> MutexGuard<'_, CallTable> {
        self.0.lock().expect("call table lock must not be poisoned")
    }

    /// A request about to be sent on behalf of `caller`: the registration goes into the
    /// request's extensions, and the transport enters it as it writes it
    /// ([`enter`](Self::enter)). It leaves the table when the returned guard is dropped, however
    /// the request ends (or if it was never written).
    pub(crate) fn prepare(
        &self,
        caller: Option<Arc<dyn Caller>>,
        ledger: Option<Arc<ProgressLedger>>,
        raw: Option<Arc<RawSlot>>,
    ) -> (Arc<Registration>, InFlight<'_>) {
        let registration =
            Arc::new(Registration { caller, ledger, raw, entered: Mutex::default() });
        (registration.clone(), InFlight { calls: self, registration })
    }

    /// Enters a request under the id and progress token it is written with.
    pub(crate) fn enter(
        &self,
        id: mcp::RequestId,
        token: mcp::ProgressToken,
        registration: &Registration,
    ) {
        let mut table = self.lock();
        let mut entered = registration.entered.lock().expect("registration lock");
        if let Some((id, token)) = entered.take() {
            // Written before (a transport that writes again): the new id replaces it.
            table.remove(&id, &token);
        }
        table.insert(id.clone(), token.clone(), registration);
        *entered = Some((id, token));
    }
}

/// Who a request is sent for, carried in its extensions to the transport, which enters it in
/// the call table as it writes it.
pub(crate) struct Registration {
    caller: Option<Arc<dyn Caller>>,
    ledger: Option<Arc<ProgressLedger>>,
    /// Where the transport leaves the result as written, when the request asked for that.
    raw: Option<Arc<RawSlot>>,
    /// The id and token it was entered under, once written.
    entered: Mutex<Option<(mcp::RequestId, mcp::ProgressToken)>>,
}

/// Removes a request from the call table when it ends, however it ends.
pub(crate) struct InFlight<'a> {
    calls: &'a Calls,
    registration: Arc<Registration>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut table = self.calls.lock();
        let entered = self.registration.entered.lock().expect("registration lock").take();
        if let Some((id, token)) = entered {
            table.remove(&id, &token);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nobody;
    impl Caller for Nobody {}

    fn id(n: i64) -> mcp::RequestId {
        mcp::NumberOrString::Number(n)
    }

    fn token(n: i64) -> mcp::ProgressToken {
        mcp::ProgressToken(id(n))
    }

    /// A request sent for `caller` and written as `n`.
    fn written(calls: &Calls, n: i64, caller: Option<Arc<dyn Caller>>) -> InFlight<'_> {
        let (registration, in_flight) = calls.prepare(caller, None, None);
        calls.enter(id(n), token(n), &registration);
        in_flight
    }

    #[test]
    fn the_only_caller_is_found_only_when_unambiguous() {
        let calls = Calls::default();
        assert!(calls.lock().only_caller().is_none());
        let _one = written(&calls, 1, Some(Arc::new(Nobody)));
        assert!(calls.lock().only_caller().is_some());
        let _own = written(&calls, 2, None);
        assert!(
            calls.lock().only_caller().is_some(),
            "toolgate's own requests (a re-listing) have no caller and do not count"
        );
        let three = written(&calls, 3, Some(Arc::new(Nobody)));
        assert!(calls.lock().only_caller().is_none(), "two calls in flight: nobody can be sure");
        drop(three);
        assert!(calls.lock().only_caller().is_some(), "a request that ended leaves the table");
    }

    struct Party(&'static str);
    impl Caller for Party {
        fn party(&self) -> Option<String> {
            Some(self.0.to_owned())
        }
    }

    #[test]
    fn calls_of_one_party_share_their_questions_and_others_do_not() {
        let calls = Calls::default();
        let _one = written(&calls, 1, Some(Arc::new(Party("agent:s1"))));
        let _two = written(&calls, 2, Some(Arc::new(Party("agent:s1"))));
        assert!(calls.lock().only_caller().is_some(), "the same party answers either");
        let three = written(&calls, 3, Some(Arc::new(Party("agent:s2"))));
        assert!(calls.lock().only_caller().is_none(), "another party in flight");
        drop(three);
        let _four = written(&calls, 4, Some(Arc::new(Nobody)));
        assert!(calls.lock().only_caller().is_none(), "a caller without a party is nobody's");
    }

    /// A call whose questions wait with its client, as a 2026-07-28 client's call does between
    /// its `input_required` result and the retry.
    struct Holding(Arc<std::sync::atomic::AtomicBool>);
    impl Caller for Holding {
        fn holding(&self) -> bool {
            self.0.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    #[test]
    fn a_call_holding_for_its_clients_answers_leaves_the_question_to_the_one_still_working() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let calls = Calls::default();
        let held = Arc::new(AtomicBool::new(true));
        let _held = written(&calls, 1, Some(Arc::new(Holding(held.clone()))));
        assert!(calls.lock().only_caller().is_some(), "alone, it is the held call's own");
        let working: Arc<dyn Caller> = Arc::new(Nobody);
        let _working = written(&calls, 2, Some(working.clone()));
        let found = calls.lock().only_caller().expect("the call still working asked");
        assert!(Arc::ptr_eq(&found, &working));
        let found = calls.lock().only_route_by(|caller| caller.hearer()).expect("its log, too");
        assert!(Arc::ptr_eq(&found.caller, &working));
        let other = written(&calls, 3, Some(Arc::new(Nobody)));
        assert!(calls.lock().only_caller().is_none(), "two calls working: nobody can be sure");
        drop(other);
        held.store(false, Ordering::SeqCst);
        assert!(calls.lock().only_caller().is_none(), "answered, the held call works again");
        assert_eq!(calls.lock().callers(), 2);
    }

    #[test]
    fn a_request_is_found_by_its_token_from_when_it_is_written_until_it_ends() {
        let calls = Calls::default();
        let ledger = Arc::new(ProgressLedger::default());
        let (registration, in_flight) = calls.prepare(Some(Arc::new(Nobody)), Some(ledger), None);
        assert!(calls.lock().request_ids().is_empty(), "not written yet");
        calls.enter(id(7), token(7), &registration);
        assert!(calls.lock().by_token(&token(7)).is_some());
        assert!(calls.lock().ledger(&token(7)).is_some());
        assert!(calls.lock().by_request(&id(7)).is_some());
        drop(in_flight);
        assert!(calls.lock().by_token(&token(7)).is_none());
        assert!(calls.lock().request_ids().is_empty());
    }

    #[test]
    fn a_request_written_again_is_found_only_under_its_new_id() {
        let calls = Calls::default();
        let (registration, in_flight) = calls.prepare(Some(Arc::new(Nobody)), None, None);
        calls.enter(id(1), token(1), &registration);
        calls.enter(id(2), token(2), &registration);
        assert_eq!(calls.lock().request_ids(), [id(2)]);
        drop(in_flight);
        assert!(calls.lock().request_ids().is_empty());
    }

    #[test]
    fn a_request_never_written_leaves_nothing_behind() {
        let calls = Calls::default();
        let _kept = written(&calls, 1, Some(Arc::new(Nobody)));
        drop(calls.prepare(Some(Arc::new(Nobody)), None, None));
        assert_eq!(calls.lock().request_ids(), [id(1)]);
    }
}
