//! Which servers a caller reaches, by its tenant (`[tenants]`).
//!
//! Without tenants every caller reaches every server. With them, a caller from the network
//! (an HTTP client, whatever its kind) reaches only its tenant's servers; one without a tenant
//! only the servers no tenant names; one whose tenant is not configured, none. Callers on this
//! machine (`Principal::is_here`: `local` on stdio, `agent`, `cli`) and toolgate's own tools
//! reach everything. A server a caller does not reach is not there for it: its tools, prompts,
//! resources and templates are left out of its lists, and asking for one by name is answered
//! as for a name that does not exist, so one tenant cannot even learn another's tool names.

use std::collections::{BTreeMap, HashMap};

use globset::{Glob, GlobSet, GlobSetBuilder};
use toolgate_config::TenantConfig;
use toolgate_intercept::{OWN_SERVER, Principal};

/// `[tenants]`, compiled.
#[derive(Debug, Default)]
pub struct Tenants {
    by_name: HashMap<String, GlobSet>,
    /// Every tenant's patterns: the servers some tenant names.
    claimed: GlobSet,
}

/// A `[tenants.NAME] servers` pattern that is not a glob (`config check` reports it first).
#[derive(Debug, thiserror::Error)]
#[error("tenants.{tenant}.servers: {pattern:?} is not a glob: {reason}")]
pub struct TenantsError {
    tenant: String,
    pattern: String,
    reason: String,
}

impl Tenants {
    /// From `[tenants]`.
    pub fn new(config: &BTreeMap<String, TenantConfig>) -> Result<Tenants, TenantsError> {
        let mut by_name = HashMap::with_capacity(config.len());
        let mut claimed = GlobSetBuilder::new();
        for (name, tenant) in config {
            let mut own = GlobSetBuilder::new();
            for pattern in &tenant.servers {
                let glob = Glob::new(pattern).map_err(|error| TenantsError {
                    tenant: name.clone(),
                    pattern: pattern.clone(),
                    reason: error.kind().to_string(),
                })?;
                own.add(glob.clone());
                claimed.add(glob);
            }
            let own = own.build().map_err(|error| TenantsError {
                tenant: name.clone(),
                pattern: tenant.servers.join(", "),
                reason: error.to_string(),
            })?;
            by_name.insert(name.clone(), own);
        }
        let claimed = claimed.build().map_err(|error| TenantsError {
            tenant: "*".into(),
            pattern: String::new(),
            reason: error.to_string(),
        })?;
        Ok(Tenants { by_name, claimed })
    }

    /// Whether there are none (every caller reaches every server).
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Whether `principal` reaches `server`.
    pub fn reaches(&self, principal: &Principal, server: &str) -> bool {
        if self.is_empty() || server == OWN_SERVER || principal.is_here() {
            return true;
        }
        match &principal.tenant {
            Some(tenant) => self.by_name.get(tenant).is_some_and(|own| own.is_match(server)),
            None => !self.claimed.is_match(server),
        }
    }

    /// Whether `principal` reaches every server, so nothing needs filtering for it.
    pub fn reaches_all(&self, principal: &Principal) -> bool {
        self.is_empty() || principal.is_here()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenants() -> Tenants {
        let mut config = BTreeMap::new();
        config.insert(
            "acme".into(),
            TenantConfig { servers: vec!["github".into(), "jira-*".into()] },
        );
        config.insert("globex".into(), TenantConfig { servers: vec!["linear".into()] });
        Tenants::new(&config).unwrap()
    }

    fn of(tenant: Option<&str>) -> Principal {
        Principal::new("jwt", "alice").with_tenant(tenant.map(str::to_owned))
    }

    #[test]
    fn a_tenant_reaches_its_servers_only() {
        let tenants = tenants();
        let acme = of(Some("acme"));
        assert!(tenants.reaches(&acme, "github") && tenants.reaches(&acme, "jira-eu"));
        assert!(!tenants.reaches(&acme, "linear"), "globex's");
        assert!(!tenants.reaches(&acme, "shared"), "named by no tenant");
        assert!(tenants.reaches(&acme, OWN_SERVER), "toolgate's own tools");
        assert!(!tenants.reaches_all(&acme));
        let unknown = of(Some("initech"));
        assert!(!tenants.reaches(&unknown, "github") && !tenants.reaches(&unknown, "shared"));
    }

    #[test]
    fn a_caller_without_a_tenant_reaches_what_no_tenant_names() {
        let tenants = tenants();
        let introspected = Principal::new("token", "ci");
        let unheard_of = Principal::new("saml", "ci");
        for nobody in [
            of(None),
            Principal::anonymous(),
            Principal::new("key", "ci"),
            introspected,
            unheard_of,
        ] {
            assert!(tenants.reaches(&nobody, "shared"), "{nobody}");
            assert!(!tenants.reaches(&nobody, "github"), "{nobody}");
            assert!(!tenants.reaches(&nobody, "linear"), "{nobody}");
        }
    }

    #[test]
    fn this_machine_reaches_everything_and_so_does_everyone_without_tenants() {
        let tenants = tenants();
        for here in
            [Principal::local(), Principal::new("agent", "ann"), Principal::new("cli", "ann")]
        {
            assert!(tenants.reaches_all(&here) && tenants.reaches(&here, "linear"), "{here}");
        }
        let none = Tenants::default();
        assert!(none.reaches_all(&of(Some("acme"))) && none.reaches(&of(Some("x")), "linear"));
    }
}
