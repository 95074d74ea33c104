//! toolgate configuration (see ARCHITECTURE.md, `toolgate-config`): reads `toolgate.toml`, the
//! MCP clients' config files (Claude Desktop, Cursor, Claude Code, VS Code, Windsurf, Gemini CLI,
//! Zed, Codex, goose, Continue) and smg-mcp's `mcp.yaml` into one validated [`Config`],
//! reporting every problem at once with its path. Which program wrote a file is told by its
//! name and shape (the `dialect` module's docs have the rules).
//!
//! ```
//! use std::path::Path;
//! use toolgate_config::{FixedEnvironment, Format, TransportConfig};
//!
//! let env = FixedEnvironment::new().with_var("HOME", "/home/ada");
//! let text = r#"
//!     [servers.files]
//!     command = "npx"
//!     args = ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/notes"]
//!     deny_tools = ["write_*"]
//! "#;
//! let config = toolgate_config::parse_str(text, Format::Toml, Path::new("/etc"), &env)?;
//! let files = &config.servers[0];
//! let TransportConfig::Stdio(stdio) = &files.transport else { unreachable!() };
//! assert_eq!(stdio.args[2], "/home/ada/notes");
//! assert!(!files.tools.matches("write_file"));
//!
//! let errors = toolgate_config::parse_str("[servers.x]\nurll = 1", Format::Toml, Path::new("/"), &env)
//!     .unwrap_err();
//! assert_eq!(errors.to_string().lines().count(), 2);
//! # Ok::<(), toolgate_config::ConfigErrors>(())
//! ```
//!
//! This crate reads files but never touches the network. Everything it reads from the process
//! (variables, current and home directory) goes through an [`Environment`].

mod agent;
mod audit;
mod auth;
mod check;
mod client;
mod dialect;
mod discover;
mod egress;
mod env;
mod error;
mod filter;
mod fingerprint;
mod interpolate;
mod inventory;
mod jsonc;
mod llm;
mod load;
mod model;
mod native;
mod oauth;
mod pipeline;
mod response_format;
mod scripts;
mod smg;
mod state;
mod telemetry;
mod tenants;
mod value;

use std::path::{Path, PathBuf};

pub use agent::{AGENT_PROVIDERS, PROVIDER_KEY_VARS};
pub use auth::{
    DEFAULT_ALGORITHMS, DEFAULT_CLOCK_SKEW, DEFAULT_INTROSPECTION_CACHE_SIZE,
    DEFAULT_INTROSPECTION_CACHE_TTL, DEFAULT_PRINCIPAL_CLAIM, IntrospectionConfig, JWT_ALGORITHMS,
    MAX_CLOCK_SKEW, MAX_INTROSPECTION_CACHE_SIZE, MAX_INTROSPECTION_CACHE_TTL, Roles,
    is_api_key_name, parse_key_hash,
};
pub use discover::{CONFIG_VAR, Discovered, FILE_NAME, Origin};
pub use egress::proxy_url_problem;
pub use env::{Environment, FixedEnvironment, SystemEnvironment};
pub use error::{ConfigError, ConfigErrors};
pub use filter::{CompiledToolFilter, FilterError};
pub use fingerprint::{Fingerprint, fingerprint};
pub use model::*;
pub use state::{MAX_REPLICA_NAME, SHARED_KEY_MIN_BYTES};
pub use telemetry::OTLP_HTTP_PROTOBUF;
pub use tenants::is_tenant_name;

/// The language of a configuration text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// `toolgate.toml`, or Codex's `config.toml` (a top-level `mcp_servers` and none of
    /// toolgate's own keys, in a file not named `toolgate.toml`).
    Toml,
    /// An MCP client config: `{"mcpServers": ...}` (Claude, Cursor, Windsurf, Gemini CLI),
    /// VS Code's `{"servers": ...}` or Zed's `{"context_servers": ...}`. Comments and trailing
    /// commas are accepted.
    Json,
    /// goose's `config.yaml` (`extensions`), Continue's (`mcpServers`), or else smg-mcp's
    /// `mcp.yaml` (the MCP layer of the Shepherd Model Gateway), mapped onto toolgate's own
    /// settings; what cannot be mapped is reported.
    Yaml,
}

impl Format {
    /// The format a file name says: `.toml`, `.json` / `.jsonc`, or `.yaml` / `.yml`.
    pub fn from_path(path: &Path) -> Option<Format> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "toml" => Some(Format::Toml),
            "json" | "jsonc" => Some(Format::Json),
            "yaml" | "yml" => Some(Format::Yaml),
            _ => None,
        }
    }

    /// The format a text looks like: JSON when it starts with `{`, else TOML (YAML is known by
    /// its file name only).
    pub fn sniff(text: &str) -> Format {
        if text.trim_start().starts_with('{') { Format::Json } else { Format::Toml }
    }
}

/// A configuration and the file it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The file, absolute.
    pub path: PathBuf,
    /// What it says.
    pub config: Config,
}

/// Finds and loads the configuration of this process: see [`discover()`] for where it looks, with
/// the real environment. `Ok(None)` when there is no configuration file anywhere.
pub fn load(explicit: Option<&Path>) -> Result<Option<Loaded>, ConfigErrors> {
    load_with(explicit, &SystemEnvironment)
}

/// [`load()`] in a given environment.
pub fn load_with(
    explicit: Option<&Path>,
    env: &dyn Environment,
) -> Result<Option<Loaded>, ConfigErrors> {
    let Some(path) = discover(explicit, env)? else { return Ok(None) };
    let config = load_file(&path, env)?;
    Ok(Some(Loaded { path, config }))
}

/// Finds the configuration file, in this order:
///
/// 1. `explicit` (the `--config` option), which must exist;
/// 2. the file named by `TOOLGATE_CONFIG` (when set and not empty), which must exist;
/// 3. `toolgate.toml` in the current directory;
/// 4. `toolgate/toolgate.toml` in `$XDG_CONFIG_HOME` (when absolute), else in `~/.config`.
///
/// Relative paths are relative to `env`'s current directory; the path returned is absolute
/// when that is known. `Ok(None)` when steps 3 and 4 find nothing.
pub fn discover(
    explicit: Option<&Path>,
    env: &dyn Environment,
) -> Result<Option<PathBuf>, ConfigError> {
    discover::discover(explicit, env)
}

/// [`discover()`], saying where the file was found: a `toolgate.toml` in the current directory
/// that is not the user's own config file ([`Discovered::needs_trust`]) was chosen by whoever
/// wrote the directory, not by the user.
pub fn discover_file(
    explicit: Option<&Path>,
    env: &dyn Environment,
) -> Result<Option<Discovered>, ConfigError> {
    discover::discover_file(explicit, env)
}

/// Where the user's own config file is looked for (step 4 of [`discover()`]):
/// `toolgate/toolgate.toml` in `$XDG_CONFIG_HOME` (when absolute), else in `~/.config`.
/// `None` when neither is known.
pub fn user_config_file(env: &dyn Environment) -> Option<PathBuf> {
    discover::user_config_file(env)
}

/// Reads and checks one configuration file. Its format comes from its extension (`.toml`,
/// `.json`, `.yaml`), else from its first character. Relative paths inside it (`import`, `cwd`) are
/// relative to its directory. The errors carry the file ([`ConfigErrors::file`]).
pub fn load_file(path: &Path, env: &dyn Environment) -> Result<Config, ConfigErrors> {
    check_file(path, env).into_result()
}

/// [`load_file`], keeping what is valid when something is not: for reports that go on to
/// check what the rest of toolgate would make of it (`toolgate config check`).
pub fn check_file(path: &Path, env: &dyn Environment) -> Checked {
    load::check_file(path, env)
}

/// A YAML document (a client's `config.yaml`) as JSON, keys in document order, read the way the
/// loader reads YAML config files (one document; anchors expanded; numbers and booleans as keys
/// become text). For tools that edit a client's YAML file, which the loader only reads.
pub fn yaml_to_json(text: &str) -> Result<serde_json::Value, ConfigError> {
    value::parse_yaml(text).map(|value| value.to_json())
}

/// What checking a configuration file found.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The file, absolute.
    pub path: PathBuf,
    /// What is valid in it. A server, `[[pipeline]]` entry or webhook with a problem is left
    /// out, an `[audit]` field with one is at its default, `[gateway]`, `[agent]`, `[llm]` or
    /// `[scripts]` with one is at its defaults and `[admin]` or `[auth]` with one is `None`; a
    /// file that cannot be read or parsed gives the default config.
    pub config: Config,
    /// Every problem, each with its path; empty when the file is valid.
    pub errors: ConfigErrors,
}

impl Checked {
    /// The config when it is valid, else every problem.
    pub fn into_result(self) -> Result<Config, ConfigErrors> {
        if self.errors.is_empty() { Ok(self.config) } else { Err(self.errors) }
    }
}

/// Makes every stdio server in `servers` withhold `secret_env` (a [`Config::secret_env`]) from
/// its child: for servers read from one file and run under another's settings (the agent's
/// `--mcp-config` beside `toolgate.toml`). The loader does this for the servers it reads.
pub fn withhold_secrets(
    servers: &mut [ServerConfig],
    secret_env: &std::collections::BTreeSet<String>,
) {
    load::withhold(servers, secret_env);
}

/// Makes `proxy` (a [`Config::proxy`]) the proxy of every HTTP server in `servers` that has
/// no `proxy` of its own: for servers read from one file and run under another's settings (the
/// agent's `--mcp-config` beside `toolgate.toml`). The loader does this for the servers it reads.
pub fn apply_proxy(servers: &mut [ServerConfig], proxy: &ProxyConfig) {
    load::apply_proxy(servers, proxy);
}

/// Checks a configuration given as text. Relative paths inside it (`import`, `cwd`) are
/// relative to `base_dir`. Servers come out sorted by name.
pub fn parse_str(
    text: &str,
    format: Format,
    base_dir: &Path,
    env: &dyn Environment,
) -> Result<Config, ConfigErrors> {
    load::parse_str(text, format, base_dir, env)
}
