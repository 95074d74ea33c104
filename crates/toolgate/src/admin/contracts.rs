//! Accepting a tool's contract (`POST /integrity/{tool}/approve`, and the console's pins page
//! through [`approve_tool`]): the one path by which an operator pins a changed or new tool
//! while the gateway runs, and the memory of who approved what in this process.

use std::collections::VecDeque;
use std::sync::Mutex;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use toolgate_audit::Event;
use toolgate_interceptors::integrity::{self, ApproveError};

use super::{Admin, gateway_admin, problem};

/// How many approvals are remembered (the most recent).
const REMEMBERED: usize = 1024;

/// The contracts approved in this process, most recent last: which server's tool, which
/// digest, by whom. The pins page calls a pinned tool whose pin is one of these "approved".
#[derive(Debug, Default)]
pub(crate) struct ApprovedContracts(Mutex<VecDeque<ApprovedContract>>);

/// One approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApprovedContract {
    pub(crate) server: String,
    /// The tool's name on its server.
    pub(crate) original: String,
    pub(crate) digest: String,
    pub(crate) by: String,
}

impl ApprovedContracts {
    fn remember(&self, approved: ApprovedContract) {
        let mut all = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        all.retain(|a| (&a.server, &a.original) != (&approved.server, &approved.original));
        if all.len() >= REMEMBERED {
            all.pop_front();
        }
        all.push_back(approved);
    }

    /// Who approved `server`'s `original` with `digest` in this process, if someone did.
    pub(crate) fn by(&self, server: &str, original: &str, digest: &str) -> Option<String> {
        let all = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        all.iter()
            .find(|a| a.server == server && a.original == original && a.digest == digest)
            .map(|a| a.by.clone())
    }
}

/// Why an approval was refused: the status, and the body to answer with (`{"error": …}`, and
/// both digests when the contract changed since it was reviewed).
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) status: StatusCode,
    pub(crate) body: Value,
}

impl Refused {
    fn new(status: StatusCode, message: impl Into<String>) -> Refused {
        Refused { status, body: json!({ "error": message.into() }) }
    }

    /// What went wrong, in words.
    pub(crate) fn message(&self) -> &str {
        self.body["error"].as_str().unwrap_or_default()
    }
}

/// Pins the exposed tool `exposed` in the lock file of every `integrity` interceptor, as
/// `approver`, if its contract as its server lists it now has the digest `expected` (the one
/// the approver reviewed); publishes `integrity/approved`, and tells the other replicas when
/// they share state (`admin/shared_contracts.rs`). What was done, as the admin API answers it.
pub(crate) fn approve_tool(
    admin: &Admin,
    approver: &str,
    exposed: &str,
    expected: &str,
) -> Result<Value, Refused> {
    let done = pin_tool(admin, approver, exposed, expected)?;
    if let Some(replicas) = &admin.shared {
        replicas.announce(approver, exposed, expected);
    }
    Ok(done)
}

/// [`approve_tool`] on this replica alone.
pub(crate) fn pin_tool(
    admin: &Admin,
    approver: &str,
    exposed: &str,
    expected: &str,
) -> Result<Value, Refused> {
    if admin.integrity.paths().is_empty() {
        return Err(Refused::new(
            StatusCode::CONFLICT,
            "no `integrity` interceptor in the pipeline: there is no lock file to approve into",
        ));
    }
    let unknown =
        || Refused::new(StatusCode::NOT_FOUND, format!("no tool `{exposed}` is listed now"));
    let route = admin.gateway.inventory().tool_route(exposed).cloned().ok_or_else(unknown)?;
    let tool = admin
        .gateway
        .upstreams()
        .iter()
        .find(|upstream| upstream.name() == &*route.upstream)
        .and_then(|upstream| upstream.tool(&route.original))
        .ok_or_else(unknown)?;
    let approved = admin
        .integrity
        .approve(&route.upstream, &route.original, &tool, expected)
        .map_err(|error| {
            let message = error.to_string();
            match error {
                // What the approver reviewed is not what the server lists now.
                ApproveError::Changed { expected, digest } => Refused {
                    status: StatusCode::CONFLICT,
                    body: json!({ "error": message, "expected": expected, "digest": digest }),
                },
                ApproveError::LockGone { .. } => Refused::new(StatusCode::CONFLICT, message),
                ApproveError::Lock(_) => Refused::new(StatusCode::INTERNAL_SERVER_ERROR, message),
            }
        })?;
    let first = &approved[0];
    admin.approved.remember(ApprovedContract {
        server: route.upstream.to_string(),
        original: route.original.clone(),
        digest: first.digest.clone(),
        by: approver.to_owned(),
    });
    admin.gateway.recorder().bus().publish(
        Event::new(integrity::kind::APPROVED)
            .with("server", route.upstream.to_string())
            .with("tool", route.original.clone())
            .with("exposed", exposed.to_owned())
            .with("by", approver.to_owned())
            .with("digest", first.digest.clone())
            .with("pinned_digest", first.pinned_digest.clone())
            .with("changes", first.changes.clone()),
    );
    tracing::info!(
        target: "toolgate::integrity",
        tool = %exposed,
        by = %approver,
        digest = %first.digest,
        "contract approved"
    );
    Ok(json!({
        "tool": exposed,
        "server": &*route.upstream,
        "original": route.original,
        "by": approver,
        "digest": first.digest,
        "pinned_digest": first.pinned_digest,
        "changes": first.changes,
        "locks": approved.iter().map(|a| a.lock.display().to_string()).collect::<Vec<_>>(),
    }))
}

/// The digest an approval body names: `{"digest": "sha256:…"}`.
fn reviewed_digest(body: &[u8]) -> Result<String, String> {
    let usage = "the body must be {\"digest\": \"sha256:…\"}: the digest of the contract you \
                 reviewed (`toolgate pin --diff` shows it, and so does the tool's refusal)";
    let body: Value = serde_json::from_slice(body).map_err(|_| usage.to_owned())?;
    let Some(fields) = body.as_object() else { return Err(usage.to_owned()) };
    if let Some(unknown) = fields.keys().find(|key| *key != "digest") {
        return Err(format!("unknown field {unknown:?}; {usage}"));
    }
    match fields.get("digest").and_then(Value::as_str) {
        Some(digest) if digest.starts_with("sha256:") => Ok(digest.to_owned()),
        _ => Err(usage.to_owned()),
    }
}

/// `POST /integrity/{tool}/approve`.
pub(super) async fn approve_contract(
    State(admin): State<Admin>,
    Path(exposed): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let approver = match gateway_admin(&admin, &headers).await {
        Ok(name) => name,
        Err(refused) => return refused,
    };
    let expected = match reviewed_digest(&body) {
        Ok(digest) => digest,
        Err(message) => return problem(StatusCode::BAD_REQUEST, message),
    };
    match approve_tool(&admin, &approver, &exposed, &expected) {
        Ok(done) => Json(done).into_response(),
        Err(refused) => (refused.status, Json(refused.body)).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval(original: &str, digest: &str, by: &str) -> ApprovedContract {
        ApprovedContract {
            server: "fx".into(),
            original: original.into(),
            digest: digest.into(),
            by: by.into(),
        }
    }

    #[test]
    fn the_last_approval_of_each_tool_is_remembered_within_a_bound() {
        let approved = ApprovedContracts::default();
        approved.remember(approval("weather", "sha256:a", "alice"));
        approved.remember(approval("weather", "sha256:b", "bob"));
        assert_eq!(approved.by("fx", "weather", "sha256:b").as_deref(), Some("bob"));
        assert_eq!(approved.by("fx", "weather", "sha256:a"), None, "the later one replaced it");
        assert_eq!(approved.by("other", "weather", "sha256:b"), None);
        for n in 0..REMEMBERED + 10 {
            approved.remember(approval(&format!("t{n}"), "sha256:c", "carol"));
        }
        assert_eq!(approved.0.lock().unwrap().len(), REMEMBERED);
        assert_eq!(approved.by("fx", "t0", "sha256:c"), None, "the oldest went first");
        assert!(approved.by("fx", &format!("t{}", REMEMBERED + 9), "sha256:c").is_some());
    }

    #[test]
    fn an_approval_body_names_a_digest_and_nothing_else() {
        assert_eq!(reviewed_digest(br#"{"digest": "sha256:ab"}"#).unwrap(), "sha256:ab");
        assert!(reviewed_digest(br#"{"digest": "md5:ab"}"#).is_err());
        assert!(
            reviewed_digest(br#"{"digest": "sha256:ab", "x": 1}"#).unwrap_err().contains("\"x\"")
        );
        assert!(reviewed_digest(b"not json").is_err());
    }
}
