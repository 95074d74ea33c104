//! What every subcommand does first: logging, config, connecting the gateway.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use toolgate_audit::EventBus;
use toolgate_config::{Config, ServerConfig, StdioConfig, TransportConfig};
use toolgate_gateway::{Gateway, Recorder, ScriptTools, StartupWait};
use toolgate_interceptors::{ApprovalDesk, Services};
use tracing_subscriber::EnvFilter;

use crate::GlobalArgs;
use crate::events::Events;

/// `[audit] required`: how long a call waits for the audit log to have its record before it
/// is refused (a write to the page cache takes microseconds; this is for a stalled disk).
const AUDIT_WRITE_AHEAD: std::time::Duration = std::time::Duration::from_secs(5);

pub(crate) use crate::usage::{EXIT_USAGE, InvalidConfig, InvalidPipeline, Usage, usage};

/// The exit code for an error that ended a command.
pub(crate) fn exit_code_for(error: &anyhow::Error) -> ExitCode {
    if error.chain().any(|cause| {
        cause.downcast_ref::<InvalidConfig>().is_some()
            || cause.downcast_ref::<InvalidPipeline>().is_some()
            || cause.downcast_ref::<Usage>().is_some()
            || cause.downcast_ref::<crate::events::InvalidAudit>().is_some()
            || cause.downcast_ref::<crate::trust::Untrusted>().is_some()
    }) {
        ExitCode::from(EXIT_USAGE)
    } else {
        ExitCode::FAILURE
    }
}

/// Sends logs to stderr, filtered by `--log` / `TOOLGATE_LOG`, else `RUST_LOG`, else `default`.
/// rmcp's own logs are limited to errors unless the filter names `rmcp`: toolgate logs what
/// they would say, with the server name.
///
/// Whatever the filter says, rmcp never logs below `warn`: its `info`, `debug` and `trace`
/// lines print whole messages (a call's arguments, a tool's result, a notification's data),
/// so they would write every secret the `redact` interceptor keeps from the client, and every
/// argument the audit log records redacted, to stderr (see [`RMCP_MOST_VERBOSE`]). Every line
/// is also scrubbed of what the detectors find ([`crate::scrub`]).
pub(crate) fn init_logging(global: &GlobalArgs, default: &str) {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    let default = format!("{default},rmcp=off");
    let filter = global
        .log
        .clone()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .map(|filter| if filter.contains("rmcp") { filter } else { format!("{filter},rmcp=error") })
        .unwrap_or_else(|| default.clone());
    let filter = EnvFilter::try_new(&filter).unwrap_or_else(|_| EnvFilter::new(&default));
    let rmcp_capped = tracing_subscriber::filter::filter_fn(|meta| {
        !is_rmcp(meta.target()) || *meta.level() <= RMCP_MOST_VERBOSE
    });
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(crate::scrub::ScrubbedStderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .with_filter(rmcp_capped);
    let _ = tracing_subscriber::registry().with(filter).with(layer).try_init();
}

/// The most verbose level of rmcp's logs that is ever written: rmcp's `info` and more
/// verbose lines print whole MCP messages (`received request`, `response message`, `received
/// notification`).
pub(crate) const RMCP_MOST_VERBOSE: tracing::Level = tracing::Level::WARN;

/// Whether a log target is rmcp's.
fn is_rmcp(target: &str) -> bool {
    target == "rmcp" || target.starts_with("rmcp::")
}

/// Where the config came from.
pub(crate) enum ConfigSource {
    /// A file.
    File(PathBuf),
    /// Nothing was found: the built-in demo.
    Demo,
    /// Nothing was found, and nothing stands in for it (the agent: a plain chat).
    Absent,
}

impl ConfigSource {
    /// The config file's folder, where relative paths in it are taken from.
    pub(crate) fn dir(&self) -> Option<PathBuf> {
        match self {
            ConfigSource::File(path) => path.parent().map(std::path::Path::to_path_buf),
            ConfigSource::Demo | ConfigSource::Absent => None,
        }
    }
}

/// Finds and loads the config, or falls back to the demo.
pub(crate) fn load_config(global: &GlobalArgs) -> anyhow::Result<(Config, ConfigSource)> {
    match load(global)? {
        Some(loaded) => Ok((loaded.config, ConfigSource::File(loaded.path))),
        None => Ok((demo_config()?, ConfigSource::Demo)),
    }
}

/// Finds the config (a `toolgate.toml` found in the working directory only when it is
/// trusted: [`crate::trust::discover`]) and loads it, logging its warnings; `None` when there
/// is none anywhere.
pub(crate) fn load(global: &GlobalArgs) -> anyhow::Result<Option<toolgate_config::Loaded>> {
    let Some(path) = crate::trust::discover(global)? else { return Ok(None) };
    let env = toolgate_config::SystemEnvironment;
    let config = toolgate_config::load_file(&path, &env)
        .map_err(|errors| InvalidConfig { path: global.config.clone(), errors })?;
    for warning in &config.warnings {
        tracing::warn!("{}: {warning}", path.display());
    }
    Ok(Some(toolgate_config::Loaded { path, config }))
}

/// One upstream: this very binary running its built-in demo server, with an emptied
/// environment (nothing of the gateway's environment, API keys included, reaches it).
fn demo_config() -> anyhow::Result<Config> {
    let exe = std::env::current_exe().context("cannot find toolgate's own executable")?;
    let server = ServerConfig {
        startup_timeout: Duration::from_secs(10),
        required: true,
        ..ServerConfig::new(
            "demo",
            TransportConfig::Stdio(StdioConfig {
                env_remove: vec!["*".into()],
                ..StdioConfig::new(exe.to_string_lossy(), vec!["demo-server".into()])
            }),
        )
    };
    Ok(Config { servers: vec![server], ..Config::default() })
}

/// The folders scripts are loaded from: `[scripts] dirs`, else `.toolgate/scripts` beside the
/// config (none without a config file).
pub(crate) fn script_folders(config: &Config, config_dir: Option<&Path>) -> Vec<PathBuf> {
    if !config.scripts.dirs.is_empty() {
        return config.scripts.dirs.clone();
    }
    config_dir.map(|dir| vec![dir.join(".toolgate").join("scripts")]).unwrap_or_default()
}

/// The limits of every script invocation, from `[scripts]`.
pub(crate) fn script_limits(config: &Config) -> toolgate_scripts::Limits {
    let defaults = toolgate_scripts::Limits::default();
    let size =
        |n: Option<u64>, default: usize| n.and_then(|n| usize::try_from(n).ok()).unwrap_or(default);
    toolgate_scripts::Limits {
        instructions: size(config.scripts.instructions, defaults.instructions),
        memory: size(config.scripts.memory, defaults.memory),
        timeout: config.scripts.timeout.unwrap_or(defaults.timeout),
    }
}

/// `[[pipeline]]` and an entry for each script found in the script folders that no entry
/// names.
pub(crate) fn pipeline_entries(
    config: &Config,
    config_dir: Option<&Path>,
) -> Vec<toolgate_config::InterceptorConfig> {
    toolgate_interceptors::script::discovered(
        &config.pipeline,
        &script_folders(config, config_dir),
        config_dir,
    )
}

/// How long one call of a script's own tool may take (`[scripts] tool_timeout`).
fn script_tool_timeout(config: &Config) -> Duration {
    config.scripts.tool_timeout.unwrap_or(toolgate_scripts::DEFAULT_TOOL_TIMEOUT)
}

/// The servers of the scripts' own tools, on their own (no pipeline, no events, and no
/// `toolgate::call`): for `pin` and `scan`, which look at what is offered. A script that does
/// not compile is left out, with a warning.
pub(crate) fn script_servers(
    config: &Config,
    config_dir: Option<&Path>,
) -> Vec<toolgate_gateway::InProcess> {
    scripts_alone(config, config_dir).initial()
}

/// Why a script that lists tools cannot serve them (`config check`'s warnings).
pub(crate) fn script_tool_problems(config: &Config, config_dir: Option<&Path>) -> Vec<String> {
    scripts_alone(config, config_dir).problems()
}

/// The scripts `serve` would load, each compiled on its own (one that does not compile is
/// left out: the pipeline's check reports it), and their tools.
fn scripts_alone(config: &Config, config_dir: Option<&Path>) -> Arc<ScriptTools> {
    let scripts = toolgate_scripts::Scripts::new(None, script_limits(config));
    let entries = pipeline_entries(config, config_dir);
    for file in toolgate_interceptors::script::files(&entries, config_dir) {
        if let Err(error) = scripts.load(&file) {
            tracing::debug!(script = %file.display(), "the script is left out: {error}");
        }
    }
    ScriptTools::new(scripts, script_tool_timeout(config), &config.servers)
}

/// A started gateway and what runs beside it.
pub(crate) struct Running {
    pub(crate) gateway: Arc<Gateway>,
    /// Calls held for approval, for the admin API.
    pub(crate) approvals: Arc<ApprovalDesk>,
    /// The `integrity` interceptors' lock files, for the admin API.
    pub(crate) integrity_locks: Arc<toolgate_interceptors::integrity::IntegrityLocks>,
    /// What `GET /metrics` shows, when something serves it (`[admin]`, or `[gateway]
    /// metrics`).
    pub(crate) metrics: Option<Arc<crate::metrics::Metrics>>,
    /// What this replica shares with the others (`[state] backend` Redis or PostgreSQL);
    /// `None` when it is the only one.
    pub(crate) shared: Option<toolgate_state::SharedState>,
    /// The servers pinned to this replica or another (`[servers.NAME] replica`).
    pins: toolgate_gateway::pinned::Pins,
    /// What interceptors run in the background (`emit`'s commands).
    background: tokio_util::task::TaskTracker,
    events: Events,
    /// Keeps the script files watched.
    _watcher: Option<toolgate_scripts::watch::Watcher>,
}

impl Running {
    /// Ends the upstreams, waits for what interceptors run in the background (each bounded
    /// by its own timeout), then lets the event sinks write what is queued.
    pub(crate) async fn shutdown(self) {
        self.pins.stop();
        self.gateway.shutdown().await;
        self.background.close();
        self.background.wait().await;
        self.events.finish().await;
    }
}

impl std::ops::Deref for Running {
    type Target = Arc<Gateway>;

    fn deref(&self) -> &Arc<Gateway> {
        &self.gateway
    }
}

/// The state replicas share, when `[state] backend` names Redis or PostgreSQL. A backend
/// that cannot be reached now is a warning (shared operations fail fast until it can be); one
/// that refuses the connection, or a URL that cannot be used, is an error.
async fn shared_state(
    state: &toolgate_config::StateConfig,
) -> anyhow::Result<Option<toolgate_state::SharedState>> {
    if matches!(state.backend, toolgate_config::StateBackend::Memory) {
        return Ok(None);
    }
    let shared =
        toolgate_state::SharedState::connect(state).await.context("cannot use [state] backend")?;
    tracing::info!(backend = shared.backend(), target = shared.target(), "sharing state");
    Ok(Some(shared))
}

/// Builds the pipeline, starts the event sinks, and starts every enabled server, waiting for
/// their first connection attempts as `wait` says. The pipeline comes first: a config it
/// refuses leaves no audit log created and no sink started.
pub(crate) async fn start(
    config: &Config,
    source: &ConfigSource,
    wait: StartupWait,
) -> anyhow::Result<Running> {
    crate::telemetry::start(&config.telemetry)?;
    let bus = EventBus::new();
    let background = tokio_util::task::TaskTracker::new();
    let shared = shared_state(&config.state).await?;
    let mut services = Services::new(bus.clone());
    if let Some(shared) = &shared {
        services = services.with_shared_state(shared.clone());
    }
    let services = services
        .with_background(background.clone())
        .with_admin_api(config.admin.is_some())
        .with_servers(&config.servers)
        .with_config_dir(source.dir())
        .with_script_limits(script_limits(config));
    let entries = pipeline_entries(config, source.dir().as_deref());
    let pipeline =
        toolgate_interceptors::build_pipeline(&entries, &services).map_err(InvalidPipeline)?;
    let script_tools =
        ScriptTools::new(services.scripts.clone(), script_tool_timeout(config), &config.servers);
    let watcher = if config.scripts.watch {
        let folders = script_folders(config, source.dir().as_deref());
        let discovery =
            toolgate_interceptors::script::Discovery::new(&folders, &entries, &services, &pipeline);
        watch_scripts(discovery, script_tools.clone())
    } else {
        None
    };
    let events = Events::start(&config.audit, bus)?;
    // The audit log's detectors, and what every `redact` interceptor looks for: a value the
    // pipeline redacts is not written to the audit log either (`tools/call/started` records
    // the caller's arguments before the pipeline runs).
    let mut detection = events.detect().clone();
    detection.extend(&toolgate_interceptors::redact::selection(&config.pipeline));
    // The log is scrubbed of the same (every kind until now).
    crate::scrub::set_detection(detection.clone());
    // Subscribed before the gateway starts, to count its first connections.
    let metrics_feed = (config.admin.is_some() || config.gateway.metrics).then(|| {
        events.bus().subscribe(toolgate_audit::EventPattern::all(), toolgate_audit::SINK_CAPACITY)
    });
    let mut recorder =
        Recorder::new(events.bus().clone(), events.redact().to_vec()).with_detection(detection);
    if let Some(key) = &config.audit.hash_key {
        recorder = recorder.with_hash_key(key.expose().as_bytes().to_vec());
    }
    if config.audit.required {
        recorder = recorder.with_write_ahead(AUDIT_WRITE_AHEAD);
    }
    let tenants =
        toolgate_gateway::Tenants::new(&config.tenants).context("cannot use [tenants]")?;
    let logins = crate::logins::for_serving();
    let pins = toolgate_gateway::pinned::Pins::new(
        &config.servers,
        config.state.replica.as_deref(),
        shared.clone(),
        toolgate_gateway::pinned::Timing::default(),
    );
    let mut in_process = script_tools.initial();
    in_process.extend(pins.remote_servers());
    let gateway = Gateway::start_with(
        pins.local_servers(),
        in_process,
        wait,
        pipeline,
        recorder,
        logins.as_ref(),
    )
    .await;
    // Before any front serves a request: nothing is answered without its tenant's view.
    gateway.set_tenants(tenants);
    gateway.set_public_url(config.gateway.public_url.as_ref());
    script_tools.attach(&gateway);
    pins.attach(&gateway);
    // Scripts that came or went while the gateway started.
    script_tools.sync().await;
    let metrics = metrics_feed.map(|feed| {
        let sources = crate::metrics::Sources {
            bus: events.bus().clone(),
            gateway: gateway.clone(),
            approvals: services.approvals.clone(),
            spill: services.spill.clone(),
            models: model_names(config),
        };
        crate::metrics::Metrics::start(feed, sources)
    });
    Ok(Running {
        gateway,
        shared,
        pins,
        metrics,
        approvals: services.approvals,
        integrity_locks: services.integrity_locks,
        background,
        events,
        _watcher: watcher,
    })
}

/// The model names the config gives, which the metrics label models by: the names of
/// `[llm.models]` and `[agent] model`.
fn model_names(config: &Config) -> std::collections::BTreeSet<String> {
    config.llm.models.keys().cloned().chain(config.agent.model.clone()).collect()
}

/// Watches the script folders and the folders of every script loaded, and applies changes
/// as they come (to the pipeline, then to the scripts' tools); `None` when there is nothing to watch or the watch could not start (said in
/// the log).
fn watch_scripts(
    discovery: toolgate_interceptors::script::Discovery,
    tools: Arc<ScriptTools>,
) -> Option<toolgate_scripts::watch::Watcher> {
    let watched = discovery.watched();
    if !watched.iter().any(|f| f.is_dir()) {
        return None;
    }
    let watcher = toolgate_scripts::watch::watch(&watched, move |paths| {
        discovery.apply(&paths);
        let tools = tools.clone();
        tokio::spawn(async move { tools.sync().await });
    });
    match watcher {
        Ok(watcher) => Some(watcher),
        Err(error) => {
            tracing::warn!(%error, "script files cannot be watched; changes need a restart");
            None
        }
    }
}

/// [`start`], failing when a `required` server did not come up.
pub(crate) async fn connect(
    config: &Config,
    source: &ConfigSource,
    wait: StartupWait,
) -> anyhow::Result<Running> {
    let running = start(config, source, wait).await?;
    let required_failures: Vec<_> = running
        .failed()
        .iter()
        .filter(|f| config.servers.iter().any(|s| s.name == f.name && s.required))
        .map(|f| format!("required server `{}` did not start: {}", f.name, f.reason))
        .collect();
    if !required_failures.is_empty() {
        running.shutdown().await;
        anyhow::bail!("{}", required_failures.join("\n"));
    }
    Ok(running)
}

/// Where the config came from, for the first log line. With no config, it also says how to
/// configure real servers.
pub(crate) fn describe(source: &ConfigSource) -> String {
    match source {
        ConfigSource::File(path) => format!("config {}", path.display()),
        ConfigSource::Absent => "no config found: no servers".to_owned(),
        ConfigSource::Demo => {
            let user_file = toolgate_config::user_config_file(&toolgate_config::SystemEnvironment)
                .map_or_else(
                    || "~/.config/toolgate/toolgate.toml".to_owned(),
                    |path| path.display().to_string(),
                );
            format!(
                "no config found: serving the built-in demo server (sample tools only). To serve \
                 your MCP servers, list them in ./toolgate.toml or {user_file}, or pass \
                 --config FILE (a Claude Desktop, Cursor or VS Code JSON file works too); see \
                 \"Quick start\" in toolgate's README"
            )
        }
    }
}
