//! `[tenants]`: what is kept, and what `config check` says about it.

use std::path::Path;

use crate::{FixedEnvironment, Format};

fn parse(text: &str) -> Result<crate::Config, String> {
    crate::parse_str(text, Format::Toml, Path::new("/"), &FixedEnvironment::new())
        .map_err(|errors| errors.to_string())
}

const SERVERS: &str = "[servers.github]\ncommand = \"gh\"\n[servers.jira-a]\ncommand = \"j\"\n";

#[test]
fn each_tenant_keeps_its_patterns() {
    let config = parse(&format!(
        "{SERVERS}[tenants.acme]\nservers = [\"github\", \"jira-*\"]\n[tenants.globex]\nservers = []\n"
    ))
    .expect("valid");
    assert_eq!(config.tenants["acme"].servers, ["github", "jira-*"]);
    assert!(config.tenants["globex"].servers.is_empty(), "a tenant may reach nothing");
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert!(parse(SERVERS).expect("valid").tenants.is_empty());
}

#[test]
fn bad_entries_are_errors_with_their_place() {
    let error = parse("[tenants.acme]\nservers = [\"[\"]\n").unwrap_err();
    assert!(error.contains("tenants.acme.servers[0]: not a glob"), "{error}");
    let error = parse("[tenants.acme]\n").unwrap_err();
    assert!(error.contains("tenants.acme: missing `servers`"), "{error}");
    let error = parse("[tenants.acme]\nservers = []\npolicy = []\n").unwrap_err();
    assert!(error.contains("tenants.acme.policy: unknown key"), "{error}");
    let error = parse("[tenants.\"a b\"]\nservers = []\n").unwrap_err();
    assert!(error.contains("a tenant's name is"), "{error}");
}

#[test]
fn a_key_of_an_unknown_tenant_is_an_error_and_a_pattern_that_matches_nothing_a_warning() {
    let hash = format!("sha256:{}", "ab".repeat(32));
    let text = format!(
        "{SERVERS}[tenants.acme]\nservers = [\"gitlab\"]\n[auth.api_keys]\n\
         ci = {{ hash = \"{hash}\", tenant = \"acme\" }}\n\
         bot = {{ hash = \"{hash}\", tenant = \"initech\" }}\n"
    );
    let error = parse(&text).unwrap_err();
    assert!(error.contains("auth.api_keys.bot.tenant: tenant `initech` is not under [tenants]"));
    assert!(!error.contains("api_keys.ci"), "{error}");
    let text = text.replace("tenant = \"initech\"", "tenant = \"acme\"");
    let config = parse(&text).expect("valid");
    assert_eq!(config.warnings, ["tenants.acme.servers[0]: `gitlab` matches no configured server"]);
}

#[test]
fn a_tenants_pipeline_entries_are_for_it_only_and_named_for_it() {
    let config = parse(&format!(
        "{SERVERS}[[pipeline]]\nkind = \"limits\"\n\
         [tenants.acme]\nservers = [\"github\"]\n\
         [[tenants.acme.pipeline]]\nkind = \"limits\"\nserver.github = {{ rate = \"1/s\" }}\n\
         [[tenants.acme.pipeline]]\nkind = \"redact\"\nname = \"acme-redact\"\n"
    ))
    .expect("valid");
    let entries: Vec<(&str, Option<&str>, Vec<String>)> = config
        .pipeline
        .iter()
        .map(|e| (e.path.as_str(), e.name.as_deref(), e.tenants.clone()))
        .collect();
    assert_eq!(
        entries,
        [
            ("pipeline[0]", None, vec![]),
            ("tenants.acme.pipeline[0]", Some("limits@acme"), vec!["acme".to_owned()]),
            ("tenants.acme.pipeline[1]", Some("acme-redact"), vec!["acme".to_owned()]),
        ]
    );
    let error = parse("[tenants.acme]\nservers = []\n[[tenants.acme.pipeline]]\nmode = \"x\"\n")
        .unwrap_err();
    assert!(error.contains("tenants.acme.pipeline[0]: missing `kind`"), "{error}");
}
