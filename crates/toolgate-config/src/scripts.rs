//! `[scripts]`: the Rune scripts toolgate loads, and the limits each invocation runs under.
//!
//! ```toml
//! [scripts]
//! dirs = [".toolgate/scripts", "/etc/toolgate/scripts"]   # folders whose *.rn files are loaded
//! instructions = 1000000   # VM instructions per invocation
//! memory = "16MiB"         # bytes per invocation: an integer, or a number with B, KiB, MiB or GiB
//! timeout = "1s"           # wall-clock time per invocation
//! tool_timeout = "30s"     # wall-clock time per call of a script's own tool (it may call others)
//! watch = true             # reload a script when its file changes (default: true)
//! ```
//!
//! Everything is optional. A limit left out is the `toolgate-scripts` engine's default, and
//! with no `dirs` the caller loads `.toolgate/scripts` beside the config file. Only
//! `toolgate.toml` itself has `[scripts]`: `import` takes servers only (the files it names are
//! MCP client configs), as for `[agent]`.

use std::path::PathBuf;
use std::time::Duration;

use crate::check::Checker;
use crate::error::{index_path, key_path};
use crate::value::Value;

const SCRIPTS_KEYS: &[&str] =
    &["dirs", "instructions", "memory", "timeout", "tool_timeout", "watch"];

/// The units `[scripts] memory` accepts, with their size in bytes (binary units only).
const MEMORY_UNITS: &[(&str, u64)] =
    &[("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)];

/// `[scripts]`: the Rune scripts toolgate loads (see the `toolgate-scripts` crate).
///
/// The default (also when the table is absent) has no folders, no limits and `watch` on.
/// Only the main `toolgate.toml` can set it: `import` merges servers only, as for `[agent]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptsConfig {
    /// Folders whose `*.rn` files are loaded, in order. A relative folder is resolved against
    /// the directory of the config file (as `import`, `cwd` and `[audit] file` are), and `~/`
    /// against the home directory. Empty when the table says nothing: the caller then uses
    /// `.toolgate/scripts` beside the config.
    pub dirs: Vec<PathBuf>,
    /// VM instructions one invocation may execute; `None`: the engine's default.
    pub instructions: Option<u64>,
    /// Bytes one invocation may allocate; `None`: the engine's default.
    pub memory: Option<u64>,
    /// Wall-clock time one invocation may take; `None`: the engine's default.
    pub timeout: Option<Duration>,
    /// Wall-clock time one call of a script's own tool may take (`call_<name>`, including the
    /// tools it calls through the gateway); `None`: the engine's default.
    pub tool_timeout: Option<Duration>,
    /// Whether changed files are reloaded; default true.
    pub watch: bool,
}

impl Default for ScriptsConfig {
    fn default() -> Self {
        ScriptsConfig {
            dirs: Vec::new(),
            instructions: None,
            memory: None,
            timeout: None,
            tool_timeout: None,
            watch: true,
        }
    }
}

/// `[scripts]`. `None` (the problems recorded) when any field has a problem; the caller then
/// keeps the defaults, as for `[agent]`.
pub(crate) fn check_scripts(cx: &mut Checker<'_>, value: &Value) -> Option<ScriptsConfig> {
    let entries = cx.table(value, "scripts")?;
    let fields = cx.known_keys(entries, "scripts", SCRIPTS_KEYS);
    let mut scripts = ScriptsConfig::default();
    let mut ok = true;
    let at = |key: &str| key_path("scripts", key);
    if let Some(value) = fields.get("dirs") {
        match dirs(cx, value, &at("dirs")) {
            Some(dirs) => scripts.dirs = dirs,
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("instructions") {
        match positive(cx, value, &at("instructions"), "a positive integer") {
            Some(n) => scripts.instructions = Some(n),
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("memory") {
        match memory(cx, value, &at("memory")) {
            Some(bytes) => scripts.memory = Some(bytes),
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("timeout") {
        // `duration` also refuses zero.
        match cx.duration(value, &at("timeout")) {
            Some(d) => scripts.timeout = Some(d),
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("tool_timeout") {
        match cx.duration(value, &at("tool_timeout")) {
            Some(d) => scripts.tool_timeout = Some(d),
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("watch") {
        match cx.boolean(value, &at("watch")) {
            Some(watch) => scripts.watch = watch,
            None => ok = false,
        }
    }
    ok.then_some(scripts)
}

/// `dirs`: at least one folder; each is interpolated, must not be empty, and is resolved like
/// the config's other paths.
fn dirs(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Vec<PathBuf>> {
    let items = cx.strings(value, path)?;
    if items.is_empty() {
        cx.error(
            path,
            "needs at least one folder (leave `dirs` out to load .toolgate/scripts beside the \
             config file)",
        );
        return None;
    }
    let mut out = Some(Vec::with_capacity(items.len()));
    for (i, item) in items.into_iter().enumerate() {
        let item_path = index_path(path, i);
        let dir = match cx.interpolate(item, &item_path) {
            Some(dir) if dir.trim().is_empty() => {
                cx.error(&item_path, "must not be empty");
                None
            }
            Some(dir) => Some(cx.resolve_path(&dir)),
            None => None,
        };
        match (dir, &mut out) {
            (Some(dir), Some(out)) => out.push(dir),
            _ => out = None,
        }
    }
    out
}

/// An integer of at least 1; `what` names the accepted forms when `value` is of another type.
fn positive(cx: &mut Checker<'_>, value: &Value, path: &str, what: &str) -> Option<u64> {
    match value {
        Value::Integer(n) if *n >= 1 => u64::try_from(*n).ok(),
        Value::Integer(n) => {
            cx.error(path, format!("{n} is out of range (at least 1)"));
            None
        }
        other => {
            cx.expected(path, what, other);
            None
        }
    }
}

/// `memory`: an integer of bytes, or a string such as `"16MiB"`.
fn memory(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<u64> {
    let Value::String(text) = value else {
        return positive(cx, value, path, "a number of bytes or a size such as \"16MiB\"");
    };
    match parse_memory(text) {
        Ok(bytes) => Some(bytes),
        Err(reason) => {
            cx.error(path, format!("invalid memory size {text:?}: {reason}"));
            None
        }
    }
}

/// Parses a size such as `"16MiB"` or `"512 KiB"`: a whole number, optional spaces, and one of
/// [`MEMORY_UNITS`] (case matters). The error says why, without the text itself.
pub(crate) fn parse_memory(text: &str) -> Result<u64, String> {
    const EXPECTED: &str = "B, KiB, MiB or GiB";
    let text = text.trim();
    let digits_end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, rest) = text.split_at(digits_end);
    if digits.is_empty() {
        return Err(format!("expected a whole number followed by a unit ({EXPECTED})"));
    }
    if rest.starts_with(['.', ',']) {
        return Err("expected a whole number: write a smaller unit instead of a fraction \
                    (\"1536MiB\", not \"1.5GiB\")"
            .to_owned());
    }
    let unit = rest.trim_start();
    if unit.is_empty() {
        return Err(format!(
            "missing unit: write one of {EXPECTED} after the number, or give a number of bytes \
             as an integer (without quotes)"
        ));
    }
    let Some(&(_, scale)) = MEMORY_UNITS.iter().find(|(name, _)| *name == unit) else {
        return Err(unit_problem(unit));
    };
    let too_large = || format!("too large (at most {} bytes)", u64::MAX);
    let number: u64 = digits.parse().map_err(|_| too_large())?;
    let bytes = number.checked_mul(scale).ok_or_else(too_large)?;
    if bytes == 0 {
        return Err("must be greater than zero".to_owned());
    }
    Ok(bytes)
}

/// Why `unit` is not one of [`MEMORY_UNITS`], naming the one that was probably meant.
fn unit_problem(unit: &str) -> String {
    let meant = match unit.to_ascii_lowercase().as_str() {
        "b" | "byte" | "bytes" => Some("B"),
        "k" | "kb" | "kib" => Some("KiB"),
        "m" | "mb" | "mib" => Some("MiB"),
        "g" | "gb" | "gib" => Some("GiB"),
        _ => None,
    };
    match meant {
        Some(meant) => format!(
            "unknown unit {unit:?}: write {meant} (units are binary, and only B, KiB, MiB and \
             GiB are accepted)"
        ),
        None => format!("unknown unit {unit:?} (expected B, KiB, MiB or GiB)"),
    }
}

#[cfg(test)]
mod tests;
