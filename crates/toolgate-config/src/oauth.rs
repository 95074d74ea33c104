//! `[servers.<name>] oauth`: how toolgate signs in to an HTTP server that asks for OAuth (the
//! MCP authorization specification). Absent, toolgate answers a server's `401` by discovering
//! its authorization server and registering itself; `oauth = false` never signs in; a table
//! says which client to be and which flow to use:
//!
//! ```toml
//! oauth = { scopes = ["repo"], client_id = "toolgate-acme", client_secret = "${ACME_SECRET}" }
//! oauth = { flow = "client_credentials", client_id = "ci", client_secret = "${CI_SECRET}" }
//! oauth = { flow = "client_credentials", client_id = "ci", private_key = "ci-key.pem" }
//! oauth = { per_principal = true }
//! ```

use crate::check::Checker;
use crate::error::key_path;
use crate::model::{ASSERTION_ALGORITHMS, OAuthConfig, OAuthFlow, Secret};
use crate::value::Value;

const KEYS: &[&str] = &[
    "flow",
    "client_id",
    "client_secret",
    "client_metadata_url",
    "private_key",
    "algorithm",
    "scopes",
    "redirect_port",
    "per_principal",
];

/// Checks an `oauth` value: `false`, `true`, or a table.
pub(crate) fn check(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<OAuthConfig> {
    if let Value::Boolean(enabled) = value {
        return Some(OAuthConfig { enabled: *enabled, ..OAuthConfig::default() });
    }
    let entries = cx.table(value, path)?;
    let fields = cx.known_keys(entries, path, KEYS);
    let at = |key: &str| key_path(path, key);
    let mut config = OAuthConfig::default();
    let mut ok = true;

    if let Some(value) = fields.get("flow") {
        match cx.string(value, &at("flow")) {
            Some("authorization_code") => config.flow = OAuthFlow::AuthorizationCode,
            Some("client_credentials") => config.flow = OAuthFlow::ClientCredentials,
            Some(other) => {
                cx.error(
                    &at("flow"),
                    format!(
                        "unknown flow {other:?} (expected \"authorization_code\" or \
                         \"client_credentials\")"
                    ),
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("client_id") {
        match cx.interpolated_string(value, &at("client_id")) {
            Some(id) if !id.trim().is_empty() => config.client_id = Some(id),
            Some(_) => {
                cx.error(&at("client_id"), "must not be empty");
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("client_secret") {
        match cx.secret(|cx| cx.interpolated_string(value, &at("client_secret"))) {
            Some(secret) if !secret.is_empty() => config.client_secret = Some(Secret::new(secret)),
            Some(_) => {
                cx.error(&at("client_secret"), "must not be empty");
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("client_metadata_url") {
        match cx.url(value, &at("client_metadata_url")) {
            Some(url) if url.scheme() == "https" && url.path() != "/" => {
                config.client_metadata_url = Some(url);
            }
            Some(_) => {
                cx.error(
                    &at("client_metadata_url"),
                    "must be an https URL with a path (a Client ID Metadata Document)",
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("private_key") {
        match private_key(cx, value, &at("private_key")) {
            Some(key) => config.private_key = Some(key),
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("algorithm") {
        match cx.string(value, &at("algorithm")) {
            Some(name) if ASSERTION_ALGORITHMS.contains(&name) => config.algorithm = name.into(),
            Some(name) => {
                let known = ASSERTION_ALGORITHMS.join(", ");
                cx.error(&at("algorithm"), format!("unknown algorithm {name:?} (known: {known})"));
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("scopes") {
        match cx.strings(value, &at("scopes")) {
            Some(scopes) => {
                for (i, scope) in scopes.iter().enumerate() {
                    if scope.is_empty() || scope.chars().any(|c| c.is_whitespace() || c == '"') {
                        cx.error(
                            &crate::error::index_path(&at("scopes"), i),
                            "a scope is one word without spaces or quotes",
                        );
                        ok = false;
                    }
                }
                config.scopes = scopes.into_iter().map(str::to_owned).collect();
            }
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("redirect_port") {
        match value {
            Value::Integer(port) if (1..=65535).contains(port) => {
                config.redirect_port = Some(*port as u16);
            }
            other => {
                cx.expected(&at("redirect_port"), "a port number (1-65535)", other);
                ok = false;
            }
        }
    }
    if let Some(value) = fields.get("per_principal") {
        match cx.boolean(value, &at("per_principal")) {
            Some(per) => config.per_principal = per,
            None => ok = false,
        }
    }
    if !ok {
        return None;
    }
    consistent(cx, &config, path).then_some(config)
}

/// The combinations that cannot work, reported where they are written.
fn consistent(cx: &mut Checker<'_>, config: &OAuthConfig, path: &str) -> bool {
    let at = |key: &str| key_path(path, key);
    let mut ok = true;
    if config.client_secret.is_some() && config.private_key.is_some() {
        cx.error(
            &at("private_key"),
            "give either client_secret or private_key: a client authenticates one way",
        );
        ok = false;
    }
    if (config.client_secret.is_some() || config.private_key.is_some())
        && config.client_id.is_none()
    {
        cx.error(&at("client_id"), "a client_secret or private_key needs its client_id");
        ok = false;
    }
    match config.flow {
        OAuthFlow::ClientCredentials => {
            if config.client_id.is_none() {
                cx.error(&at("client_id"), "flow = \"client_credentials\" needs a client_id");
                ok = false;
            } else if config.client_secret.is_none() && config.private_key.is_none() {
                cx.error(
                    &at("client_secret"),
                    "flow = \"client_credentials\" needs a client_secret or a private_key",
                );
                ok = false;
            }
            if config.per_principal {
                cx.error(
                    &at("per_principal"),
                    "per_principal needs each caller to sign in (flow = \"authorization_code\"); \
                     client credentials are the gateway's own",
                );
                ok = false;
            }
        }
        OAuthFlow::AuthorizationCode => {
            if config.private_key.is_some() {
                cx.error(
                    &at("private_key"),
                    "private_key signs client assertions for flow = \"client_credentials\"",
                );
                ok = false;
            }
        }
    }
    ok
}

/// `private_key`: a PEM file (relative to the config's folder), read now so that a missing or
/// wrong file is a config error, and kept as a secret.
fn private_key(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Secret> {
    let file = cx.interpolated_string(value, path)?;
    let file = cx.resolve_path(&file);
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(error) => {
            cx.error(path, format!("cannot read {}: {error}", file.display()));
            return None;
        }
    };
    let is_private_key = text.lines().any(|line| {
        let line = line.trim();
        line.starts_with("-----BEGIN ") && line.ends_with("PRIVATE KEY-----")
    });
    if !is_private_key {
        cx.error(path, format!("{} holds no PEM private key", file.display()));
        return None;
    }
    Some(Secret::new(text))
}

#[cfg(test)]
mod tests;
