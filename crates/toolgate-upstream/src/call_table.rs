//! Requests in flight on one upstream, by the ids and progress tokens the upstream sees, so
//! that what the upstream sends about a request (progress, questions) reaches its caller.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use toolgate_core::mcp;

use crate::call::Caller;
use crate::progress::ProgressLedger;

/// Requests in flight, by the ids and progress tokens the upstream sees.
#[derive(Default)]
pub(crate) struct CallTable {
    by_request: HashMap<mcp::RequestId, Option<Arc<dyn Caller>>>,
    by_token: HashMap<mcp::ProgressToken, (Arc<dyn Caller>, Arc<ProgressLedger>)>,
}

impl CallTable {
    pub(crate) fn by_request(&self, id: &mcp::RequestId) -> Option<Arc<dyn Caller>> {
        self.by_request.get(id).cloned().flatten()
    }

    /// The caller whose call has this progress token, and that call's progress ledger.
    pub(crate) fn by_token(
        &self,
        token: &mcp::ProgressToken,
    ) -> Option<(Arc<dyn Caller>, Arc<ProgressLedger>)> {
        self.by_token.get(token).cloned()
    }

    pub(crate) fn ledger(&self, token: &mcp::ProgressToken) -> Option<Arc<ProgressLedger>> {
        self.by_token.get(token).map(|(_, ledger)| ledger.clone())
    }

    /// The caller of the only request in flight that has one, if exactly one has (toolgate's
    /// own requests, such as a re-listing, have none and do not make it ambiguous).
    pub(crate) fn only_caller(&self) -> Option<Arc<dyn Caller>> {
        let mut callers = self.by_request.values().flatten();
        match (callers.next(), callers.next()) {
            (Some(only), None) => Some(only.clone()),
            _ => None,
        }
    }

    /// The ids of every request in flight.
    pub(crate) fn request_ids(&self) -> Vec<mcp::RequestId> {
        self.by_request.keys().cloned().collect()
    }

    fn insert(
        &mut self,
        id: mcp::RequestId,
        token: mcp::ProgressToken,
        caller: Option<Arc<dyn Caller>>,
        ledger: Option<Arc<ProgressLedger>>,
    ) {
        if let (Some(caller), Some(ledger)) = (&caller, ledger) {
            self.by_token.insert(token, (caller.clone(), ledger));
        }
        self.by_request.insert(id, caller);
    }
}

/// The call table of one upstream, shared by its requests and its connection's handler.
#[derive(Default)]
pub(crate) struct Calls(Mutex<CallTable>);

impl Calls {
    pub(crate) fn lock(&self) -> MutexGuard<'_, CallTable> {
        self.0.lock().expect("call table lock must not be poisoned")
    }

    /// Enters a request; it stays in the table until the returned guard is dropped, however
    /// the request ends.
    pub(crate) fn enter(
        &self,
        id: mcp::RequestId,
        token: mcp::ProgressToken,
        caller: Option<Arc<dyn Caller>>,
        ledger: Option<Arc<ProgressLedger>>,
    ) -> InFlight<'_> {
        self.lock().insert(id.clone(), token.clone(), caller, ledger);
        InFlight { calls: self, id, token }
    }
}

/// Removes a request from the call table when it ends, however it ends.
pub(crate) struct InFlight<'a> {
    calls: &'a Calls,
    id: mcp::RequestId,
    token: mcp::ProgressToken,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut table = self.calls.lock();
        table.by_request.remove(&self.id);
        table.by_token.remove(&self.token);
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

    #[test]
    fn the_only_caller_is_found_only_when_unambiguous() {
        let calls = Calls::default();
        let token = |n: i64| mcp::ProgressToken(id(n));
        assert!(calls.lock().only_caller().is_none());
        let _one = calls.enter(id(1), token(1), Some(Arc::new(Nobody)), None);
        assert!(calls.lock().only_caller().is_some());
        let _own = calls.enter(id(2), token(2), None, None);
        assert!(
            calls.lock().only_caller().is_some(),
            "toolgate's own requests (a re-listing) have no caller and do not count"
        );
        let three = calls.enter(id(3), token(3), Some(Arc::new(Nobody)), None);
        assert!(calls.lock().only_caller().is_none(), "two calls in flight: nobody can be sure");
        drop(three);
        assert!(calls.lock().only_caller().is_some(), "a request that ended leaves the table");
    }

    #[test]
    fn a_request_is_found_by_its_token_until_it_ends() {
        let calls = Calls::default();
        let token = mcp::ProgressToken(id(7));
        let ledger = Arc::new(ProgressLedger::default());
        let entered = calls.enter(id(7), token.clone(), Some(Arc::new(Nobody)), Some(ledger));
        assert!(calls.lock().by_token(&token).is_some());
        assert!(calls.lock().by_request(&id(7)).is_some());
        drop(entered);
        assert!(calls.lock().by_token(&token).is_none());
        assert!(calls.lock().request_ids().is_empty());
    }
}
