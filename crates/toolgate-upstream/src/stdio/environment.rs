//! The environment a stdio server is started with, built from nothing.
//!
//! toolgate's own environment holds what no server should read: the admin API's bearer
//! tokens, the audit log's HMAC key, the model providers' API keys. A child inheriting all of
//! it could approve its own held calls over the admin API. So, as the official MCP SDKs do, a
//! child inherits only a short list of harmless variables
//! ([`toolgate_config::DEFAULT_INHERITED_ENV`]: `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`,
//! `USER`, `LANG`, `LC_*`, `TMPDIR`), plus what the config names:
//!
//! 1. an inherited variable passes when the default list or `env_pass` names it (by name or
//!    `*` glob), except that a variable in `withheld` (where toolgate's secrets come from)
//!    passes only when `env_pass` names it exactly: a glob never lets one through;
//! 2. `env_remove` then removes inherited variables (names or globs), the default ones too;
//! 3. `env` sets its values last, over anything inherited.
//!
//! A variable whose name is not Unicode is never inherited (no pattern is meant to match
//! one), and neither is one whose value starts with `()` (a shell function exported by bash,
//! which the SDKs skip too) unless `env_pass` names it exactly.

use std::ffi::{OsStr, OsString};

use globset::{Glob, GlobSet, GlobSetBuilder};
use toolgate_config::{DEFAULT_INHERITED_ENV, StdioConfig};

/// The variables (name, value) the child described by `config` starts with, given the
/// variables toolgate has (`inherited`; `std::env::vars_os()` for the real thing). Sorted by
/// name.
pub fn child_environment(
    config: &StdioConfig,
    inherited: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let defaults = glob_set(DEFAULT_INHERITED_ENV.iter().copied());
    let passed = glob_set(config.env_pass.iter().map(String::as_str));
    let removed = glob_set(config.env_remove.iter().map(String::as_str));
    let mut out: Vec<(OsString, OsString)> = inherited
        .into_iter()
        .filter(|(name, value)| {
            let Some(name) = name.to_str() else { return false };
            let named_exactly = config.env_pass.iter().any(|pass| pass == name);
            let by_pattern = defaults.is_match(name) || passed.is_match(name);
            let inherits = named_exactly
                || (by_pattern && !config.withheld.contains(name) && !is_shell_function(value));
            inherits && !removed.is_match(name)
        })
        .filter(|(name, _)| !config.env.contains_key(name.to_str().unwrap_or_default()))
        .collect();
    out.extend(
        config.env.iter().map(|(name, value)| (name.into(), OsString::from(value.expose()))),
    );
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The names of the variables [`child_environment`] gives the child, never their values: what
/// `toolgate servers --json` shows.
pub fn child_environment_names(
    config: &StdioConfig,
    inherited: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<String> {
    child_environment(config, inherited)
        .into_iter()
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect()
}

/// A value bash gives an exported function (`BASH_FUNC_f%%=() { ...; }`).
fn is_shell_function(value: &OsStr) -> bool {
    value.as_encoded_bytes().starts_with(b"()")
}

/// The globs of `patterns` (checked by the config loader: one that does not compile matches
/// nothing).
fn glob_set<'a>(patterns: impl Iterator<Item = &'a str>) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        if let Ok(glob) = Glob::new(pattern) {
            builder.add(glob);
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

#[cfg(test)]
mod tests;
