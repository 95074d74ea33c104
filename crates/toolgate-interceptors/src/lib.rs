//! toolgate's built-in interceptors, one module each; the module name is the config `kind`
//! and the name in audit records (see ARCHITECTURE.md, `toolgate-interceptors`).
//!
//! [`build_pipeline`] turns the `[[pipeline]]` entries of a config into a [`Pipeline`],
//! reporting every problem at once with the entry's path. What interceptors share with the
//! rest of the process (the event bus, the approval desk) comes in [`Services`].
//! [`check_pipeline`] runs the very same code without anything to share, for
//! `toolgate config check`.

pub mod approval;
pub mod arg_map;
pub mod emit;
pub mod enrich;
pub mod integrity;
pub mod limits;
mod options;
pub mod policy;
pub mod redact;
pub mod script;
pub mod test_filter;
pub mod toon;
pub mod transform;
pub mod truncate;
pub mod validate_args;

use std::sync::Arc;

use toolgate_audit::EventBus;
use toolgate_config::InterceptorConfig;
use toolgate_intercept::{Descriptor, Interceptor, Pipeline};

pub use approval::{ApprovalDesk, DecideError};
pub use options::OptionError;

/// What the built-ins share with the rest of the process.
#[derive(Debug, Clone)]
pub struct Services {
    /// Where interceptors publish their own events (approvals).
    pub events: EventBus,
    /// Where `approval` holds calls for the admin API.
    pub approvals: Arc<ApprovalDesk>,
    /// Whether the config has an admin API (`[admin]`), where approvers decide held calls. An
    /// `approval` that sends calls there is refused without one.
    pub admin_api: bool,
    /// The config file's folder: where relative paths in options (`integrity`'s `lock`) are
    /// taken from. `None`: the current directory.
    pub config_dir: Option<std::path::PathBuf>,
    /// Where the `integrity` interceptors keep their pins, for the admin API.
    pub integrity_locks: Arc<integrity::IntegrityLocks>,
    /// `[servers.X] integrity` tables, by server: how `integrity` treats each server.
    pub server_integrity: Vec<(String, serde_json::Map<String, serde_json::Value>)>,
    /// Where interceptors run work in the background (`emit`'s listener and commands), and
    /// what shutdown waits for. `None`: the pipeline is built only to be looked at
    /// (`config check`, `toolgate interceptors`, benches), and nothing may start.
    pub background: Option<tokio_util::task::TaskTracker>,
    /// Where the `truncate` entries keep whole results, for `toolgate__read_result`.
    pub spill: Arc<truncate::spill::SpillStores>,
    /// The scripts `script` entries run, loaded once per file, reloaded by the file watcher.
    pub scripts: Arc<toolgate_scripts::Scripts>,
    /// The limits every script invocation runs under (`[scripts]`).
    pub scripts_limits: toolgate_scripts::Limits,
    /// What the replicas of this gateway share (`[state] backend` Redis or PostgreSQL): held
    /// approvals, their decisions and remembered grants live there, so that any replica
    /// decides a call another holds; `limits` counts its rates there, and `truncate` keeps
    /// whole results there too. `None`: this process is the only one (`memory`), and keeps
    /// them in its own memory.
    pub shared: Option<toolgate_state::SharedState>,
}

impl Services {
    /// Services on `events`, with an empty approval desk and no admin API.
    pub fn new(events: EventBus) -> Services {
        Services {
            approvals: ApprovalDesk::new(events.clone()),
            admin_api: false,
            config_dir: None,
            integrity_locks: Arc::default(),
            server_integrity: Vec::new(),
            background: None,
            spill: Arc::default(),
            scripts: toolgate_scripts::Scripts::new(
                Some(events.clone()),
                toolgate_scripts::Limits::default(),
            ),
            scripts_limits: toolgate_scripts::Limits::default(),
            shared: None,
            events,
        }
    }

    /// The same, sharing approvals (and what else replicas share) through `shared`.
    pub fn with_shared_state(mut self, shared: toolgate_state::SharedState) -> Services {
        self.approvals = ApprovalDesk::shared(self.events.clone(), shared.clone());
        self.shared = Some(shared);
        self
    }

    /// Scripts run under `limits`.
    pub fn with_script_limits(mut self, limits: toolgate_scripts::Limits) -> Services {
        self.scripts = toolgate_scripts::Scripts::new(Some(self.events.clone()), limits);
        self.scripts_limits = limits;
        self
    }

    /// The same, saying whether the config has an admin API.
    pub fn with_admin_api(mut self, admin_api: bool) -> Services {
        self.admin_api = admin_api;
        self
    }

    /// The same, with the `integrity` tables of `servers`.
    pub fn with_servers(mut self, servers: &[toolgate_config::ServerConfig]) -> Services {
        self.server_integrity =
            servers.iter().filter_map(|s| Some((s.name.clone(), s.integrity.clone()?))).collect();
        self
    }

    /// The same, for a pipeline that runs: interceptors may start background work on
    /// `tracker` (call it inside the runtime that serves the calls).
    pub fn with_background(mut self, tracker: tokio_util::task::TaskTracker) -> Services {
        self.background = Some(tracker);
        self
    }

    /// The same, with relative paths in options taken from `dir`.
    pub fn with_config_dir(mut self, dir: Option<std::path::PathBuf>) -> Services {
        self.config_dir = dir;
        self
    }
}

/// The kinds this build knows.
pub const KINDS: &[&str] = &[
    policy::KIND,
    approval::KIND,
    validate_args::KIND,
    arg_map::KIND,
    limits::KIND,
    integrity::KIND,
    truncate::KIND,
    redact::KIND,
    test_filter::KIND,
    enrich::KIND,
    toon::KIND,
    emit::KIND,
    script::KIND,
];

/// Builds the pipeline `entries` describe, or every reason it cannot be built.
pub fn build_pipeline(
    entries: &[InterceptorConfig],
    services: &Services,
) -> Result<Pipeline, Vec<OptionError>> {
    let mut errors = Vec::new();
    if !entries.iter().any(|entry| entry.kind == integrity::KIND) {
        for (server, _) in &services.server_integrity {
            errors.push(OptionError::new(
                format!("servers.{server}.integrity"),
                "has no effect without an `integrity` entry in [[pipeline]] (add \
                 `[[pipeline]]` with `kind = \"integrity\"`)",
            ));
        }
    }
    let mut chain: Vec<Arc<dyn Interceptor>> = Vec::new();
    for entry in entries {
        match build(entry, services) {
            Ok(interceptor) => chain.push(interceptor),
            Err(mut more) => errors.append(&mut more),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Pipeline::new(chain)
        .map_err(|duplicate| vec![OptionError::new("pipeline", duplicate.to_string())])
}

/// Every reason [`build_pipeline`] would refuse `entries` in a config that has (`admin_api`)
/// or has not an `[admin]` section, found by building them with services that nothing else
/// shares (a bus nobody listens to, a desk nobody reads), so that the check and the real build
/// can never disagree. Starts nothing and does no IO.
pub fn check_pipeline(entries: &[InterceptorConfig], admin_api: bool) -> Vec<OptionError> {
    check_config_pipeline(entries, admin_api, &[], None)
}

/// [`check_pipeline`] for a config whose servers are `servers` (their `integrity` tables are
/// checked by the `integrity` interceptor, and need one) and whose relative paths (a
/// `script`'s `file`) start at `config_dir`.
pub fn check_config_pipeline(
    entries: &[InterceptorConfig],
    admin_api: bool,
    servers: &[toolgate_config::ServerConfig],
    config_dir: Option<&std::path::Path>,
) -> Vec<OptionError> {
    let services = Services::new(EventBus::new())
        .with_admin_api(admin_api)
        .with_servers(servers)
        .with_config_dir(config_dir.map(std::path::Path::to_owned));
    build_pipeline(entries, &services).err().unwrap_or_default()
}

fn build(
    entry: &InterceptorConfig,
    services: &Services,
) -> Result<Arc<dyn Interceptor>, Vec<OptionError>> {
    match entry.kind.as_str() {
        policy::KIND => Ok(Arc::new(policy::Policy::from_config(entry)?)),
        validate_args::KIND => Ok(Arc::new(validate_args::ValidateArgs::from_config(entry)?)),
        arg_map::KIND => Ok(Arc::new(arg_map::ArgMap::from_config(entry)?)),
        limits::KIND => Ok(Arc::new(
            limits::Limits::from_config(entry)?.with_shared_state(services.shared.clone()),
        )),
        integrity::KIND => Ok(Arc::new(integrity::Integrity::from_config(entry, services)?)),
        redact::KIND => Ok(Arc::new(redact::Redact::from_config(entry, services)?)),
        toon::KIND => Ok(Arc::new(toon::Toon::from_config(entry, services)?)),
        emit::KIND => Ok(Arc::new(emit::Emit::from_config(entry, services)?)),
        test_filter::KIND => Ok(Arc::new(test_filter::TestFilter::from_config(entry, services)?)),
        enrich::KIND => Ok(Arc::new(enrich::Enrich::from_config(entry, services)?)),
        truncate::KIND => Ok(Arc::new(truncate::Truncate::from_config(entry, services)?)),
        script::KIND => Ok(Arc::new(script::ScriptInterceptor::from_config(entry, services)?)),
        approval::KIND => {
            let approval = approval::Approval::from_config(entry, services.approvals.clone())?;
            match approval.approver_option() {
                Some(option) if !services.admin_api => Err(vec![OptionError::new(
                    format!("{}.{option}", entry.path),
                    "\"external\" needs the admin API, where approvers decide: add an [admin] \
                     section (listen, tokens), or use \"elicit\" or \"deny\"",
                )]),
                _ => Ok(Arc::new(approval)),
            }
        }
        other => Err(vec![OptionError::new(
            format!("{}.kind", entry.path),
            format!("unknown interceptor kind {other:?} (known: {})", KINDS.join(", ")),
        )]),
    }
}

/// Applies the settings every entry has (name, mode, fail_open, priority, timeout, filters)
/// to a kind's default descriptor.
pub(crate) fn configure(
    mut descriptor: Descriptor,
    entry: &InterceptorConfig,
) -> Result<Descriptor, Vec<OptionError>> {
    if let Some(name) = &entry.name {
        descriptor.name = name.clone();
    }
    descriptor.mode = entry.mode;
    if let Some(fail_open) = entry.fail_open {
        descriptor.fail_open = fail_open;
    }
    descriptor.priority = entry.priority;
    if let Some(timeout) = entry.timeout {
        descriptor.timeout = timeout;
    }
    let bad = |what: &str, e: toolgate_intercept::DescriptorError| {
        vec![OptionError::new(format!("{}.{what}", entry.path), e.to_string())]
    };
    descriptor = descriptor.for_tenants(&entry.tenants);
    descriptor = descriptor.for_servers(&entry.servers).map_err(|e| bad("servers", e))?;
    descriptor.for_tools(&entry.tools).map_err(|e| bad("tools", e))
}

/// A `[[pipeline]]` entry of `kind` at `path` with `options`, for tests.
#[cfg(test)]
pub(crate) fn test_entry(kind: &str, path: &str, options: serde_json::Value) -> InterceptorConfig {
    InterceptorConfig::new(path, kind, options.as_object().cloned().expect("options are a table"))
}

#[cfg(test)]
pub(crate) mod props;
#[cfg(test)]
mod tests;
