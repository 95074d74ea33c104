//! The people at the clients of script tool calls now running: a script tool's own calls
//! through the gateway find the person who called the script tool, so an `approval` that asks
//! the client asks that person.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use toolgate_intercept::Elicitor;

/// The people at the clients of script tool calls now running, by a random handle the
/// gateway puts in the call's `_meta` (`Origin::asker`): the calls a script tool makes find
/// them there, so an `approval` that asks the client asks the person who called the script
/// tool. A handle is lent for the call and taken back when it ends.
#[derive(Default)]
pub(crate) struct Askers(Mutex<HashMap<String, Arc<dyn Elicitor>>>);

impl std::fmt::Debug for Askers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Askers").finish_non_exhaustive()
    }
}

impl Askers {
    /// Lends `elicitor` under a new handle until the guard is dropped.
    pub(crate) fn lend(&self, elicitor: Arc<dyn Elicitor>) -> Lent<'_> {
        let handle = uuid::Uuid::new_v4().to_string();
        self.0.lock().expect("askers lock").insert(handle.clone(), elicitor);
        Lent { askers: self, handle }
    }

    pub(crate) fn find(&self, handle: &str) -> Option<Arc<dyn Elicitor>> {
        self.0.lock().expect("askers lock").get(handle).cloned()
    }
}

/// A handle lent by [`Askers::lend`]; taken back when dropped.
pub(crate) struct Lent<'a> {
    askers: &'a Askers,
    pub(crate) handle: String,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        self.askers.0.lock().expect("askers lock").remove(&self.handle);
    }
}
