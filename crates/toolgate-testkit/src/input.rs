//! Asking the client for input (sampling, elicitation, roots) in either protocol era.
//!
//! - Handshake era (2025-11-25 and older): a server→client request through the session's
//!   peer, answered while the tool call waits.
//! - 2026-07-28: rmcp refuses server→client requests, so the tool answers with an MRTR
//!   (SEP-2322) `InputRequiredResult` carrying the request under one key plus a sealed
//!   `requestState`; the client retries the call with `inputResponses` and the state, and the
//!   tool finishes from the answer exactly as the handshake path would.
//!
//! `requestState` comes back from the client, so it is untrusted: [`StateSeal`] signs it
//! and binds it to the tool, the input key and a fingerprint of the request asked, with an
//! expiry. The tag is two SipHash values keyed by std's per-process random
//! [`RandomState`](std::hash::RandomState): enough integrity for a fixture (a client cannot
//! forge or move a state between tools or questions), not a production MAC. (rmcp's own HMAC
//! codec sits behind its `request-state` feature, which would add dependencies to the
//! workspace.)

// Sampling is SEP-2577-deprecated in rmcp, and the conformance suite still exercises it.
#![allow(deprecated)]

use std::hash::{BuildHasher as _, RandomState};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::model as mcp;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::hub::FixtureHub;

/// How long a client may take to answer before its `requestState` expires.
const STATE_TTL: Duration = Duration::from_secs(600);
/// The `inputRequests` key of the one request each fixture tool makes.
pub(crate) const SAMPLING_KEY: &str = "sampling";
/// See [`SAMPLING_KEY`].
pub(crate) const ELICITATION_KEY: &str = "elicitation";
/// See [`SAMPLING_KEY`].
pub(crate) const ROOTS_KEY: &str = "roots";

/// Whether this request speaks 2026-07-28 or later (per-request `_meta`, else the handshake).
pub(crate) fn is_modern(cx: &RequestContext<RoleServer>) -> bool {
    cx.protocol_version().is_some_and(|version| version >= mcp::ProtocolVersion::V_2026_07_28)
}

/// What a retried `tools/call` brought back (both absent on a first call).
#[derive(Debug, Default)]
pub(crate) struct Retry {
    pub(crate) state: Option<String>,
    pub(crate) responses: Option<mcp::InputResponses>,
}

/// The outcome of asking the client for something.
#[derive(Debug)]
pub(crate) enum Asked<T> {
    /// The client answered.
    Answered(T),
    /// 2026-07-28: return this to the client and wait for its retry.
    InputRequired(mcp::InputRequiredResult),
    /// The request failed; the message is for an `isError` result.
    Failed(String),
}

/// `sampling/createMessage`, as a peer request or an MRTR round.
pub(crate) async fn sample(
    hub: &FixtureHub,
    cx: &RequestContext<RoleServer>,
    retry: Retry,
    tool: &str,
    params: mcp::CreateMessageRequestParams,
) -> Result<Asked<mcp::CreateMessageResult>, McpError> {
    if !is_modern(cx) {
        return Ok(match cx.peer.create_message(params).await {
            Ok(result) => Asked::Answered(result),
            Err(error) => Asked::Failed(format!("sampling failed: {error}")),
        });
    }
    let request = mcp::InputRequest::CreateMessage(mcp::CreateMessageRequest::new(params));
    ask(hub.seal(), retry, tool, SAMPLING_KEY, request)
}

/// `elicitation/create`, as a peer request or an MRTR round.
pub(crate) async fn elicit(
    hub: &FixtureHub,
    cx: &RequestContext<RoleServer>,
    retry: Retry,
    tool: &str,
    params: mcp::ElicitRequestParams,
) -> Result<Asked<mcp::ElicitResult>, McpError> {
    if !is_modern(cx) {
        return Ok(match cx.peer.create_elicitation(params).await {
            Ok(result) => Asked::Answered(result),
            Err(error) => Asked::Failed(format!("elicitation failed: {error}")),
        });
    }
    let request = mcp::InputRequest::Elicitation(mcp::ElicitRequest::new(params));
    ask(hub.seal(), retry, tool, ELICITATION_KEY, request)
}

/// `roots/list`, as a peer request or an MRTR round.
pub(crate) async fn roots(
    hub: &FixtureHub,
    cx: &RequestContext<RoleServer>,
    retry: Retry,
    tool: &str,
) -> Result<Asked<mcp::ListRootsResult>, McpError> {
    if !is_modern(cx) {
        return Ok(match cx.peer.list_roots().await {
            Ok(result) => Asked::Answered(result),
            Err(error) => Asked::Failed(format!("roots/list failed: {error}")),
        });
    }
    let request = mcp::InputRequest::ListRoots(mcp::ListRootsRequest::default());
    ask(hub.seal(), retry, tool, ROOTS_KEY, request)
}

/// Several questions at once, each under its own key: on a handshake-era connection each
/// becomes a server→client request, all sent at once and the answers awaited together (as the
/// official SDKs' shims serve a handler written in the 2026-07-28 style to an older client),
/// keyed like the questions; on a 2026-07-28 one they go out together as one
/// `InputRequiredResult`, and the retry is answered once it carries a well-formed response
/// under every key (responses under other keys are ignored; a missing key asks again).
///
/// With `sealed`, the round carries a `requestState` bound to `round` (the tool, and where a
/// tool asks in several rounds, which round) and the questions; a retry must bring it back
/// intact. Without, the tool keeps no state and the responses alone decide.
pub(crate) async fn ask_many(
    hub: &FixtureHub,
    cx: &RequestContext<RoleServer>,
    retry: Retry,
    round: &str,
    requests: mcp::InputRequests,
    sealed: bool,
) -> Result<Asked<mcp::InputResponses>, McpError> {
    if !is_modern(cx) {
        let peer = &cx.peer;
        let asking = requests.into_iter().map(|(key, request)| async move {
            let answer = match request {
                mcp::InputRequest::CreateMessage(request) => {
                    peer.create_message(request.params).await.map(serde_json::to_value)
                }
                mcp::InputRequest::Elicitation(request) => {
                    peer.create_elicitation(request.params).await.map(serde_json::to_value)
                }
                mcp::InputRequest::ListRoots(_) => {
                    peer.list_roots().await.map(serde_json::to_value)
                }
                other => return (key, Err(format!("cannot ask {other:?} in a session"))),
            };
            (key, Ok(answer))
        });
        let mut answers = mcp::InputResponses::new();
        for (key, answer) in futures::future::join_all(asking).await {
            let answer = match answer {
                Ok(answer) => answer,
                Err(why) => return Ok(Asked::Failed(format!("{key}: {why}"))),
            };
            match answer {
                Ok(Ok(value)) => {
                    answers.insert(key, value);
                }
                Ok(Err(error)) => return Ok(Asked::Failed(format!("{key}: {error}"))),
                Err(error) => return Ok(Asked::Failed(format!("{key} failed: {error}"))),
            }
        }
        return Ok(Asked::Answered(answers));
    }
    let seal = hub.seal();
    let keys: Vec<&str> = requests.keys().map(String::as_str).collect();
    let expected =
        Round { tool: round.to_owned(), key: keys.join(","), request: seal.fingerprint(&requests) };
    if sealed {
        match &retry.state {
            Some(state) => {
                let opened = seal.open(state).map_err(|reason| {
                    McpError::invalid_params(format!("requestState rejected: {reason}"), None)
                })?;
                if opened != expected {
                    return Err(McpError::invalid_params(
                        "requestState rejected: it belongs to another round or tool call",
                        None,
                    ));
                }
            }
            None if retry.responses.is_some() => {
                return Err(McpError::invalid_params(
                    "inputResponses without a requestState",
                    None,
                ));
            }
            None => {}
        }
    }
    if let Some(mut responses) = retry.responses {
        let mut answers = mcp::InputResponses::new();
        for key in requests.keys() {
            if let Some(answer) = responses.remove(key) {
                if !answer.is_object() {
                    return Err(McpError::invalid_params(
                        format!("inputResponses.{key} must be an object"),
                        None,
                    ));
                }
                answers.insert(key.clone(), answer);
            }
        }
        if answers.len() == requests.len() {
            return Ok(Asked::Answered(answers));
        }
    }
    let state = sealed.then(|| seal.seal(&expected));
    Ok(Asked::InputRequired(mcp::InputRequiredResult::new(Some(requests), state)))
}

/// One MRTR round: the answer to `request` if the retry carries it under `key` with a state
/// this server sealed for the same question, else (first call, or no answer yet) the
/// question itself.
fn ask<T: DeserializeOwned>(
    seal: &StateSeal,
    retry: Retry,
    tool: &str,
    key: &str,
    request: mcp::InputRequest,
) -> Result<Asked<T>, McpError> {
    let expected =
        Round { tool: tool.to_owned(), key: key.to_owned(), request: seal.fingerprint(&request) };
    let answer = match (retry.state, retry.responses) {
        (None, None) => None,
        (None, Some(_)) => {
            return Err(McpError::invalid_params("inputResponses without a requestState", None));
        }
        (Some(state), responses) => {
            let round = seal.open(&state).map_err(|reason| {
                McpError::invalid_params(format!("requestState rejected: {reason}"), None)
            })?;
            if round != expected {
                return Err(McpError::invalid_params(
                    "requestState rejected: it belongs to another tool call",
                    None,
                ));
            }
            responses.and_then(|mut responses| responses.remove(key))
        }
    };
    if let Some(answer) = answer {
        return serde_json::from_value(answer).map(Asked::Answered).map_err(|error| {
            McpError::invalid_params(format!("inputResponses.{key} is malformed: {error}"), None)
        });
    }
    let state = seal.seal(&expected);
    let requests = mcp::InputRequests::from([(key.to_owned(), request)]);
    Ok(Asked::InputRequired(mcp::InputRequiredResult::new(Some(requests), Some(state))))
}

/// What a sealed `requestState` vouches for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Round {
    tool: String,
    key: String,
    /// [`StateSeal::fingerprint`] of the request asked.
    request: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    #[serde(flatten)]
    round: Round,
    /// Seconds since the Unix epoch after which the state is refused.
    expires: u64,
}

/// Signs and checks `requestState` values (see the module docs for how strong that is).
#[derive(Debug)]
pub(crate) struct StateSeal {
    keys: [RandomState; 2],
}

impl StateSeal {
    pub(crate) fn new() -> Self {
        Self { keys: [RandomState::new(), RandomState::new()] }
    }

    fn tag(&self, payload: &str) -> String {
        let [first, second] = &self.keys;
        format!("{:016x}{:016x}", first.hash_one(payload), second.hash_one(payload))
    }

    /// A keyed digest of `value`'s JSON.
    fn fingerprint(&self, value: &impl Serialize) -> String {
        self.tag(&serde_json::to_string(value).unwrap_or_default())
    }

    /// `<tag>.<payload JSON>`, valid for [`STATE_TTL`].
    fn seal(&self, round: &Round) -> String {
        let expires = (SystemTime::now() + STATE_TTL)
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let payload = Payload { round: round.clone(), expires };
        let payload = serde_json::to_string(&payload).unwrap_or_default();
        format!("{}.{payload}", self.tag(&payload))
    }

    /// The round a state was sealed for, if it is intact and unexpired.
    fn open(&self, state: &str) -> Result<Round, &'static str> {
        let (tag, payload) = state.split_once('.').ok_or("malformed")?;
        if tag != self.tag(payload) {
            return Err("bad signature");
        }
        let payload: Payload = serde_json::from_str(payload).map_err(|_| "malformed")?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
        if payload.expires < now {
            return Err("expired");
        }
        Ok(payload.round)
    }
}

#[cfg(test)]
mod tests;
