//! `[[pipeline]]` entries: the settings every interceptor has (`kind`, `name`, `mode`,
//! `fail_open`, `priority`, `timeout`, `servers`, `tools`), checked here; the rest of an
//! entry's table are the kind's options, checked when the interceptor is built. Used for the
//! top-level `[[pipeline]]` and for each `[[tenants.NAME.pipeline]]`.

use crate::check::{Checker, optional};
use crate::error::{index_path, key_path};
use crate::model::{InterceptorConfig, Mode};
use crate::value::Value;

/// `[[pipeline]]`: each entry's common settings are checked here; the rest are the kind's
/// options, checked when the interceptor is built.
pub(crate) fn check_pipeline(cx: &mut Checker<'_>, value: &Value) -> Vec<InterceptorConfig> {
    let Value::Array(items) = value else {
        cx.expected("pipeline", "an array of tables ([[pipeline]])", value);
        return Vec::new();
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| check_interceptor(cx, &index_path("pipeline", i), item))
        .collect()
}

pub(crate) fn check_interceptor(
    cx: &mut Checker<'_>,
    path: &str,
    value: &Value,
) -> Option<InterceptorConfig> {
    let entries = cx.table(value, path)?;
    let at = |key: &str| key_path(path, key);
    let get = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let kind = match get("kind") {
        Some(value) => cx.string(value, &at("kind")).map(str::to_owned),
        None => {
            cx.error(path, "missing `kind` (which interceptor this is, such as \"policy\")");
            None
        }
    };
    let name = optional(get("name"), |v| cx.string(v, &at("name")).map(str::to_owned));
    let mode = optional(get("mode"), |v| {
        let text = cx.string(v, &at("mode"))?;
        let mode = Mode::from_name(text);
        if mode.is_none() {
            cx.error(
                &at("mode"),
                format!("unknown mode {text:?}: expected \"active\" or \"audit\""),
            );
        }
        mode
    });
    let fail_open = optional(get("fail_open"), |v| cx.boolean(v, &at("fail_open")));
    let priority = optional(get("priority"), |v| match v {
        Value::Integer(n) => match i32::try_from(*n) {
            Ok(n) => Some(n),
            Err(_) => {
                cx.error(&at("priority"), "out of range");
                None
            }
        },
        other => {
            cx.expected(&at("priority"), "an integer", other);
            None
        }
    });
    let timeout = optional(get("timeout"), |v| cx.duration(v, &at("timeout")));
    let servers = optional(get("servers"), |v| cx.globs(v, &at("servers")));
    let tools = optional(get("tools"), |v| cx.globs(v, &at("tools")));
    let options = entries
        .iter()
        .filter(|(key, _)| !INTERCEPTOR_KEYS.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.to_json()))
        .collect();
    Some(InterceptorConfig {
        path: path.to_owned(),
        kind: kind?,
        name: name?,
        mode: mode?.unwrap_or_default(),
        fail_open: fail_open?,
        priority: priority?.unwrap_or(0),
        timeout: timeout?,
        servers: servers?.unwrap_or_default(),
        tools: tools?.unwrap_or_default(),
        tenants: Vec::new(),
        options,
    })
}

/// Keys every `[[pipeline]]` entry has; the others are the kind's options.
const INTERCEPTOR_KEYS: &[&str] =
    &["kind", "name", "mode", "fail_open", "priority", "timeout", "servers", "tools"];
