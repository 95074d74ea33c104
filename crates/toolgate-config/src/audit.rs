//! `[audit]` (where events are recorded) and `[admin]` (the admin HTTP API) of a
//! `toolgate.toml`.

use std::collections::BTreeMap;

use crate::check::{Checker, optional};
use crate::error::{index_path, key_path};
use crate::model::{
    AdminConfig, AuditConfig, DEFAULT_WEBHOOK_QUEUE, DEFAULT_WEBHOOK_RETRIES, Secret, WebhookConfig,
};
use crate::value::Value;

const AUDIT_KEYS: &[&str] =
    &["file", "events", "redact", "detect", "hash_key", "webhook", "required"];
/// Shortest accepted `hash_key`.
const MIN_KEY_LEN: usize = 16;
const WEBHOOK_KEYS: &[&str] = &["url", "events", "headers", "queue", "retries"];
const ADMIN_KEYS: &[&str] = &["listen", "tokens"];

/// `[audit]`. A field with a problem is left at its default and a webhook with one is left
/// out (the checker has the errors), so that what is valid can still be checked further.
pub(crate) fn check_audit(cx: &mut Checker<'_>, value: &Value) -> Option<AuditConfig> {
    let entries = cx.table(value, "audit")?;
    let fields = cx.known_keys(entries, "audit", AUDIT_KEYS);
    let file = optional(fields.get("file").copied(), |v| {
        let text = cx.string(v, "audit.file")?;
        let text = cx.interpolate(text, "audit.file")?;
        if text.is_empty() {
            cx.error("audit.file", "must not be empty");
            return None;
        }
        Some(cx.resolve_path(&text))
    });
    let events = optional(fields.get("events").copied(), |v| patterns(cx, v, "audit.events"));
    let redact = optional(fields.get("redact").copied(), |v| {
        cx.strings(v, "audit.redact").map(|s| s.into_iter().map(str::to_owned).collect())
    });
    // The names are checked against the detectors when the audit is planned (as `redact`'s
    // paths are): this crate does not know them.
    let detect = optional(fields.get("detect").copied(), |v| {
        cx.strings(v, "audit.detect").map(|s| s.into_iter().map(str::to_owned).collect())
    });
    let hash_key = optional(fields.get("hash_key").copied(), |v| {
        let text = cx.string(v, "audit.hash_key")?;
        let key = cx.secret(|cx| cx.interpolate(text, "audit.hash_key"))?;
        if key.len() < MIN_KEY_LEN {
            cx.error(
                "audit.hash_key",
                format!("too short: use at least {MIN_KEY_LEN} characters (a random secret)"),
            );
            return None;
        }
        Some(Secret::new(key))
    });
    let webhooks = fields.get("webhook").map(|v| webhooks(cx, v)).unwrap_or_default();
    let required = optional(fields.get("required").copied(), |v| cx.boolean(v, "audit.required"));
    if required == Some(Some(true)) && !matches!(file, Some(Some(_))) {
        cx.error("audit.required", "needs `file`: the audit log calls must be written to first");
    }
    let defaults = AuditConfig::default();
    Some(AuditConfig {
        file: file.flatten(),
        events: events.flatten().unwrap_or(defaults.events),
        redact: redact.flatten().unwrap_or_default(),
        detect: detect.flatten().unwrap_or(defaults.detect),
        hash_key: hash_key.flatten(),
        webhooks,
        required: required.flatten().unwrap_or(false),
    })
}

/// Event patterns: `/`-separated segments, each a name or `*`.
fn patterns(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Vec<String>> {
    let items = cx.strings(value, path)?;
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let valid = !item.is_empty()
            && item.split('/').all(|segment| {
                segment == "*"
                    || (!segment.is_empty()
                        && segment
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
            });
        if !valid {
            cx.error(
                &index_path(path, i),
                format!(
                    "invalid event pattern {item:?} (expected `/`-separated names or `*`, \
                     such as \"tools/*\" or \"*/denied\")"
                ),
            );
            ok = false;
        }
    }
    ok.then(|| items.into_iter().map(str::to_owned).collect())
}

/// `[[audit.webhook]]`: the valid ones.
fn webhooks(cx: &mut Checker<'_>, value: &Value) -> Vec<WebhookConfig> {
    let Value::Array(items) = value else {
        cx.expected("audit.webhook", "an array of tables ([[audit.webhook]])", value);
        return Vec::new();
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| webhook(cx, &index_path("audit.webhook", i), item))
        .collect()
}

fn webhook(cx: &mut Checker<'_>, path: &str, value: &Value) -> Option<WebhookConfig> {
    let entries = cx.table(value, path)?;
    let fields = cx.known_keys(entries, path, WEBHOOK_KEYS);
    let at = |key: &str| key_path(path, key);
    let url = match fields.get("url") {
        Some(value) => cx.url(value, &at("url")),
        None => {
            cx.error(path, "missing `url` (where events are POSTed)");
            None
        }
    };
    let events = optional(fields.get("events").copied(), |v| patterns(cx, v, &at("events")));
    let headers =
        optional(fields.get("headers").copied(), |v| cx.secret(|cx| cx.headers(v, &at("headers"))));
    let queue = optional(fields.get("queue").copied(), |v| count(cx, v, &at("queue"), 1));
    let retries = optional(fields.get("retries").copied(), |v| count(cx, v, &at("retries"), 0));
    Some(WebhookConfig {
        url: url?,
        events: events?.unwrap_or_else(|| vec!["*".to_owned()]),
        headers: headers?.unwrap_or_default(),
        queue: queue?.unwrap_or(DEFAULT_WEBHOOK_QUEUE),
        retries: retries?.map(|n| n as u32).unwrap_or(DEFAULT_WEBHOOK_RETRIES),
    })
}

fn count(cx: &mut Checker<'_>, value: &Value, path: &str, min: i64) -> Option<usize> {
    match value {
        Value::Integer(n) if *n >= min && *n <= 1_000_000 => Some(*n as usize),
        Value::Integer(_) => {
            cx.error(path, format!("must be between {min} and 1000000"));
            None
        }
        other => {
            cx.expected(path, "an integer", other);
            None
        }
    }
}

/// `[admin]`.
pub(crate) fn check_admin(cx: &mut Checker<'_>, value: &Value) -> Option<AdminConfig> {
    let entries = cx.table(value, "admin")?;
    let fields = cx.known_keys(entries, "admin", ADMIN_KEYS);
    let listen = match fields.get("listen") {
        Some(value) => cx.listen(value, "admin.listen"),
        None => {
            cx.error("admin", "missing `listen` (the admin API's address, such as 127.0.0.1:8932)");
            None
        }
    };
    // Without tokens the admin API is for `[auth.roles]` only (checked with `[auth]`).
    let tokens = match fields.get("tokens") {
        Some(value) => cx.secret(|cx| tokens(cx, value)),
        None => Some(BTreeMap::new()),
    };
    Some(AdminConfig { listen: listen?, tokens: tokens? })
}

fn tokens(cx: &mut Checker<'_>, value: &Value) -> Option<BTreeMap<String, Secret>> {
    let table = cx.string_table(value, "admin.tokens")?;
    if table.is_empty() {
        cx.error("admin.tokens", "needs at least one `name = \"${TOKEN_VAR}\"`");
        return None;
    }
    let mut out = Some(BTreeMap::new());
    let mut seen = BTreeMap::<String, String>::new();
    for (name, text) in table {
        let path = key_path("admin.tokens", name);
        let token = cx.interpolate(text, &path);
        let valid = match &token {
            Some(token) if token.len() < 16 => {
                cx.error(&path, "too short: use at least 16 characters (a random secret)");
                false
            }
            Some(token) => match seen.insert(token.clone(), name.to_owned()) {
                Some(other) => {
                    cx.error(&path, format!("the same token as {other:?}: each needs its own"));
                    false
                }
                None => true,
            },
            None => false,
        };
        match (valid, token, &mut out) {
            (true, Some(token), Some(out)) => {
                out.insert(name.to_owned(), Secret::new(token));
            }
            _ => out = None,
        }
    }
    out
}
