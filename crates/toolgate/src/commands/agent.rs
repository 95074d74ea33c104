//! What `toolgate run` and `toolgate chat` share: their flags, and starting an agent (the
//! config and its servers, the gateway in this process, the model, the session store).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context as _;
use clap::Args;
use toolgate_agent::agent::{Agent, Journal};
use toolgate_agent::gateway_host::{GatewayHost, SamplingModel};
use toolgate_agent::host::Interaction;
use toolgate_agent::settings::{self, Overrides, Resolved};
use toolgate_agent::store::{NewSession, Store};
use toolgate_config::{Config, InterceptorConfig, SystemEnvironment};
use toolgate_gateway::StartupWait;
use toolgate_llm::chat::{Message, Usage};

use crate::GlobalArgs;
use crate::setup::{self, ConfigSource, Running};

/// Flags of the agent commands.
#[allow(
    rustdoc::broken_intra_doc_links,
    reason = "clap help text: [agent] is a table of toolgate.toml, not a link"
)]
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct AgentArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Model turns per prompt before giving up (default: [agent] max_turns, else 20).
    #[arg(long, value_name = "N")]
    max_turns: Option<u32>,
    /// The system prompt.
    #[arg(long, value_name = "TEXT")]
    system: Option<String>,
    /// Sampling temperature (0 to 2).
    #[arg(long, value_name = "T", value_parser = temperature)]
    temperature: Option<f32>,
    /// MCP servers from a Claude Desktop style file (`{"mcpServers": {...}}`), instead of the
    /// config's servers.
    #[arg(long, value_name = "FILE", env = "TOOLGATE_MCP_CONFIG")]
    mcp_config: Option<PathBuf>,
    /// A directory servers may work in (`roots/list`; the working directory is always one).
    #[arg(long = "root", value_name = "DIR")]
    roots: Vec<PathBuf>,
    /// Show tool calls' full arguments and results.
    #[arg(long, short = 'v')]
    pub(crate) verbose: bool,
    /// The sessions database (default: [agent] sessions, else the user's data folder).
    #[arg(long, value_name = "FILE")]
    sessions: Option<PathBuf>,
    /// Do not store this conversation.
    #[arg(long)]
    no_save: bool,
    /// Let upstreams use the model (sampling) without asking; without a terminal they are
    /// otherwise refused.
    #[arg(long)]
    pub(crate) allow_sampling: bool,
}

/// Which model: the flags of the agent commands and of `scan --judge`, over `[agent]`.
#[allow(
    rustdoc::broken_intra_doc_links,
    reason = "clap help text: [agent] is a table of toolgate.toml, not a link"
)]
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct ModelArgs {
    /// The provider: openai, openai-responses, anthropic, deepseek or compatible (default:
    /// [agent] provider, else guessed from the model, the base URL or the keys that are set).
    #[arg(long, value_name = "NAME")]
    pub(crate) provider: Option<String>,
    /// The model (default: $TOOLGATE_MODEL, else [agent] model, else the provider's default).
    #[arg(long, short = 'm', value_name = "MODEL")]
    pub(crate) model: Option<String>,
    /// The API's base URL, for OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM Studio).
    #[arg(long, value_name = "URL")]
    pub(crate) base_url: Option<String>,
}

impl ModelArgs {
    /// Whether any of them was given.
    pub(crate) fn any(&self) -> bool {
        self.provider.is_some() || self.model.is_some() || self.base_url.is_some()
    }

    /// The model `[agent]` (`config`), the environment and these flags choose, with the other
    /// flags of `overrides`; what is missing is a usage error that names what to set.
    pub(crate) fn resolve(
        &self,
        config: &toolgate_config::AgentConfig,
        overrides: Overrides,
    ) -> anyhow::Result<Resolved> {
        let overrides = Overrides {
            provider: self.provider.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            ..overrides
        };
        settings::resolve(config, &overrides, &|name| std::env::var(name).ok())
            .map_err(|error| setup::usage(error.to_string()))
    }
}

/// `--temperature`: a number from 0 to 2.
fn temperature(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(t) if (0.0..=2.0).contains(&t) => Ok(t),
        Ok(t) => Err(format!("{t} is out of range (0 to 2)")),
        Err(_) => Err(format!("{text:?} is not a number")),
    }
}

/// A started agent and what it runs on.
pub(crate) struct Started {
    pub(crate) agent: Agent,
    pub(crate) running: Running,
    pub(crate) resolved: Resolved,
    pub(crate) store: Option<Arc<Mutex<Store>>>,
    pub(crate) session: Option<String>,
    pub(crate) host: Arc<GatewayHost>,
}

/// How the servers are waited for.
#[derive(Clone, Copy)]
pub(crate) enum Discovery {
    /// Every server's first attempt (one-shot `run`).
    All,
    /// None: the prompt is usable at once, servers join when up (`chat`).
    Background,
}

/// Loads the config, resolves the model, starts the gateway and opens the session store.
/// `resume` continues a stored session (`Some(None)`: the latest).
pub(crate) async fn start(
    global: &GlobalArgs,
    args: &AgentArgs,
    discovery: Discovery,
    interaction: Arc<dyn Interaction>,
    resume: Option<Option<String>>,
) -> anyhow::Result<Started> {
    let (mut config, source) = load_config(global, args)?;
    let overrides = Overrides {
        max_turns: args.max_turns,
        system: args.system.clone(),
        temperature: args.temperature,
        ..Overrides::default()
    };
    let resolved = args.model.resolve(&config.agent, overrides)?;
    let provider = toolgate_llm::provider::connect(resolved.provider.clone())
        .with_context(|| format!("cannot set up the {} provider", resolved.provider_name))?;
    ask_at_the_terminal(&mut config);
    let running = match discovery {
        // A `required` server that did not start fails a one-shot prompt.
        Discovery::All => setup::connect(&config, &source, StartupWait::All).await?,
        Discovery::Background => {
            setup::start(&config, &source, StartupWait::Bounded(std::time::Duration::ZERO)).await?
        }
    };

    let store = if args.no_save {
        None
    } else {
        let path = match args.sessions.clone().or_else(|| config.agent.sessions.clone()) {
            Some(path) => path,
            None => toolgate_agent::store::default_path()?,
        };
        Some(Arc::new(Mutex::new(
            Store::open(&path).with_context(|| format!("opening {}", path.display()))?,
        )))
    };
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let mut history = Vec::new();
    let session = match (&store, resume) {
        (None, Some(_)) => anyhow::bail!("--resume needs the session store (without --no-save)"),
        (None, None) => None,
        (Some(store), Some(which)) => {
            let store = store.lock().unwrap_or_else(PoisonError::into_inner);
            let id = match which {
                Some(id) => id,
                None => store
                    .latest()?
                    .map(|meta| meta.id)
                    .ok_or_else(|| anyhow::anyhow!("there is no session to resume yet"))?,
            };
            let loaded = store.load(&id)?;
            store.set_model(&loaded.meta.id, &resolved.provider_name, &resolved.settings.model)?;
            history = loaded.messages;
            Some(loaded.meta.id)
        }
        (Some(store), None) => {
            let store = store.lock().unwrap_or_else(PoisonError::into_inner);
            let meta = store.create(&NewSession {
                provider: resolved.provider_name.clone(),
                model: resolved.settings.model.clone(),
                cwd: cwd.clone(),
            })?;
            Some(meta.id)
        }
    };

    let mut roots = vec![cwd];
    roots.extend(args.roots.iter().cloned());
    let host = Arc::new(
        GatewayHost::new(
            running.gateway.clone(),
            session.clone().unwrap_or_else(|| "unsaved".to_owned()),
            interaction,
        )
        .with_sampling(SamplingModel {
            provider: provider.clone(),
            model: resolved.settings.model.clone(),
        })
        .with_roots(roots)
        .with_trace_context(crate::telemetry::started_in()),
    );
    let mut agent =
        Agent::new(provider, host.clone(), resolved.settings.clone()).with_history(history);
    if let (Some(store), Some(session)) = (&store, &session) {
        agent = agent.with_journal(Arc::new(SessionJournal {
            store: store.clone(),
            session: session.clone(),
        }));
    }
    Ok(Started { agent, running, resolved, store, session, host })
}

/// The config: the file found as usual, or none at all (the agent is then a plain chat: no
/// demo server); `--mcp-config` replaces its servers.
fn load_config(global: &GlobalArgs, args: &AgentArgs) -> anyhow::Result<(Config, ConfigSource)> {
    let (mut config, source) = match setup::load(global)? {
        Some(loaded) => (loaded.config, ConfigSource::File(loaded.path)),
        None => (Config::default(), ConfigSource::Absent),
    };
    if let Some(path) = &args.mcp_config {
        let servers = toolgate_config::load_file(path, &SystemEnvironment)
            .map_err(|errors| setup::InvalidConfig { path: Some(path.clone()), errors })?;
        config.servers = servers.servers;
        // Its servers withhold what the main config's secrets come from, too, and take its
        // `[proxy]`.
        toolgate_config::withhold_secrets(&mut config.servers, &config.secret_env);
        if let Some(proxy) = &config.proxy {
            toolgate_config::apply_proxy(&mut config.servers, proxy);
        }
    }
    Ok((config, source))
}

/// The person at the terminal is the caller: a call the policy says to `ask` about is asked
/// here (the `approval` interceptor, `via = "elicit"`, whose question the agent shows as its
/// own prompt) unless the config already says how approvals are made.
fn ask_at_the_terminal(config: &mut Config) {
    // An approval entry of a tenant's is not the agent's: the agent is in no tenant.
    if config.pipeline.iter().any(|entry| entry.kind == "approval" && entry.tenants.is_empty()) {
        return;
    }
    let via = serde_json::Value::String("elicit".to_owned());
    let options = serde_json::Map::from_iter([("via".to_owned(), via)]);
    config.pipeline.push(InterceptorConfig::new("agent approval", "approval", options));
}

/// The session store as the agent's journal.
pub(crate) struct SessionJournal {
    pub(crate) store: Arc<Mutex<Store>>,
    pub(crate) session: String,
}

impl Journal for SessionJournal {
    fn append(&self, message: &Message, usage: Option<&Usage>) -> Result<(), String> {
        let store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        store.append(&self.session, message, usage.copied()).map(drop).map_err(|e| e.to_string())
    }
}
