//! `[agent]`: what `toolgate run` and `toolgate chat` talk to, and how.
//!
//! ```toml
//! [agent]
//! provider = "anthropic"              # openai | openai-responses | anthropic | deepseek | compatible
//! model = "claude-sonnet-4-5"
//! base_url = "https://api.anthropic.com/v1"   # default: the provider's own
//! api_key_env = "ANTHROPIC_API_KEY"   # the variable holding the key (default: the provider's)
//! max_turns = 20                      # model turns per prompt (default: 20)
//! system = "You are terse."           # the system prompt
//! temperature = 0.2
//! max_tokens = 8192                   # the most tokens per answer
//! tool_timeout = "2m"                 # per tool call, instead of the server's `timeout`; like
//!                                     # it, reset by progress, at most 10 × in all
//! context_tokens = 128000             # history is trimmed to this (default: by model)
//! sessions = "~/.local/share/toolgate/sessions.db"
//! proxy = "http://proxy.corp:3128"    # the model's traffic (false: direct; default: HTTPS_PROXY)
//! ```
//!
//! Everything is optional: flags and `TOOLGATE_MODEL` override it, and the provider's key is
//! read from its usual variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `DEEPSEEK_API_KEY`)
//! unless `api_key_env` names another. The key itself never belongs in the file.

use std::path::PathBuf;
use std::time::Duration;

use crate::check::Checker;
use crate::error::key_path;
use crate::value::Value;

/// The providers `[agent] provider` may name.
pub const AGENT_PROVIDERS: &[&str] =
    &["openai", "openai-responses", "anthropic", "deepseek", "compatible"];

/// The variables the providers' keys are read from when `api_key_env` names none. No server
/// inherits them unless its `env_pass` names one exactly ([`crate::Config::secret_env`]).
pub const PROVIDER_KEY_VARS: &[&str] = &["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY"];

const AGENT_KEYS: &[&str] = &[
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "max_turns",
    "system",
    "temperature",
    "max_tokens",
    "tool_timeout",
    "context_tokens",
    "sessions",
    "proxy",
];

/// `[agent]`: each field `None` when not written (the agent has the defaults).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentConfig {
    /// One of [`AGENT_PROVIDERS`].
    pub provider: Option<String>,
    /// The model's name.
    pub model: Option<String>,
    /// The API's base URL.
    pub base_url: Option<url::Url>,
    /// The name of the variable that holds the API key.
    pub api_key_env: Option<String>,
    /// Model turns per prompt.
    pub max_turns: Option<u32>,
    /// The system prompt.
    pub system: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// The most tokens per answer.
    pub max_tokens: Option<u32>,
    /// Timeout of one tool call.
    pub tool_timeout: Option<Duration>,
    /// The history is trimmed to this many tokens.
    pub context_tokens: Option<u64>,
    /// The sessions database.
    pub sessions: Option<PathBuf>,
    /// `proxy`: which proxy the model's requests take (a URL, or `false` for none); by
    /// default what `HTTPS_PROXY` and the like say. `[proxy]` is for MCP traffic, not this.
    pub proxy: crate::model::ProxyChoice,
}

pub(crate) fn check_agent(cx: &mut Checker<'_>, value: &Value) -> Option<AgentConfig> {
    let entries = cx.table(value, "agent")?;
    let fields = cx.known_keys(entries, "agent", AGENT_KEYS);
    let mut agent = AgentConfig::default();
    let mut ok = true;
    let at = |key: &str| key_path("agent", key);
    if let Some(value) = fields.get("provider") {
        match check_provider(cx, value, &at("provider")) {
            Some(name) => agent.provider = Some(name),
            None => ok = false,
        }
    }
    for (key, slot) in [("model", &mut agent.model), ("system", &mut agent.system)] {
        if let Some(value) = fields.get(key) {
            match cx.string(value, &at(key)).and_then(|text| cx.interpolate(text, &at(key))) {
                Some(text) => *slot = Some(text),
                None => ok = false,
            }
        }
    }
    if let Some(value) = fields.get("api_key_env") {
        match check_api_key_env(cx, value, &at("api_key_env")) {
            Some(name) => agent.api_key_env = Some(name),
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("base_url") {
        match cx.url(value, &at("base_url")) {
            Some(url) => agent.base_url = Some(url),
            None => ok = false,
        }
    }
    for (key, slot) in [("max_turns", &mut agent.max_turns), ("max_tokens", &mut agent.max_tokens)]
    {
        if let Some(value) = fields.get(key) {
            match positive_integer(cx, value, &at(key)) {
                Some(n) => *slot = Some(n),
                None => ok = false,
            }
        }
    }
    if let Some(value) = fields.get("context_tokens") {
        match positive_integer(cx, value, &at("context_tokens")) {
            Some(n) => agent.context_tokens = Some(u64::from(n)),
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("temperature") {
        let number = match value {
            Value::Integer(n) => Some(*n as f64),
            Value::Float(x) => Some(*x),
            other => {
                cx.expected(&at("temperature"), "a number", other);
                None
            }
        };
        match number {
            Some(t) if (0.0..=2.0).contains(&t) => agent.temperature = Some(t),
            Some(t) => {
                cx.error(&at("temperature"), format!("{t} is out of range (0 to 2)"));
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("tool_timeout") {
        match cx
            .duration(value, &at("tool_timeout"))
            .and_then(|d| cx.positive(d, &at("tool_timeout")))
        {
            Some(d) => agent.tool_timeout = Some(d),
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("proxy") {
        match crate::egress::check_proxy_choice(cx, value, &at("proxy")) {
            Some(proxy) => agent.proxy = proxy,
            None => ok = false,
        }
    }
    if let Some(value) = fields.get("sessions") {
        match cx
            .string(value, &at("sessions"))
            .and_then(|text| cx.interpolate(text, &at("sessions")))
        {
            Some(text) => agent.sessions = Some(cx.resolve_path(&text)),
            None => ok = false,
        }
    }
    ok.then_some(agent)
}

/// A provider's name: one of [`AGENT_PROVIDERS`] (`[agent] provider`, `[llm.models.NAME]
/// provider`).
pub(crate) fn check_provider(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<String> {
    let name = cx.string(value, path)?;
    if AGENT_PROVIDERS.contains(&name) {
        return Some(name.to_owned());
    }
    cx.error(path, format!("unknown provider {name:?} (known: {})", AGENT_PROVIDERS.join(", ")));
    None
}

/// The name of the variable that holds an API key (`api_key_env`): never the key itself.
pub(crate) fn check_api_key_env(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<String> {
    let name = cx.string(value, path)?;
    if is_variable_name(name) {
        return Some(name.to_owned());
    }
    // Not quoted: what was written there may be the key itself.
    cx.error(
        path,
        "not a variable name: write the name of the variable that holds the key \
         (such as \"OPENAI_API_KEY\"), not the key",
    );
    None
}

fn positive_integer(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<u32> {
    match value {
        Value::Integer(n) if *n >= 1 && *n <= i64::from(u32::MAX) => Some(*n as u32),
        Value::Integer(n) => {
            cx.error(path, format!("{n} is out of range (1 to {})", u32::MAX));
            None
        }
        other => {
            cx.expected(path, "a positive integer", other);
            None
        }
    }
}

fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}
