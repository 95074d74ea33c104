//! What `toolgate serve` builds for the OpenAI-compatible endpoint (`[gateway] llm_api`): the
//! models a request may name (`[llm.models.NAME]`, else `[agent]`'s provider with the request's
//! model name), the response store (`[llm] store`; by default the shared state when `[state]`
//! is Redis or PostgreSQL, else an SQLite file), and the service itself.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;
use toolgate_agent::settings::{self, Overrides};
use toolgate_config::{AgentConfig, Config, LlmModel, ResponseStore, Warmup};
use toolgate_gateway::{DynamicServer, Gateway, PoolSettings};
use toolgate_intercept::{CallContext, Principal};
use toolgate_responses::{
    Access, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT_PER_CALLER, Model, Models, Retention,
    Service, Store,
};
use toolgate_server::Authenticator;
use toolgate_state::SharedState;

/// The endpoint's service, or `None` when `[gateway] llm_api` is off. `own` are the
/// gateway's own listeners, which requests may never name as a server; `shared` is the state
/// this replica shares with the others (`[state]` Redis or PostgreSQL), if any.
pub(crate) async fn service(
    config: &Config,
    gateway: Arc<Gateway>,
    shared: Option<&SharedState>,
    auth: Option<Arc<Authenticator>>,
    own: Vec<std::net::SocketAddr>,
    shutdown: CancellationToken,
) -> anyhow::Result<Option<Service>> {
    if !config.gateway.llm_api {
        return Ok(None);
    }
    let access =
        Access::new(&config.llm.allowed_server_urls, own).context("[llm] allowed_server_urls")?;
    let pool = &config.llm.pool;
    let defaults = gateway.pool_settings();
    gateway.set_pool_settings(PoolSettings {
        max_connections: pool.max_connections.unwrap_or(defaults.max_connections),
        idle_timeout: pool.idle_timeout.unwrap_or(defaults.idle_timeout),
    });
    warm_up(&gateway, &pool.warmup);
    let models = ConfiguredModels::new(config)?;
    let store = match &config.llm.store {
        Some(ResponseStore::Off) => None,
        Some(ResponseStore::Sqlite(path)) => Some(open_store(path.clone())?),
        // The one place the URL's password is read; the store's errors never show it.
        Some(ResponseStore::Postgres(url)) => {
            Some(Store::postgres(url.expose()).await.context("cannot use [llm] store")?)
        }
        // Replicas that share state share their conversations there too.
        Some(ResponseStore::State) => {
            Some(Store::shared(shared.cloned().unwrap_or_else(SharedState::memory)))
        }
        None => match shared {
            Some(shared) => Some(Store::shared(shared.clone())),
            None => Some(open_store(default_store_path()?)?),
        },
    };
    let defaults = Retention::default();
    let retention = Retention {
        ttl: config.llm.store_ttl.unwrap_or(defaults.ttl),
        max_per_owner: config.llm.store_max_per_caller.unwrap_or(defaults.max_per_owner),
    };
    let store = store.map(|store| store.with_retention(retention));
    let mut service = Service::new(gateway, Arc::new(models), store, auth)
        .with_shutdown(shutdown)
        .with_access(access)
        .with_in_flight(
            config.llm.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT),
            config.llm.max_in_flight_per_caller.unwrap_or(DEFAULT_MAX_IN_FLIGHT_PER_CALLER),
        );
    if let Some(most) = config.llm.max_tool_calls {
        service = service.with_max_tool_calls(most);
    }
    Ok(Some(service))
}

/// Connects `[pool] warmup`'s servers in the background, each as its tenant's: a connection is
/// never shared across tenants, so an entry without one would serve nobody and is skipped.
fn warm_up(gateway: &Arc<Gateway>, entries: &[Warmup]) {
    for entry in entries {
        let Some(tenant) = entry.tenant.clone() else {
            tracing::warn!(
                label = %entry.label,
                "[pool] warmup: an entry without a tenant would serve no caller; skipped"
            );
            continue;
        };
        let server = DynamicServer {
            url: entry.url.clone(),
            label: entry.label.clone(),
            headers: Vec::new(),
            authorization: entry.token.as_ref().map(|token| token.expose().to_owned()),
        };
        let gateway = gateway.clone();
        tokio::spawn(async move {
            let ctx =
                CallContext::new(Principal::new("warmup", "toolgate").with_tenant(Some(tenant)));
            for result in gateway.warm(std::slice::from_ref(&server), &ctx).await {
                if let Err(error) = result {
                    tracing::warn!(label = %server.label, %error, "[pool] warmup failed");
                }
            }
        });
    }
}

/// `<data dir>/toolgate/responses.db`, beside the agent's sessions.
fn default_store_path() -> anyhow::Result<PathBuf> {
    let sessions = toolgate_agent::store::default_path()
        .context("no folder for stored responses: set [llm] store")?;
    Ok(sessions.with_file_name("responses.db"))
}

fn open_store(path: PathBuf) -> anyhow::Result<Store> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        toolgate_agent::store::create_private_dirs(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    Store::open(&path).context("cannot open [llm] store")
}

/// The models of `[llm.models]`, and `[agent]`'s provider for any other name.
struct ConfiguredModels {
    named: HashMap<String, Model>,
    /// `[agent]`'s provider, or why there is none.
    fallback: Result<Arc<dyn toolgate_llm::provider::Provider>, String>,
}

impl ConfiguredModels {
    fn new(config: &Config) -> anyhow::Result<ConfiguredModels> {
        // TOOLGATE_MODEL chooses the agent's model, not the endpoint's.
        let env =
            |name: &str| (name != settings::MODEL_VAR).then(|| std::env::var(name).ok()).flatten();
        let mut named = HashMap::new();
        for (name, entry) in &config.llm.models {
            let agent = agent_config_of(name, entry, &config.agent);
            let resolved = settings::resolve(&agent, &Overrides::default(), &env)
                .with_context(|| format!("[llm.models.{name}]"))?;
            let provider = toolgate_llm::provider::connect(resolved.provider.clone())
                .with_context(|| format!("[llm.models.{name}]"))?;
            named.insert(name.clone(), Model { provider, name: resolved.settings.model.clone() });
        }
        let fallback = match settings::resolve(&config.agent, &Overrides::default(), &env) {
            Ok(resolved) => toolgate_llm::provider::connect(resolved.provider.clone())
                .map_err(|error| format!("[agent]: {error}")),
            Err(error) => Err(format!("[agent]: {error}")),
        };
        if named.is_empty()
            && let Err(why) = &fallback
        {
            anyhow::bail!(
                "[gateway] llm_api needs a model: {why}; configure [agent] or [llm.models.NAME]"
            );
        }
        Ok(ConfiguredModels { named, fallback })
    }
}

/// An `[llm.models.NAME]` entry as an agent's settings: what it names (its model by default
/// NAME), the rest from `[agent]`.
fn agent_config_of(name: &str, entry: &LlmModel, agent: &AgentConfig) -> AgentConfig {
    let named_provider = entry.provider.is_some();
    AgentConfig {
        provider: entry.provider.clone().or_else(|| agent.provider.clone()),
        model: Some(entry.model.clone().unwrap_or_else(|| name.to_owned())),
        // Another provider's address or key variable would be the wrong one.
        base_url: entry
            .base_url
            .clone()
            .or_else(|| (!named_provider).then(|| agent.base_url.clone()).flatten()),
        api_key_env: entry
            .api_key_env
            .clone()
            .or_else(|| (!named_provider).then(|| agent.api_key_env.clone()).flatten()),
        proxy: agent.proxy.clone(),
        ..AgentConfig::default()
    }
}

impl Models for ConfiguredModels {
    fn resolve(&self, requested: &str) -> Result<Model, String> {
        if let Some(model) = self.named.get(requested) {
            return Ok(model.clone());
        }
        match &self.fallback {
            Ok(provider) => Ok(Model { provider: provider.clone(), name: requested.to_owned() }),
            Err(why) => Err(format!(
                "not one of [llm.models] ({}), and there is no default provider ({why})",
                self.named.keys().cloned().collect::<Vec<_>>().join(", ")
            )),
        }
    }
}
