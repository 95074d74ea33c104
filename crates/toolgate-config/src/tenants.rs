//! `[tenants]`: which servers each tenant's principals reach.
//!
//! ```toml
//! [tenants.acme]
//! servers = ["github", "jira-*"]   # names or globs of [servers.*]
//!
//! [tenants.globex]
//! servers = ["linear"]
//!
//! [[tenants.globex.pipeline]]       # entries for globex's callers only
//! kind = "limits"
//! server.linear = { rate = "100/min", per = "tenant" }
//! ```
//!
//! A principal's tenant comes from its token's `tenant_claim` or its API key's `tenant`. Once
//! any tenant is configured, a caller from the network reaches only its tenant's servers (one
//! without a tenant, only the servers no tenant names); the gateway enforces it. A tenant's
//! `pipeline` entries are `[[pipeline]]` entries that run for its callers only, after the
//! others of their priority; each is named `<kind>@<tenant>` unless it has a `name`.

use std::collections::BTreeMap;

use globset::Glob;

use crate::InterceptorConfig;
use crate::check::Checker;
use crate::error::key_path;
use crate::value::Value;

const TENANT_KEYS: &[&str] = &["servers", "pipeline"];

/// One `[tenants.NAME]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantConfig {
    /// The servers its principals reach: names or globs (`*`, `?`, `[...]`) of `[servers.*]`.
    pub servers: Vec<String>,
}

/// Whether `name` may name a tenant: what a token's claim or a key's `tenant` may say.
pub fn is_tenant_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

/// Checks `[tenants]`: the tenants, and their pipeline entries (each for its tenant only).
pub(crate) fn check_tenants(
    cx: &mut Checker<'_>,
    value: &Value,
) -> Option<(BTreeMap<String, TenantConfig>, Vec<InterceptorConfig>)> {
    let entries = cx.table(value, "tenants")?;
    let mut out = Some((BTreeMap::new(), Vec::new()));
    for (name, value) in entries {
        let path = key_path("tenants", name);
        let tenant = check_tenant(cx, name, value, &path);
        match (tenant, &mut out) {
            (Some((tenant, pipeline)), Some((tenants, entries))) => {
                tenants.insert(name.clone(), tenant);
                entries.extend(pipeline);
            }
            _ => out = None,
        }
    }
    out
}

fn check_tenant(
    cx: &mut Checker<'_>,
    name: &str,
    value: &Value,
    path: &str,
) -> Option<(TenantConfig, Vec<InterceptorConfig>)> {
    let entries = cx.table(value, path)?;
    let fields = cx.known_keys(entries, path, TENANT_KEYS);
    let mut ok = true;
    if !is_tenant_name(name) {
        cx.error(path, "a tenant's name is 1 to 64 letters, digits, `_`, `-` or `.`");
        ok = false;
    }
    let servers_path = key_path(path, "servers");
    let Some(value) = fields.get("servers") else {
        cx.error(path, "missing `servers` (the names or globs of the servers it reaches)");
        return None;
    };
    let patterns = cx.strings(value, &servers_path)?;
    let mut servers = Vec::with_capacity(patterns.len());
    for (i, pattern) in patterns.into_iter().enumerate() {
        let at = format!("{servers_path}[{i}]");
        match Glob::new(pattern) {
            Ok(_) if !pattern.trim().is_empty() => servers.push(pattern.to_owned()),
            Ok(_) => {
                cx.error(&at, "an empty pattern");
                ok = false;
            }
            Err(error) => {
                cx.error(&at, format!("not a glob: {}", error.kind()));
                ok = false;
            }
        }
    }
    let mut pipeline = Vec::new();
    if let Some(value) = fields.get("pipeline") {
        let at = key_path(path, "pipeline");
        let Value::Array(items) = value else {
            cx.expected(&at, "an array of tables ([[tenants.NAME.pipeline]])", value);
            return None;
        };
        for (i, item) in items.iter().enumerate() {
            match crate::pipeline::check_interceptor(cx, &crate::error::index_path(&at, i), item) {
                Some(mut entry) => {
                    entry.tenants = vec![name.to_owned()];
                    entry.name.get_or_insert_with(|| format!("{}@{name}", entry.kind));
                    pipeline.push(entry);
                }
                None => ok = false,
            }
        }
    }
    ok.then_some((TenantConfig { servers }, pipeline))
}

/// What the rest of the file must agree with: every tenant an API key names is configured,
/// and every pattern matches some server. Errors for the first, warnings for the second.
pub(crate) fn cross_check(
    tenants: &BTreeMap<String, TenantConfig>,
    api_keys: &BTreeMap<String, crate::auth::ApiKeyConfig>,
    servers: &[&str],
) -> (Vec<crate::ConfigError>, Vec<String>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    if tenants.is_empty() {
        return (errors, warnings);
    }
    for (name, key) in api_keys {
        if let Some(tenant) = &key.tenant
            && !tenants.contains_key(tenant)
        {
            errors.push(crate::ConfigError::new(
                key_path(&key_path("auth.api_keys", name), "tenant"),
                format!("tenant `{tenant}` is not under [tenants]: its holder would reach nothing"),
            ));
        }
    }
    for (name, tenant) in tenants {
        for (i, pattern) in tenant.servers.iter().enumerate() {
            let Ok(glob) = Glob::new(pattern) else { continue };
            let glob = glob.compile_matcher();
            if !servers.iter().any(|server| glob.is_match(server)) {
                warnings.push(format!(
                    "tenants.{name}.servers[{i}]: `{pattern}` matches no configured server"
                ));
            }
        }
    }
    (errors, warnings)
}

#[cfg(test)]
mod tests;
