//! Sign-ins a gateway hosts for the people it serves: each caller of a server that signs in
//! per caller gets a link to its authorization server, whose redirect comes back to the
//! gateway's own `/oauth/callback`, not to a loopback port. The desk keeps each sign-in under
//! way by its `state` until its redirect arrives, for ten minutes at most and 256 at once (the
//! oldest is dropped first), so that callers cannot make it grow.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::LoginError;
use crate::receiver::Callback;
use crate::signin::{Pending, finish};

/// How long a sign-in may take from its link to its redirect.
pub const PENDING_FOR: Duration = Duration::from_secs(600);
/// Sign-ins under way at once.
pub const MAX_PENDING: usize = 256;

/// Sign-ins under way, by `state`.
#[derive(Debug, Default)]
pub struct Desk {
    pending: Mutex<HashMap<String, (Pending, Instant)>>,
}

/// A sign-in the desk finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The server signed in to.
    pub server: String,
    /// The vault entry its tokens went to.
    pub entry: String,
    /// Who signed in, as far as the tokens say.
    pub subject: Option<String>,
}

impl Desk {
    /// An empty desk.
    pub fn new() -> Desk {
        Desk::default()
    }

    /// Keeps `pending` until its redirect comes; returns the link to give the person.
    pub fn hold(&self, pending: Pending) -> String {
        let url = pending.url().to_owned();
        let now = Instant::now();
        let mut held = self.pending.lock().expect("desk lock");
        held.retain(|_, (_, since)| now.duration_since(*since) < PENDING_FOR);
        while held.len() >= MAX_PENDING {
            let oldest = held.iter().min_by_key(|(_, (_, since))| *since).map(|(k, _)| k.clone());
            match oldest {
                Some(state) => held.remove(&state),
                None => break,
            };
        }
        held.insert(pending.state().to_owned(), (pending, now));
        url
    }

    /// The link of a sign-in to vault entry `entry` still under way, if there is one: a caller
    /// who calls again before finishing gets the same link, and the authorization server is
    /// not asked again.
    pub fn link_for(&self, entry: &str) -> Option<String> {
        let held = self.pending.lock().expect("desk lock");
        held.values()
            .filter(|(pending, since)| pending.entry() == entry && since.elapsed() < PENDING_FOR)
            .max_by_key(|(_, since)| *since)
            .map(|(pending, _)| pending.url().to_owned())
    }

    /// How many sign-ins are under way.
    pub fn len(&self) -> usize {
        self.pending.lock().expect("desk lock").len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Finishes the sign-in a redirect's `query` belongs to (by its `state`).
    pub async fn complete(&self, query: &[(String, String)]) -> Result<Finished, LoginError> {
        let get = |key: &str| query.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        let state = get("state").unwrap_or_default();
        let taken = self.pending.lock().expect("desk lock").remove(&state);
        let Some((pending, since)) = taken.filter(|(_, since)| since.elapsed() < PENDING_FOR)
        else {
            return Err(LoginError::Refused {
                error: "unknown_sign_in".into(),
                description: "no sign-in under way has this state (it ended, expired, or was \
                              never started here)"
                    .into(),
            });
        };
        let _ = since;
        if let Some(error) = get("error") {
            return Err(LoginError::Refused {
                error,
                description: get("error_description").unwrap_or_default(),
            });
        }
        let code = get("code").ok_or_else(|| LoginError::Refused {
            error: "invalid_request".into(),
            description: "the redirect carried neither a code nor an error".into(),
        })?;
        let server = pending.server().to_owned();
        let entry = pending.entry().to_owned();
        let callback = Callback { code, state, iss: get("iss") };
        let signed_in = finish(pending, &callback).await?;
        Ok(Finished { server, entry, subject: signed_in.subject })
    }
}
