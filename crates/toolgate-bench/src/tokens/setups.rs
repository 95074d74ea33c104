//! The transforms `tokens` measures, each as the `[[pipeline]]` entries a `toolgate.toml`
//! would have, parsed by toolgate's own config loader and built by
//! [`toolgate_interceptors::build_pipeline`].
//!
//! A setup whose kinds are not all in [`toolgate_interceptors::KINDS`] is reported as
//! missing from this build, not measured.

use std::path::Path;

use anyhow::Context as _;
use toolgate_config::{FixedEnvironment, Format, InterceptorConfig};

/// One measured configuration.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    /// Its name in the tables.
    pub(crate) name: &'static str,
    /// What it shows.
    pub(crate) about: &'static str,
    /// Its `[[pipeline]]` entries, as TOML. `{llm}` is the fake LLM's base URL.
    pub(crate) toml: &'static str,
}

/// Every setup, in the order of the tables.
pub(crate) const SETUPS: &[Setup] = &[
    Setup {
        name: "truncate-2000",
        about: "a budget of 2000 tokens per result",
        toml: "[[pipeline]]\nkind = \"truncate\"\nmax_tokens = 2000\n",
    },
    Setup {
        name: "truncate-500",
        about: "the smallest budget truncate accepts, to cut nearly everything",
        toml: "[[pipeline]]\nkind = \"truncate\"\nmax_tokens = 500\n",
    },
    Setup {
        name: "redact",
        about: "every built-in detector",
        toml: "[[pipeline]]\nkind = \"redact\"\n",
    },
    Setup {
        name: "toon",
        about: "JSON text blocks re-encoded as TOON when that is fewer tokens (defaults)",
        toml: "[[pipeline]]\nkind = \"toon\"\n",
    },
    Setup {
        name: "test_filter",
        about: "test-runner output reduced to the failures and the summary",
        toml: "[[pipeline]]\nkind = \"test_filter\"\n",
    },
    Setup {
        name: "enrich",
        about: "an LLM summary before results over 1000 tokens (the testkit's fake LLM)",
        toml: "[[pipeline]]\nkind = \"enrich\"\nbase_url = \"{llm}\"\nmodel = \"fake\"\n",
    },
    Setup {
        name: "enrich-instead",
        about: "the summary instead of the text of results over 1000 tokens (the fake LLM)",
        toml: "[[pipeline]]\nkind = \"enrich\"\nbase_url = \"{llm}\"\nmodel = \"fake\"\n\
               placement = \"instead\"\n",
    },
    Setup {
        name: "emit",
        about: "results published on a channel (never changes them)",
        toml: "[[pipeline]]\nkind = \"emit\"\nchannel = \"token-economy\"\n",
    },
    Setup {
        name: "chain",
        about: "redact, test_filter, toon, then truncate at 2000 tokens, in one pipeline",
        toml: "[[pipeline]]\nkind = \"redact\"\n\n[[pipeline]]\nkind = \"test_filter\"\n\n\
               [[pipeline]]\nkind = \"toon\"\n\n[[pipeline]]\nkind = \"truncate\"\n\
               max_tokens = 2000\n",
    },
];

impl Setup {
    /// Its TOML with `{llm}` filled in.
    pub(crate) fn text(&self, llm: Option<&str>) -> String {
        self.toml.replace("{llm}", llm.unwrap_or("http://127.0.0.1:<port>/v1"))
    }

    /// Its kinds, in order.
    pub(crate) fn kinds(&self) -> Vec<String> {
        self.toml
            .lines()
            .filter_map(|line| line.strip_prefix("kind = \""))
            .map(|rest| rest.trim_end_matches('"').to_owned())
            .collect()
    }

    /// Whether it needs an LLM endpoint.
    pub(crate) fn needs_llm(&self) -> bool {
        self.toml.contains("{llm}")
    }

    /// The kinds this build does not have.
    pub(crate) fn missing(&self) -> Vec<String> {
        self.kinds()
            .into_iter()
            .filter(|kind| !toolgate_interceptors::KINDS.contains(&kind.as_str()))
            .collect()
    }

    /// Its entries, through toolgate's config loader.
    pub(crate) fn entries(&self, llm: Option<&str>) -> anyhow::Result<Vec<InterceptorConfig>> {
        let env = FixedEnvironment::default();
        let config =
            toolgate_config::parse_str(&self.text(llm), Format::Toml, Path::new("."), &env)
                .map_err(|errors| anyhow::anyhow!("{errors}"))
                .with_context(|| format!("the {} setup is not a valid config", self.name))?;
        Ok(config.pipeline)
    }
}
