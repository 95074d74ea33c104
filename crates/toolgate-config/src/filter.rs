//! Tool filters: which of an upstream's tools are exposed, by `allow_tools` / `deny_tools` globs.
//!
//! Patterns are compiled once into a [`CompiledToolFilter`]; checking a name is then one pass of
//! two glob sets.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use thiserror::Error;

use crate::model::ToolFilter;

/// A [`ToolFilter`] whose patterns are compiled, ready to check many names.
#[derive(Debug, Clone)]
pub struct CompiledToolFilter {
    /// `None` = allow everything.
    allow: Option<GlobSet>,
    deny: GlobSet,
}

/// A pattern of a [`ToolFilter`] that is not a valid glob. Never returned for a filter of a
/// validated [`Config`](crate::Config).
#[derive(Debug, Clone, Error)]
#[error("invalid tool pattern {pattern:?}")]
pub struct FilterError {
    pattern: String,
    #[source]
    source: globset::Error,
}

impl CompiledToolFilter {
    /// True when the tool with this original name is exposed: it matches some `allow` pattern
    /// (or there is none) and no `deny` pattern.
    pub fn matches(&self, tool_name: &str) -> bool {
        self.allow.as_ref().is_none_or(|allow| allow.is_match(tool_name))
            && !self.deny.is_match(tool_name)
    }
}

// === impl ToolFilter ===

impl ToolFilter {
    /// Compiles the patterns, to check many names.
    pub fn compile(&self) -> Result<CompiledToolFilter, FilterError> {
        let allow = if self.allow.is_empty() { None } else { Some(glob_set(&self.allow)?) };
        Ok(CompiledToolFilter { allow, deny: glob_set(&self.deny)? })
    }

    /// True when the tool with this original name is exposed. This compiles the patterns on
    /// every call: to check more than one name, [`compile`](Self::compile) once instead. A
    /// filter with an invalid pattern exposes nothing.
    pub fn matches(&self, tool_name: &str) -> bool {
        self.compile().is_ok_and(|filter| filter.matches(tool_name))
    }
}

fn glob_set(patterns: &[String]) -> Result<GlobSet, FilterError> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        set.add(glob(pattern).map_err(|source| FilterError { pattern: pattern.clone(), source })?);
    }
    set.build().map_err(|source| FilterError { pattern: patterns.join(", "), source })
}

/// Compiles one name pattern the way every pattern of a config is compiled: `*`, `?`, `[...]`,
/// `{a,b}`, backslash escapes; `/` is an ordinary character.
pub(crate) fn glob(pattern: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(pattern).literal_separator(false).backslash_escape(true).build()
}

#[cfg(test)]
mod tests;
