//! From text to [`Config`]: parse, check, follow `import`, merge, and report everything found.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::Checked;
use crate::agent::PROVIDER_KEY_VARS;
use crate::check::{Checker, Entry, duplicate_prefixes};
use crate::dialect::{Dialect, codex, continue_dev, goose, zed};
use crate::env::Environment;
use crate::error::{ConfigError, ConfigErrors, io_reason};
use crate::model::{
    AgentConfig, AuditConfig, Config, GatewayConfig, InterceptorConfig, LlmConfig, ProxyChoice,
    ProxyConfig, ResponseStore, ScriptsConfig, ServerConfig, StateBackend, TransportConfig,
};
use crate::value::{Syntax, Value, parse_json, parse_toml, parse_yaml};
use crate::{Format, client, native, smg};

/// Reads and checks the file at `path` (relative to `env`'s current directory).
pub(crate) fn check_file(path: &Path, env: &dyn Environment) -> Checked {
    let path = absolute(path, env);
    let (config, errors) = match std::fs::read_to_string(&path) {
        Ok(text) => {
            let format = Format::from_path(&path).unwrap_or_else(|| Format::sniff(&text));
            let base_dir = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
            check_str(&text, format, Some(&path), &base_dir, env)
        }
        Err(error) => {
            let message = format!("cannot read {}: {}", path.display(), io_reason(&error));
            (Config::default(), vec![ConfigError::new("", message)])
        }
    };
    let errors = ConfigErrors::from_vec(errors).with_file(&path);
    Checked { path, config, errors }
}

/// Checks a whole document given as text.
pub(crate) fn parse_str(
    text: &str,
    format: Format,
    base_dir: &Path,
    env: &dyn Environment,
) -> Result<Config, ConfigErrors> {
    match check_str(text, format, None, base_dir, env) {
        (config, errors) if errors.is_empty() => Ok(config),
        (_, errors) => Err(ConfigErrors::from_vec(errors)),
    }
}

/// Checks a whole document given as text (read from `path`, when it was): what is valid in it,
/// and every problem.
fn check_str(
    text: &str,
    format: Format,
    path: Option<&Path>,
    base_dir: &Path,
    env: &dyn Environment,
) -> (Config, Vec<ConfigError>) {
    let root = match parse(text, format) {
        Ok(root) => root,
        Err(error) => return (Config::default(), vec![error]),
    };
    let mut cx = Checker::new(env, syntax(format), None, base_dir);
    let mut telemetry = None;
    let mut state = None;
    let mut inventory = None;
    let dialect = Dialect::recognise(format, path, &root);
    let (gateway, servers, pipeline, audit, admin, agent, llm, scripts, auth, tenants, proxy) =
        match dialect {
            Dialect::Native => {
                let mut document = native::check(&mut cx, &root);
                telemetry = document.telemetry.take();
                state = document.state.take();
                inventory = document.inventory.take();
                let mut servers = document.servers;
                let mut pipeline = document.pipeline;
                pipeline.extend(document.tenant_pipeline);
                // Imports are MCP client configs: they add servers and nothing else, so
                // `[agent]`, `[llm]`, `[scripts]` and `[auth]` come from this file alone.
                for import in &document.imports {
                    servers.extend(import_file(&mut cx, &import.path, &import.file));
                }
                (
                    document.gateway,
                    servers,
                    pipeline,
                    document.audit,
                    document.admin,
                    document.agent,
                    document.llm,
                    document.scripts,
                    document.auth,
                    document.tenants,
                    document.proxy,
                )
            }
            Dialect::Smg => {
                // smg-mcp's file holds servers, its policy and its proxy; the rest of
                // toolgate's settings are at their defaults.
                let document = smg::check(&mut cx, &root);
                (
                    GatewayConfig::default(),
                    document.servers,
                    document.pipeline,
                    AuditConfig::default(),
                    None,
                    AgentConfig::default(),
                    LlmConfig { pool: document.pool, ..LlmConfig::default() },
                    ScriptsConfig::default(),
                    None,
                    BTreeMap::new(),
                    document.proxy,
                )
            }
            // A client's file holds servers only.
            client => (
                GatewayConfig::default(),
                client_servers(&mut cx, client, &root).unwrap_or_default(),
                Vec::new(),
                AuditConfig::default(),
                None,
                AgentConfig::default(),
                LlmConfig::default(),
                ScriptsConfig::default(),
                None,
                BTreeMap::new(),
                None,
            ),
        };
    let telemetry = crate::telemetry::check_telemetry(&mut cx, telemetry.as_ref());
    let state = crate::state::check_state(&mut cx, state.as_ref());
    let mut servers = servers;
    if let Some(inventory) = inventory {
        let defaults = crate::inventory::check_inventory(&mut cx, Some(&inventory));
        for entry in &mut servers {
            entry.server.refresh = entry.server.refresh.or(defaults);
        }
    }
    let pinned = servers
        .iter()
        .filter_map(|entry| Some((entry.server.name.as_str(), entry.server.replica.as_deref()?)));
    crate::state::check_pins(&mut cx, &state, pinned);
    if gateway.llm_api {
        check_response_store(&mut cx, &llm, &state.backend);
    }
    let secret_env = secret_env(cx.secret_vars(), &agent, &llm, &pipeline);
    let (mut errors, mut warnings) = cx.finish();
    errors.extend(duplicate_names(&servers));
    errors.extend(duplicate_prefixes(&servers));
    let names: Vec<&str> = servers.iter().map(|entry| entry.server.name.as_str()).collect();
    let no_keys = BTreeMap::new();
    let keys = auth.as_ref().map_or(&no_keys, |auth| &auth.api_keys);
    let (tenant_errors, tenant_warnings) = crate::tenants::cross_check(&tenants, keys, &names);

    errors.extend(tenant_errors);
    warnings.extend(tenant_warnings);
    let mut servers: Vec<_> = servers.into_iter().map(|entry| entry.server).collect();
    // A server defined twice was reported above; the first definition is the one kept.
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    servers.dedup_by(|later, first| later.name == first.name);
    withhold(&mut servers, &secret_env);
    if let Some(proxy) = &proxy {
        apply_proxy(&mut servers, proxy);
    }
    let config = Config {
        gateway,
        servers,
        pipeline,
        audit,
        admin,
        agent,
        llm,
        scripts,
        auth,
        tenants,
        warnings,
        secret_env,
        proxy,
        telemetry,
        state,
    };
    (config, errors)
}

/// Where `/v1/responses` conversations are kept, against `[state]`: replicas that share state
/// but keep conversations each in a file of their own lose a conversation whose next turn
/// reaches another replica; `"state"` on the `memory` backend keeps them in this process only;
/// and the shared state keeps nothing longer than 30 days.
fn check_response_store(cx: &mut Checker<'_>, llm: &LlmConfig, backend: &StateBackend) {
    let shared = !matches!(backend, StateBackend::Memory);
    match &llm.store {
        Some(ResponseStore::Sqlite(_)) if shared => cx.warn(
            "llm.store",
            "each replica keeps /v1/responses conversations in its own SQLite file, so a \
             `previous_response_id` that reaches another replica is not found: with a shared \
             [state] backend, leave store out (or say \"state\") to keep them there",
        ),
        Some(ResponseStore::State) if !shared => cx.warn(
            "llm.store",
            "\"state\" with [state] backend = \"memory\" keeps /v1/responses conversations in \
             this process's memory, lost when it stops",
        ),
        _ => {}
    }
    let in_state =
        matches!(llm.store, Some(ResponseStore::State)) || (shared && llm.store.is_none());
    if in_state && llm.store_ttl.is_some_and(|ttl| ttl > STATE_MAX_TTL) {
        cx.warn(
            "llm.store_ttl",
            "the shared state keeps nothing longer than 30 days: stored responses are gone \
             after 30 days",
        );
    }
}

/// The longest the shared state keeps a key (`toolgate_state::MAX_TTL`).
const STATE_MAX_TTL: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// Where toolgate's own secrets come from ([`Config::secret_env`]): the variables its secret
/// fields interpolated (`interpolated`), `[agent] api_key_env`, each `api_key_env` of
/// `[llm.models]` and each `api_key_env` option of a `[[pipeline]]` entry (`enrich`'s), and
/// the providers' usual key variables.
fn secret_env(
    interpolated: &BTreeSet<String>,
    agent: &AgentConfig,
    llm: &LlmConfig,
    pipeline: &[InterceptorConfig],
) -> BTreeSet<String> {
    let mut names = interpolated.clone();
    names.extend(PROVIDER_KEY_VARS.iter().map(|name| (*name).to_owned()));
    names.extend(agent.api_key_env.clone());
    names.extend(llm.models.values().filter_map(|model| model.api_key_env.clone()));
    names.extend(
        pipeline
            .iter()
            .filter_map(|entry| entry.options.get("api_key_env")?.as_str())
            .map(str::to_owned),
    );
    names
}

/// Makes every stdio server in `servers` withhold `secret_env` from its child.
pub(crate) fn withhold(servers: &mut [ServerConfig], secret_env: &BTreeSet<String>) {
    for server in servers {
        if let TransportConfig::Stdio(stdio) = &mut server.transport {
            stdio.withheld.clone_from(secret_env);
        }
    }
}

/// Makes `[proxy]` the proxy of every HTTP server that has no `proxy` of its own (imported
/// ones included).
pub(crate) fn apply_proxy(servers: &mut [ServerConfig], proxy: &ProxyConfig) {
    for server in servers {
        if let TransportConfig::Http(http) = &mut server.transport
            && http.proxy == ProxyChoice::Environment
        {
            http.proxy = ProxyChoice::Via(proxy.clone());
        }
    }
}

/// Parses `text` as `format`.
fn parse(text: &str, format: Format) -> Result<Value, ConfigError> {
    match format {
        Format::Toml => parse_toml(text),
        Format::Json => parse_json(text),
        Format::Yaml => parse_yaml(text),
    }
}

fn syntax(format: Format) -> Syntax {
    match format {
        Format::Toml => Syntax::Toml,
        Format::Json => Syntax::Json,
        Format::Yaml => Syntax::Yaml,
    }
}

/// The servers of an MCP client's document; `None` when `dialect` is not a client's.
fn client_servers(cx: &mut Checker<'_>, dialect: Dialect, root: &Value) -> Option<Vec<Entry>> {
    match dialect {
        Dialect::Client => Some(client::check(cx, root)),
        Dialect::Zed => Some(zed::check(cx, root)),
        Dialect::Codex => Some(codex::check(cx, root)),
        Dialect::Goose => Some(goose::check(cx, root)),
        Dialect::Continue => Some(continue_dev::check(cx, root)),
        Dialect::Native | Dialect::Smg => None,
    }
}

/// Reads the client config `file` named at `path` (`import[i]`); its errors and warnings go to
/// `cx`, prefixed by `file`.
fn import_file(cx: &mut Checker<'_>, path: &str, file: &str) -> Vec<Entry> {
    let Some(expanded) = cx.interpolate(file, path) else { return Vec::new() };
    let resolved = cx.resolve_path(&expanded);
    let Some(format) = Format::from_path(&resolved) else {
        let message = format!(
            "cannot import {file:?}: the name must end in .json, .jsonc, .toml, .yaml or .yml"
        );
        cx.error(path, message);
        return Vec::new();
    };
    let text = match std::fs::read_to_string(&resolved) {
        Ok(text) => text,
        Err(error) => {
            cx.error(path, format!("cannot read {file:?}: {}", io_reason(&error)));
            return Vec::new();
        }
    };
    let base_dir = resolved.parent().map_or_else(PathBuf::new, Path::to_path_buf);
    let mut imported = Checker::new(cx.env(), syntax(format), Some(file.to_owned()), &base_dir);
    let servers = match parse(&text, format) {
        Ok(root) => {
            let dialect = Dialect::recognise(format, Some(&resolved), &root);
            match client_servers(&mut imported, dialect, &root) {
                Some(servers) => servers,
                None => {
                    let what = dialect.describe();
                    cx.error(
                        path,
                        format!(
                            "cannot import {file:?}: it is {what}, and only MCP clients' configs \
                             can be imported"
                        ),
                    );
                    return Vec::new();
                }
            }
        }
        Err(error) => {
            imported.error("", error.message);
            Vec::new()
        }
    };
    cx.absorb(imported);
    servers
}

/// Reports servers defined more than once (in the TOML and an import, or in two imports).
fn duplicate_names(entries: &[Entry]) -> Vec<ConfigError> {
    let mut errors = Vec::new();
    let mut first = BTreeMap::<&str, &Entry>::new();
    for entry in entries {
        match first.get(entry.server.name.as_str()) {
            Some(other) => errors.push(ConfigError::new(
                entry.place.clone(),
                format!("server {:?} is also defined at {}", entry.server.name, other.place),
            )),
            None => {
                first.insert(&entry.server.name, entry);
            }
        }
    }
    errors
}

/// `path`, made absolute with `env`'s current directory when it is relative.
pub(crate) fn absolute(path: &Path, env: &dyn Environment) -> PathBuf {
    match env.current_dir() {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod props;
