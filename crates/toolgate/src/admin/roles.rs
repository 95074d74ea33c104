//! Who may use the admin API with the front's credentials (`[auth.roles]`): approvers list
//! and decide held calls, admins do everything. A static `[admin] tokens` holder is an admin
//! of the whole gateway, as before roles existed.

use globset::{Glob, GlobSet, GlobSetBuilder};
use toolgate_config::Roles;
use toolgate_intercept::Principal;

/// What a request to the admin API needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// List held calls and decide them.
    Approver,
    /// Everything: events, the pipeline, contracts, approvals.
    Admin,
}

impl Role {
    fn members(self) -> &'static str {
        match self {
            Role::Approver => "approvers or admins",
            Role::Admin => "admins",
        }
    }
}

/// One role's members, compiled.
#[derive(Debug, Default)]
struct Members {
    groups: Vec<String>,
    principals: GlobSet,
}

impl Members {
    fn new(members: &[String]) -> Members {
        let mut groups = Vec::new();
        let mut principals = GlobSetBuilder::new();
        for member in members {
            match member.strip_prefix("group:") {
                Some(group) => groups.push(group.to_owned()),
                // `config check` refused anything that is not a glob.
                None => {
                    if let Ok(glob) = Glob::new(member) {
                        principals.add(glob);
                    }
                }
            }
        }
        Members { groups, principals: principals.build().unwrap_or_else(|_| GlobSet::empty()) }
    }

    fn include(&self, principal: &Principal) -> bool {
        if principal.is_anonymous() {
            return false;
        }
        self.groups.iter().any(|group| principal.in_group(group))
            || self.principals.is_match(format!("{}:{}", principal.kind, principal.id))
    }
}

/// `[auth.roles]`, compiled.
#[derive(Debug, Default)]
pub(crate) struct RoleMembers {
    approvers: Members,
    admins: Members,
}

impl RoleMembers {
    pub(crate) fn new(roles: &Roles) -> RoleMembers {
        RoleMembers {
            approvers: Members::new(&roles.approvers),
            admins: Members::new(&roles.admins),
        }
    }

    /// Whether `principal` has `role` (an admin is an approver too); else why not.
    pub(crate) fn check(&self, principal: &Principal, role: Role) -> Result<(), String> {
        let admin = self.admins.include(principal);
        let allowed = match role {
            Role::Admin => admin,
            Role::Approver => admin || self.approvers.include(principal),
        };
        if allowed {
            return Ok(());
        }
        Err(format!("{principal} is not among [auth.roles] {}", role.members()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles() -> RoleMembers {
        RoleMembers::new(&Roles {
            approvers: vec!["group:oncall".into(), "jwt:bob".into()],
            admins: vec!["key:ops-*".into()],
        })
    }

    #[test]
    fn members_by_group_and_by_principal_and_admins_approve_too() {
        let roles = roles();
        let carol = Principal::new("jwt", "carol").with_groups(vec!["oncall".into()]);
        assert!(roles.check(&carol, Role::Approver).is_ok());
        assert!(roles.check(&carol, Role::Admin).is_err());
        let bob = Principal::new("jwt", "bob").with_tenant(Some("acme".into()));
        assert!(roles.check(&bob, Role::Approver).is_ok(), "in any tenant");
        assert!(roles.check(&Principal::new("key", "bob"), Role::Approver).is_err(), "kind");
        let ops = Principal::new("key", "ops-eu");
        assert!(
            roles.check(&ops, Role::Admin).is_ok() && roles.check(&ops, Role::Approver).is_ok()
        );
        let refused = roles.check(&Principal::new("jwt", "dave"), Role::Admin).unwrap_err();
        assert_eq!(refused, "jwt:dave is not among [auth.roles] admins");
        let refused = roles.check(&Principal::new("jwt", "dave"), Role::Approver).unwrap_err();
        assert_eq!(refused, "jwt:dave is not among [auth.roles] approvers or admins");
    }

    #[test]
    fn strangers_have_no_role_whatever_the_patterns() {
        let roles = RoleMembers::new(&Roles {
            approvers: vec!["jwt:*".into(), "key:*".into()],
            admins: vec!["group:anonymous".into()],
        });
        let stranger = Principal::anonymous().with_groups(vec!["anonymous".into()]);
        assert!(roles.check(&stranger, Role::Approver).is_err());
        assert!(roles.check(&stranger, Role::Admin).is_err());
    }
}
