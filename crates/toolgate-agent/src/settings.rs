//! Which model the agent talks to and how: `[agent]` from the config, then the environment
//! (`TOOLGATE_MODEL`, the providers' key variables), then flags, each over the one before.
//!
//! | provider | speaks | base URL | key from |
//! |---|---|---|---|
//! | `openai` | Chat Completions | `https://api.openai.com/v1` | `OPENAI_API_KEY` |
//! | `openai-responses` | Responses | `https://api.openai.com/v1` | `OPENAI_API_KEY` |
//! | `anthropic` | Messages | `https://api.anthropic.com/v1` | `ANTHROPIC_API_KEY` |
//! | `deepseek` | Chat Completions | `https://api.deepseek.com/v1` | `DEEPSEEK_API_KEY` |
//! | `compatible` | Chat Completions | `base_url` (required) | `api_key_env`, if any |
//!
//! With no provider named, it is guessed: a `base_url` means `compatible`; else a model name
//! that starts with `claude` means `anthropic`, `deepseek` means `deepseek`, `gpt`, `o1`,
//! `o3`, `o4` means `openai`; else the first of `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
//! `DEEPSEEK_API_KEY` that is set.

use std::time::Duration;

use toolgate_config::AgentConfig;
use toolgate_llm::provider::{Dialect, ProviderConfig};

use crate::agent::{AgentSettings, DEFAULT_MAX_TURNS};

/// What the history is trimmed to when neither config nor flags say.
pub const DEFAULT_CONTEXT_TOKENS: usize = 100_000;

/// The variable that names the model.
pub const MODEL_VAR: &str = "TOOLGATE_MODEL";

/// What flags say (each `None` when not given).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--provider`.
    pub provider: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--max-turns`.
    pub max_turns: Option<u32>,
    /// `--system`.
    pub system: Option<String>,
    /// `--temperature`.
    pub temperature: Option<f32>,
}

/// The model to talk to, resolved.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The provider's name (`openai`, `anthropic`, ...).
    pub provider_name: String,
    /// How to reach it.
    pub provider: ProviderConfig,
    /// How to talk to it.
    pub settings: AgentSettings,
}

/// Why no model can be talked to.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SettingsError {
    /// Nothing says which provider.
    #[error(
        "no model is configured: set [agent] provider and model in toolgate.toml, or pass \
         --provider and --model, or set OPENAI_API_KEY, ANTHROPIC_API_KEY or DEEPSEEK_API_KEY"
    )]
    NoProvider,
    /// An unknown provider name.
    #[error(
        "unknown provider {0:?} (known: openai, openai-responses, anthropic, deepseek, compatible)"
    )]
    UnknownProvider(String),
    /// A provider that needs a key has none.
    #[error("the {provider} provider needs an API key: set {variable}")]
    NoKey {
        /// The provider.
        provider: String,
        /// The variable to set.
        variable: String,
    },
    /// `compatible` without a base URL.
    #[error("the compatible provider needs a base URL: set [agent] base_url or pass --base-url")]
    NoBaseUrl,
    /// `compatible` without a model.
    #[error("no model named: set [agent] model, {MODEL_VAR} or pass --model")]
    NoModel,
    /// A base URL that is not http(s).
    #[error("invalid base URL {0:?} (expected http:// or https://)")]
    BadBaseUrl(String),
    /// The key would go to another machine over plain `http://`.
    #[error(
        "refusing to send the API key from {variable} to {host} over plain http://, where \
         anyone on the way can read it: make {setting} https:// (plain http:// is only for a \
         model on this machine: localhost, 127.0.0.1, [::1])"
    )]
    KeyInTheClear {
        /// The variable the key was read from.
        variable: String,
        /// The host it would go to.
        host: String,
        /// Which setting named the URL: `--base-url` or `[agent] base_url`.
        setting: String,
    },
}

struct Preset {
    dialect: Dialect,
    base_url: &'static str,
    key_var: Option<&'static str>,
    model: &'static str,
}

fn preset(name: &str) -> Option<Preset> {
    Some(match name {
        "openai" => Preset {
            dialect: Dialect::OpenaiChat,
            base_url: "https://api.openai.com/v1",
            key_var: Some("OPENAI_API_KEY"),
            model: "gpt-4.1-mini",
        },
        "openai-responses" => Preset {
            dialect: Dialect::OpenaiResponses,
            base_url: "https://api.openai.com/v1",
            key_var: Some("OPENAI_API_KEY"),
            model: "gpt-4.1-mini",
        },
        "anthropic" => Preset {
            dialect: Dialect::Anthropic,
            base_url: "https://api.anthropic.com/v1",
            key_var: Some("ANTHROPIC_API_KEY"),
            model: "claude-sonnet-4-5",
        },
        "deepseek" => Preset {
            dialect: Dialect::OpenaiChat,
            base_url: "https://api.deepseek.com/v1",
            key_var: Some("DEEPSEEK_API_KEY"),
            model: "deepseek-chat",
        },
        "compatible" => {
            Preset { dialect: Dialect::OpenaiChat, base_url: "", key_var: None, model: "" }
        }
        _ => return None,
    })
}

/// Resolves config, environment (`env` reads a variable) and flags into one model.
pub fn resolve(
    config: &AgentConfig,
    flags: &Overrides,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, SettingsError> {
    let set = |name: &str| env(name).filter(|value| !value.is_empty());
    let model = flags.model.clone().or_else(|| set(MODEL_VAR)).or_else(|| config.model.clone());
    let base_url = flags
        .base_url
        .clone()
        .or_else(|| config.base_url.as_ref().map(|url| url.as_str().to_owned()));
    let provider_name = match flags.provider.clone().or_else(|| config.provider.clone()) {
        Some(name) => name,
        None => {
            guess(model.as_deref(), base_url.is_some(), &set).ok_or(SettingsError::NoProvider)?
        }
    };
    let preset = preset(&provider_name)
        .ok_or_else(|| SettingsError::UnknownProvider(provider_name.clone()))?;
    let base_url = match base_url {
        Some(url) => url,
        None if preset.base_url.is_empty() => return Err(SettingsError::NoBaseUrl),
        None => preset.base_url.to_owned(),
    };
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(SettingsError::BadBaseUrl(base_url));
    }
    let model = match model {
        Some(model) => model,
        None if preset.model.is_empty() => return Err(SettingsError::NoModel),
        None => preset.model.to_owned(),
    };
    let key_var = config.api_key_env.clone().or(preset.key_var.map(str::to_owned));
    let api_key = key_var.as_deref().and_then(set);
    if api_key.is_none()
        && let Some(variable) = &key_var
        && preset.key_var.is_some()
    {
        return Err(SettingsError::NoKey { provider: provider_name, variable: variable.clone() });
    }
    if api_key.is_some()
        && let (Some(variable), Some(host)) =
            (&key_var, toolgate_llm::key_route::plain_http_host(&base_url))
    {
        let setting = if flags.base_url.is_some() { "--base-url" } else { "[agent] base_url" };
        return Err(SettingsError::KeyInTheClear {
            variable: variable.clone(),
            host,
            setting: setting.to_owned(),
        });
    }
    let settings = AgentSettings {
        model,
        system: flags.system.clone().or_else(|| config.system.clone()),
        temperature: flags.temperature.or(config.temperature.map(|t| t as f32)),
        max_tokens: config.max_tokens,
        max_turns: flags.max_turns.or(config.max_turns).unwrap_or(DEFAULT_MAX_TURNS),
        tool_timeout: config.tool_timeout,
        context_tokens: Some(
            config.context_tokens.map(|n| n as usize).unwrap_or(DEFAULT_CONTEXT_TOKENS),
        ),
    };
    let provider = ProviderConfig {
        dialect: preset.dialect,
        base_url: base_url.trim_end_matches('/').to_owned(),
        api_key,
        max_retries: 3,
        idle_timeout: Duration::from_secs(120),
        proxy: llm_proxy(&config.proxy),
    };
    Ok(Resolved { provider_name, provider, settings })
}

/// `[agent] proxy`, for the provider's client.
fn llm_proxy(proxy: &toolgate_config::ProxyChoice) -> toolgate_llm::provider::Proxy {
    use toolgate_config::ProxyChoice;
    use toolgate_llm::provider::Proxy;
    match proxy {
        ProxyChoice::Environment => Proxy::Environment,
        ProxyChoice::Direct => Proxy::Direct,
        // `[agent] proxy = "..."` is one proxy for every URL.
        ProxyChoice::Via(via) => match via.https.as_ref().or(via.http.as_ref()) {
            Some(url) => Proxy::Url(url.expose().to_owned()),
            None => Proxy::Direct,
        },
    }
}

fn guess(
    model: Option<&str>,
    has_base_url: bool,
    set: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    if has_base_url {
        return Some("compatible".to_owned());
    }
    if let Some(model) = model {
        let by_model = [
            ("claude", "anthropic"),
            ("deepseek", "deepseek"),
            ("gpt", "openai"),
            ("o1", "openai"),
            ("o3", "openai"),
            ("o4", "openai"),
        ];
        if let Some((_, provider)) = by_model.iter().find(|(prefix, _)| model.starts_with(prefix)) {
            return Some((*provider).to_owned());
        }
    }
    [
        ("OPENAI_API_KEY", "openai"),
        ("ANTHROPIC_API_KEY", "anthropic"),
        ("DEEPSEEK_API_KEY", "deepseek"),
    ]
    .iter()
    .find(|(var, _)| set(var).is_some())
    .map(|(_, provider)| (*provider).to_owned())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: HashMap<String, String> =
            vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |name| vars.get(name).cloned()
    }

    #[test]
    fn a_key_in_the_environment_is_enough() {
        let resolved = resolve(
            &AgentConfig::default(),
            &Overrides::default(),
            &env(&[("ANTHROPIC_API_KEY", "k")]),
        )
        .expect("resolved");
        assert_eq!(resolved.provider_name, "anthropic");
        assert_eq!(resolved.provider.dialect, Dialect::Anthropic);
        assert_eq!(resolved.provider.base_url, "https://api.anthropic.com/v1");
        assert_eq!(resolved.provider.api_key.as_deref(), Some("k"));
        assert_eq!(resolved.settings.max_turns, DEFAULT_MAX_TURNS);
    }

    #[test]
    fn a_key_never_goes_to_another_machine_over_plain_http() {
        let config = AgentConfig {
            provider: Some("compatible".into()),
            model: Some("m".into()),
            base_url: Some("http://10.0.0.5:8080/v1".parse().expect("url")),
            api_key_env: Some("LAN_KEY".into()),
            ..AgentConfig::default()
        };
        let vars = env(&[("LAN_KEY", "k")]);
        let refused = resolve(&config, &Overrides::default(), &vars).expect_err("refused");
        assert_eq!(
            refused,
            SettingsError::KeyInTheClear {
                variable: "LAN_KEY".into(),
                host: "10.0.0.5:8080".into(),
                setting: "[agent] base_url".into(),
            }
        );
        let flags = Overrides {
            base_url: Some("http://models.example.com/v1".into()),
            ..Overrides::default()
        };
        let refused = resolve(&config, &flags, &vars).expect_err("refused").to_string();
        assert!(refused.contains("--base-url") && refused.contains("LAN_KEY"), "{refused}");
        assert!(refused.contains("models.example.com"), "{refused}");

        // Without a key, or to this machine, or over https, it is fine.
        assert!(resolve(&config, &Overrides::default(), &env(&[])).is_ok());
        let local = Overrides { base_url: Some("http://127.0.0.1:11434/v1".into()), ..flags };
        assert!(resolve(&config, &local, &vars).is_ok());
        let tls = Overrides { base_url: Some("https://10.0.0.5/v1".into()), ..local };
        assert!(resolve(&config, &tls, &vars).is_ok());
    }

    #[test]
    fn the_agent_proxy_reaches_the_provider() {
        use toolgate_config::{ProxyChoice, ProxyConfig, Secret};
        use toolgate_llm::provider::Proxy;
        let config = |proxy| AgentConfig {
            provider: Some("anthropic".into()),
            model: Some("m".into()),
            proxy,
            ..AgentConfig::default()
        };
        let vars = env(&[("ANTHROPIC_API_KEY", "k")]);
        let proxy_of = |proxy| {
            resolve(&config(proxy), &Overrides::default(), &vars).expect("resolved").provider.proxy
        };
        assert_eq!(proxy_of(ProxyChoice::Environment), Proxy::Environment);
        assert_eq!(proxy_of(ProxyChoice::Direct), Proxy::Direct);
        let via = ProxyChoice::Via(ProxyConfig::all(Secret::new("http://p:3128")));
        assert_eq!(proxy_of(via), Proxy::Url("http://p:3128".into()));
    }

    #[test]
    fn every_providers_key_variable_is_withheld_from_servers() {
        for provider in toolgate_config::AGENT_PROVIDERS {
            let preset = preset(provider).expect("a preset for every provider");
            if let Some(variable) = preset.key_var {
                assert!(
                    toolgate_config::PROVIDER_KEY_VARS.contains(&variable),
                    "{variable} is not in toolgate_config::PROVIDER_KEY_VARS"
                );
            }
        }
    }

    #[test]
    fn flags_beat_the_environment_which_beats_the_config() {
        let config = AgentConfig {
            provider: Some("openai".into()),
            model: Some("gpt-4.1".into()),
            max_turns: Some(5),
            system: Some("config".into()),
            ..AgentConfig::default()
        };
        let vars = env(&[("OPENAI_API_KEY", "k"), (MODEL_VAR, "gpt-5")]);
        let resolved = resolve(&config, &Overrides::default(), &vars).expect("resolved");
        assert_eq!(resolved.settings.model, "gpt-5");
        assert_eq!(resolved.settings.max_turns, 5);
        let flags = Overrides {
            model: Some("o4-mini".into()),
            max_turns: Some(2),
            system: Some("flag".into()),
            ..Overrides::default()
        };
        let resolved = resolve(&config, &flags, &vars).expect("resolved");
        assert_eq!(resolved.settings.model, "o4-mini");
        assert_eq!(resolved.settings.max_turns, 2);
        assert_eq!(resolved.settings.system.as_deref(), Some("flag"));
    }

    #[test]
    fn the_provider_is_guessed_from_the_model_or_the_base_url() {
        let vars = env(&[("DEEPSEEK_API_KEY", "d"), ("OPENAI_API_KEY", "o")]);
        let with = |model: &str| Overrides { model: Some(model.into()), ..Overrides::default() };
        let name = |flags: &Overrides| {
            resolve(&AgentConfig::default(), flags, &vars).map(|r| r.provider_name)
        };
        assert_eq!(name(&with("deepseek-reasoner")), Ok("deepseek".into()));
        assert_eq!(name(&with("gpt-4.1")), Ok("openai".into()));
        let local = Overrides {
            base_url: Some("http://127.0.0.1:11434/v1/".into()),
            model: Some("qwen3".into()),
            ..Overrides::default()
        };
        let resolved = resolve(&AgentConfig::default(), &local, &vars).expect("local");
        assert_eq!(resolved.provider_name, "compatible");
        assert_eq!(resolved.provider.base_url, "http://127.0.0.1:11434/v1");
        assert_eq!(resolved.provider.api_key, None, "a local server needs no key");
    }

    #[test]
    fn what_is_missing_is_said() {
        let none = env(&[]);
        let flags = Overrides::default();
        assert_eq!(
            resolve(&AgentConfig::default(), &flags, &none).unwrap_err(),
            SettingsError::NoProvider
        );
        let anthropic = Overrides { provider: Some("anthropic".into()), ..Overrides::default() };
        assert_eq!(
            resolve(&AgentConfig::default(), &anthropic, &none).unwrap_err().to_string(),
            "the anthropic provider needs an API key: set ANTHROPIC_API_KEY"
        );
        let compatible = Overrides { provider: Some("compatible".into()), ..Overrides::default() };
        assert_eq!(
            resolve(&AgentConfig::default(), &compatible, &none).unwrap_err(),
            SettingsError::NoBaseUrl
        );
        let unknown = Overrides { provider: Some("gemini".into()), ..Overrides::default() };
        assert!(matches!(
            resolve(&AgentConfig::default(), &unknown, &none),
            Err(SettingsError::UnknownProvider(_))
        ));
        let config = AgentConfig {
            provider: Some("openai".into()),
            api_key_env: Some("WORK_OPENAI_KEY".into()),
            ..AgentConfig::default()
        };
        assert_eq!(
            resolve(&config, &flags, &env(&[("OPENAI_API_KEY", "k")])).unwrap_err().to_string(),
            "the openai provider needs an API key: set WORK_OPENAI_KEY"
        );
    }
}
