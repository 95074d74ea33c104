//! How upstreams' lists are kept fresh, for servers that change them without `list_changed`:
//! `tool_ttl`, `refresh_interval` and `refresh_on_error`, on a server (`[servers.NAME]`) or for
//! every server (`[inventory]`, as smg-mcp's `inventory:` has them), a server's own winning.
//!
//! ```toml
//! [inventory]
//! tool_ttl = "5m"            # lists older than this are listed again before a list is answered
//! refresh_interval = "1m"    # listed again this often
//! refresh_on_error = true    # a call of a tool toolgate does not know lists the tools again
//!
//! [servers.flaky]
//! command = "flaky-mcp"
//! refresh_interval = false   # not this one
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use crate::check::Checker;
use crate::error::key_path;
use crate::model::Refresh;
use crate::value::Value;

/// The keys, on a server and in `[inventory]`.
pub(crate) const REFRESH_KEYS: &[&str] = &["tool_ttl", "refresh_interval", "refresh_on_error"];

/// A server's (or `[inventory]`'s) refresh keys among its `fields` at `path`; `None` when one
/// is wrong (the checker has the error).
pub(crate) fn refresh(
    cx: &mut Checker<'_>,
    fields: &BTreeMap<&str, &Value>,
    path: &str,
) -> Option<Refresh> {
    let at = |key: &str| key_path(path, key);
    let mut ok = true;
    let mut period = |cx: &mut Checker<'_>, key: &str| match fields.get(key) {
        None => None,
        // Off, over what `[inventory]` sets.
        Some(Value::Boolean(false)) => Some(Duration::ZERO),
        Some(value) => {
            let duration = cx.duration(value, &at(key));
            ok &= duration.is_some();
            duration
        }
    };
    let tool_ttl = period(cx, "tool_ttl");
    let interval = period(cx, "refresh_interval");
    let on_error = match fields.get("refresh_on_error") {
        None => None,
        Some(value) => {
            let on = cx.boolean(value, &at("refresh_on_error"));
            ok &= on.is_some();
            on
        }
    };
    ok.then_some(Refresh { tool_ttl, interval, on_error })
}

/// `[inventory]` (`value`, when written): what every server has unless it says otherwise.
pub(crate) fn check_inventory(cx: &mut Checker<'_>, value: Option<&Value>) -> Refresh {
    let Some(value) = value else { return Refresh::default() };
    let Some(entries) = cx.table(value, "inventory") else { return Refresh::default() };
    let fields = cx.known_keys(entries, "inventory", REFRESH_KEYS);
    refresh(cx, &fields, "inventory").unwrap_or_default()
}

#[cfg(test)]
mod tests;
