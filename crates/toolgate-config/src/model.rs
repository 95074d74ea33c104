//! The validated configuration: plain data, built once, read everywhere.
//!
//! Nothing here parses or does IO; see the crate root for how a file becomes a [`Config`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use crate::agent::AgentConfig;
pub use crate::auth::{ApiKeyConfig, AuthConfig, KeyHash};
pub use crate::llm::{LlmConfig, LlmModel, PoolConfig, ResponseStore, Warmup};
pub use crate::scripts::ScriptsConfig;
pub use crate::tenants::TenantConfig;
pub use toolgate_core::{Mode, ResultFormat};

/// Default address of the streamable HTTP endpoint.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8931";
/// Default time an upstream has to finish its MCP handshake.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time one upstream call may take.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a call waits by default for a server that is restarting.
pub const DEFAULT_RESTART_WAIT: Duration = Duration::from_secs(5);
/// How long `serve` waits by default for servers that are not `required` before serving.
pub const DEFAULT_STARTUP_WAIT: Duration = Duration::from_secs(2);

/// A whole, validated configuration. The default is an empty one (no servers, no pipeline).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    /// Settings of the gateway itself.
    pub gateway: GatewayConfig,
    /// Upstream servers, sorted by name. Disabled servers are kept (with `enabled = false`)
    /// so that `toolgate servers` can show them.
    pub servers: Vec<ServerConfig>,
    /// `[[pipeline]]`: the interceptors, in config order.
    pub pipeline: Vec<InterceptorConfig>,
    /// `[audit]`: where events are recorded.
    pub audit: AuditConfig,
    /// `[admin]`: the admin HTTP API (approvals, events, the pipeline), when configured.
    pub admin: Option<AdminConfig>,
    /// `[agent]`: the model `toolgate run` and `toolgate chat` talk to.
    pub agent: AgentConfig,
    /// `[llm]`: the OpenAI-compatible endpoint's settings (served when `[gateway] llm_api`).
    pub llm: LlmConfig,
    /// `[scripts]`: the Rune scripts toolgate loads and their limits (`watch` is on by default).
    pub scripts: ScriptsConfig,
    /// `[auth]`: who may call the HTTP front, when configured.
    pub auth: Option<AuthConfig>,
    /// `[tenants]`: the servers each tenant's principals reach, by tenant name; empty when
    /// there are none (every caller reaches every server).
    pub tenants: BTreeMap<String, TenantConfig>,
    /// Non-fatal remarks found while loading (ignored client-only keys and the like).
    pub warnings: Vec<String>,
    /// The names of the variables toolgate's own secrets come from: what `[admin] tokens`,
    /// `[audit] hash_key`, the webhooks' headers and a Postgres `[llm] store` interpolate,
    /// `[agent] api_key_env`, every `api_key_env` of `[llm.models]` and of a `[[pipeline]]`
    /// entry, and the providers' usual key variables
    /// ([`PROVIDER_KEY_VARS`](crate::agent::PROVIDER_KEY_VARS)). Every stdio server's
    /// [`StdioConfig::withheld`] is this set: no child inherits them unless its `env_pass`
    /// names one exactly.
    pub secret_env: BTreeSet<String>,
    /// `[proxy]`: the proxy of MCP traffic, when written. It is already each HTTP server's
    /// [`HttpConfig::proxy`] unless the server has a `proxy` of its own; servers read from
    /// another file get it with [`apply_proxy`](crate::apply_proxy).
    pub proxy: Option<ProxyConfig>,
    /// `[telemetry]`: where traces go, if anywhere (with the `OTEL_*` variables applied).
    pub telemetry: TelemetryConfig,
    /// `[state]`: what replicas share, and the key they seal with.
    pub state: StateConfig,
}

/// One `[[pipeline]]` entry: the settings every interceptor has, and the rest of its table
/// (its own options, checked by whoever builds that `kind`).
#[derive(Debug, Clone, PartialEq)]
pub struct InterceptorConfig {
    /// Where it is in the file (`pipeline[2]`), for error messages.
    pub path: String,
    /// Which built-in.
    pub kind: String,
    /// Its name in refusals and the audit log; defaults to `kind` (unique in the pipeline).
    pub name: Option<String>,
    /// `mode`: act (`active`, the default), or record what it would do and change nothing
    /// (`audit`).
    pub mode: Mode,
    /// On its own failure: let the message through (`true`) or refuse it. Default: the kind's.
    pub fail_open: Option<bool>,
    /// Lower runs first; ties keep config order.
    pub priority: i32,
    /// Longest one invocation may take.
    pub timeout: Option<Duration>,
    /// Only for these servers (globs); empty = all.
    pub servers: Vec<String>,
    /// Only for these tools (globs on the upstream's own names); empty = all.
    pub tools: Vec<String>,
    /// Only for callers in these tenants (names); empty = every caller. Set for the entries
    /// of a `[[tenants.NAME.pipeline]]`, which run after the others of the same priority.
    pub tenants: Vec<String>,
    /// Every other key of the table.
    pub options: serde_json::Map<String, serde_json::Value>,
}

impl InterceptorConfig {
    /// An entry of `kind` at `path` with its own `options` and every common setting at its
    /// default (as when the table leaves them out).
    pub fn new(
        path: impl Into<String>,
        kind: impl Into<String>,
        options: serde_json::Map<String, serde_json::Value>,
    ) -> InterceptorConfig {
        InterceptorConfig {
            path: path.into(),
            kind: kind.into(),
            name: None,
            mode: Mode::Active,
            fail_open: None,
            priority: 0,
            timeout: None,
            servers: Vec::new(),
            tools: Vec::new(),
            tenants: Vec::new(),
            options,
        }
    }
}

/// Default length of a webhook's queue of events not yet delivered.
pub const DEFAULT_WEBHOOK_QUEUE: usize = 1024;
/// Default number of retries of one webhook delivery.
pub const DEFAULT_WEBHOOK_RETRIES: u32 = 5;

/// `[audit]`
#[derive(Debug, Clone, PartialEq)]
pub struct AuditConfig {
    /// The hash-chained JSONL audit log; `None` = no file.
    pub file: Option<PathBuf>,
    /// Which events the file records (patterns such as `tools/*`); default all.
    pub events: Vec<String>,
    /// Argument fields recorded as `***` (field paths such as `password` or `auth.*`).
    pub redact: Vec<String>,
    /// Detectors of secrets and personal data run on every string of the recorded arguments
    /// (`toolgate-secrets` kind names, or `all`); default `["all"]`, `[]` for none.
    pub detect: Vec<String>,
    /// Key of the HMAC-SHA256 recorded for arguments; `None` = plain SHA-256.
    pub hash_key: Option<Secret>,
    /// `[[audit.webhook]]`: where events are POSTed as JSON.
    pub webhooks: Vec<WebhookConfig>,
    /// Whether a tool call runs only once the audit log has its `tools/call/started` record
    /// (write-ahead): when the log cannot be written, calls are refused.
    pub required: bool,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            file: None,
            events: vec!["*".to_owned()],
            redact: Vec::new(),
            detect: vec!["all".to_owned()],
            hash_key: None,
            webhooks: Vec::new(),
            required: false,
        }
    }
}

/// `[[audit.webhook]]`
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookConfig {
    /// Where to POST.
    pub url: url::Url,
    /// Which events (patterns); default all.
    pub events: Vec<String>,
    /// Extra request headers (secrets).
    pub headers: BTreeMap<String, Secret>,
    /// Events waiting beyond this many are dropped and counted.
    pub queue: usize,
    /// Retries of one delivery (with exponential backoff) before it is dropped.
    pub retries: u32,
}

/// `[admin]`
#[derive(Debug, Clone, PartialEq)]
pub struct AdminConfig {
    /// Address of the admin API.
    pub listen: SocketAddr,
    /// Bearer tokens by the name of who holds them (the approver's name in the audit log).
    pub tokens: BTreeMap<String, Secret>,
}

/// `[gateway]`
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayConfig {
    /// Address of the streamable HTTP endpoint (`/mcp`).
    pub listen: SocketAddr,
    /// Extra `Host` header values accepted besides the loopback names. Empty = loopback only.
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted by the HTTP endpoint. Empty = browsers' cross-origin requests
    /// are refused; requests without `Origin` are accepted.
    pub allowed_origins: Vec<String>,
    /// How long `serve` waits for servers that are not `required` before it serves what is
    /// ready (the others join when they connect).
    pub startup_wait: Duration,
    /// How many HTTP sessions may be open at once (`None`: the server's default, 1000).
    pub max_sessions: Option<usize>,
    /// How many HTTP sessions one client address may hold at once (`None`: the server's
    /// default, 200).
    pub max_sessions_per_client: Option<usize>,
    /// How long an HTTP session may go without a request before it is closed (`None`: the
    /// server's default, 5 minutes).
    pub session_idle: Option<Duration>,
    /// How many connections each listener (`/mcp`, the admin API) keeps open at once (`None`:
    /// the server's default, 512); one more is closed at once.
    pub max_connections: Option<usize>,
    /// How long a client has to send a request's head (`None`: the server's default, 10 s).
    pub header_timeout: Option<Duration>,
    /// How long a client has to send a request's body (`None`: the server's default, 30 s).
    pub body_timeout: Option<Duration>,
    /// How many `subscriptions/listen` streams may be open at once (`None`: the server's
    /// default, 256).
    pub max_listen_streams: Option<usize>,
    /// How many of them one client may hold (`None`: the server's default, 32).
    pub max_listen_streams_per_client: Option<usize>,
    /// How many resources one session or listen stream may follow (`None`: the server's
    /// default, 1000).
    pub max_subscriptions: Option<usize>,
    /// How many bytes their URIs may take, in all (`None`: the server's default, 64 KiB).
    pub max_subscription_bytes: Option<usize>,
    /// How many events a stream holds for a client that reads them slowly (`None`: the
    /// server's default, 16).
    pub stream_queue: Option<usize>,
    /// How long a GET or `subscriptions/listen` stream lasts before it ends and its client
    /// opens another (`None`: the server's default, 30 minutes).
    pub stream_max_age: Option<Duration>,
    /// `public_url`: where clients reach the gateway (`https://gateway.example.com`), under
    /// which callers of servers that sign in each caller come back (`/oauth/callback`).
    pub public_url: Option<url::Url>,
    /// `llm_api`: serve the OpenAI-compatible endpoint (`/v1/responses`,
    /// `/v1/chat/completions`) on this listener too, as `[llm]` says (default false).
    pub llm_api: bool,
    /// `metrics`: serve `GET /metrics` (Prometheus) on this listener too, not only on the
    /// admin API's (default false).
    pub metrics: bool,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            listen: DEFAULT_LISTEN.parse().expect("DEFAULT_LISTEN must parse"),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            startup_wait: DEFAULT_STARTUP_WAIT,
            max_sessions: None,
            max_sessions_per_client: None,
            session_idle: None,
            max_connections: None,
            header_timeout: None,
            body_timeout: None,
            max_listen_streams: None,
            max_listen_streams_per_client: None,
            max_subscriptions: None,
            max_subscription_bytes: None,
            stream_queue: None,
            stream_max_age: None,
            public_url: None,
            llm_api: false,
            metrics: false,
        }
    }
}

/// `[servers.<name>]`: one upstream MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The key under `servers`. Non-empty, characters `[A-Za-z0-9_.-]`.
    pub name: String,
    /// How to reach it.
    pub transport: TransportConfig,
    /// Prefix of its exposed names; defaults to `name`; empty means passthrough.
    pub prefix: String,
    /// Which of its tools are exposed.
    pub tools: ToolFilter,
    /// Which protocol era toolgate speaks to it (`protocol = "..."`).
    pub protocol: UpstreamProtocol,
    /// Time allowed for connect + handshake.
    pub startup_timeout: Duration,
    /// Time allowed for one call.
    pub timeout: Duration,
    /// How long a call waits for the server while it is restarting (its tools stay listed).
    pub restart_wait: Duration,
    /// When true, `serve` refuses to start without this server.
    pub required: bool,
    /// When false, the server is not started at all.
    pub enabled: bool,
    /// `integrity = { drift, unknown, poisoning }`: how the `integrity` interceptor treats this
    /// server, over its own defaults; checked when the pipeline is built (its options).
    pub integrity: Option<serde_json::Map<String, serde_json::Value>>,
    /// `response_format = { "<tool glob>" = "<item>" }`: which OpenAI Responses item each tool's
    /// results become, as written (keys are the server's own tool names or globs of them); see
    /// [`ServerConfig::response_format_for`]. Empty = none configured.
    pub response_format: Vec<(String, ResultFormat)>,
    /// `replica = "NAME"`: the one replica that runs this server (a stateful one), named as
    /// `[state] replica` names each; the others reach it through the shared state. `None`:
    /// every replica runs its own.
    pub replica: Option<String>,
    /// How its lists are kept fresh besides its own `list_changed` notifications
    /// (`tool_ttl`, `refresh_interval`, `refresh_on_error`, here or in `[inventory]`).
    pub refresh: Refresh,
}

impl ServerConfig {
    /// A server called `name` (its prefix too) reached through `transport`, with every other
    /// setting at its default, as a table giving only those two would have.
    pub fn new(name: impl Into<String>, transport: TransportConfig) -> ServerConfig {
        let name = name.into();
        ServerConfig {
            prefix: name.clone(),
            name,
            transport,
            tools: ToolFilter::default(),
            protocol: UpstreamProtocol::default(),
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            timeout: DEFAULT_CALL_TIMEOUT,
            restart_wait: DEFAULT_RESTART_WAIT,
            required: false,
            enabled: true,
            integrity: None,
            response_format: Vec::new(),
            replica: None,
            refresh: Refresh::default(),
        }
    }
}

/// How an upstream's lists are kept fresh, for a server that changes them without saying so
/// (`list_changed`). Each `None` is off; a zero duration is off too (a server's own zero
/// turns off what `[inventory]` sets for every server).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refresh {
    /// `tool_ttl`: lists older than this are listed again before a client's list request is
    /// answered.
    pub tool_ttl: Option<Duration>,
    /// `refresh_interval`: the lists are listed again this often.
    pub interval: Option<Duration>,
    /// `refresh_on_error`: a call of a tool toolgate does not know, or that the server
    /// answers it does not have, lists the server's tools again (and the call is tried again
    /// once when the tool then exists).
    pub on_error: Option<bool>,
}

impl Refresh {
    /// This server's settings, each that it leaves out taken from `defaults`.
    #[must_use]
    pub fn or(self, defaults: Refresh) -> Refresh {
        Refresh {
            tool_ttl: self.tool_ttl.or(defaults.tool_ttl),
            interval: self.interval.or(defaults.interval),
            on_error: self.on_error.or(defaults.on_error),
        }
    }

    /// `tool_ttl`, unless off.
    pub fn ttl(&self) -> Option<Duration> {
        self.tool_ttl.filter(|ttl| !ttl.is_zero())
    }

    /// `refresh_interval`, unless off.
    pub fn every(&self) -> Option<Duration> {
        self.interval.filter(|interval| !interval.is_zero())
    }

    /// Whether `refresh_on_error` is on.
    pub fn on_unknown_tool(&self) -> bool {
        self.on_error == Some(true)
    }
}

/// How an upstream is reached.
// One per configured server, built once when the config loads: the size of the HTTP variant
// (its sign-in, proxy and TLS settings) costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum TransportConfig {
    /// A child process speaking MCP on its stdin/stdout.
    Stdio(StdioConfig),
    /// A remote server over HTTP.
    Http(HttpConfig),
    /// A server inside toolgate itself (a script's tools), reached through an in-memory pipe.
    /// Never read from a config file: toolgate builds it, and hands the live server to the
    /// upstream layer beside this description.
    InProcess(InProcessConfig),
}

impl TransportConfig {
    /// Short name for logs and `toolgate servers`: `stdio`, `streamable-http`, `sse` or `auto`.
    pub fn kind(&self) -> &'static str {
        match self {
            TransportConfig::Stdio(_) => "stdio",
            TransportConfig::Http(http) => http.transport.as_str(),
            TransportConfig::InProcess(_) => "in-process",
        }
    }
}

/// The variables a child inherits from toolgate unless its config says more: what the
/// official MCP SDKs pass to the servers they start (`HOME`, `LOGNAME`, `PATH`, `SHELL`,
/// `TERM`, `USER`), plus the locale (`LANG`, `LC_*`) and `TMPDIR`. Names or `*` globs.
pub const DEFAULT_INHERITED_ENV: &[&str] =
    &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_*", "TMPDIR"];

/// A child process upstream.
///
/// Its environment is built from nothing: the inherited variables [`DEFAULT_INHERITED_ENV`]
/// and `env_pass` name (a name in `withheld` only when `env_pass` names it exactly), minus
/// those `env_remove` names, plus `env`.
#[derive(Debug, Clone, PartialEq)]
pub struct StdioConfig {
    /// Program to run (looked up on `PATH` when it has no `/`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set in its environment (on top of the inherited ones).
    pub env: BTreeMap<String, Secret>,
    /// Names (or `*` globs) of toolgate's variables the child inherits besides
    /// [`DEFAULT_INHERITED_ENV`] (`env_pass = ["GITHUB_TOKEN", "AWS_*"]`).
    pub env_pass: Vec<String>,
    /// Names (or `*` globs) of inherited variables removed from its environment.
    pub env_remove: Vec<String>,
    /// Working directory; `None` = toolgate's own.
    pub cwd: Option<PathBuf>,
    /// Variables never inherited by default or through a glob, only when `env_pass` names
    /// them exactly: where toolgate's own secrets come from ([`Config::secret_env`]; the
    /// loader fills it in).
    pub withheld: BTreeSet<String>,
}

impl StdioConfig {
    /// A child running `command` with `args`, and every other setting at its default.
    pub fn new(command: impl Into<String>, args: Vec<String>) -> StdioConfig {
        StdioConfig {
            command: command.into(),
            args,
            env: BTreeMap::new(),
            env_pass: Vec::new(),
            env_remove: Vec::new(),
            cwd: None,
            withheld: BTreeSet::new(),
        }
    }
}

/// A server inside toolgate (see [`TransportConfig::InProcess`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InProcessConfig {
    /// What serves it, for messages and `toolgate servers`: a script's file, or the replica a
    /// pinned server runs on.
    pub origin: PathBuf,
}

/// A remote upstream.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpConfig {
    /// Endpoint URL (`http` or `https`).
    pub url: url::Url,
    /// Which HTTP transport to speak.
    pub transport: HttpTransport,
    /// Extra request headers (for example `Authorization`).
    pub headers: BTreeMap<String, Secret>,
    /// `pool`: keep connections to this server open between requests and reuse them (the
    /// default). `false` opens a connection per request: for a server that leaves Nagle's
    /// algorithm on, whose answers can wait up to 40 ms for the delayed ACK of a reused
    /// connection (toolgate-upstream's `http_client` says why), or one that mishandles reused
    /// connections.
    pub pool: bool,
    /// How toolgate signs in when the server asks for OAuth (`oauth`).
    pub oauth: OAuthConfig,
    /// Which proxy its requests take: its own `proxy`, else `[proxy]`, else the variables
    /// (resolved when the config is loaded).
    pub proxy: ProxyChoice,
    /// `tls`: what its certificate is checked against, and the one toolgate shows it.
    pub tls: TlsConfig,
}

impl HttpConfig {
    /// A server at `url` with every other setting at its default.
    pub fn new(url: url::Url) -> HttpConfig {
        HttpConfig {
            url,
            transport: HttpTransport::default(),
            headers: BTreeMap::new(),
            pool: true,
            oauth: OAuthConfig::default(),
            proxy: ProxyChoice::default(),
            tls: TlsConfig::default(),
        }
    }
}

/// `transport = "..."` of an HTTP upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpTransport {
    /// Try streamable HTTP, fall back to legacy HTTP+SSE by the spec's rule.
    #[default]
    Auto,
    /// Streamable HTTP (2025-03-26 and later).
    StreamableHttp,
    /// Legacy HTTP+SSE (2024-11-05).
    Sse,
}

impl HttpTransport {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpTransport::Auto => "auto",
            HttpTransport::StreamableHttp => "streamable-http",
            HttpTransport::Sse => "sse",
        }
    }
}

/// `protocol = "..."` of an upstream: which era toolgate speaks to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpstreamProtocol {
    /// Ask with `server/discover` (2026-07-28) first, and use the `initialize` handshake when
    /// the server does not know it. Over legacy HTTP+SSE, which has no 2026-07-28, the
    /// handshake.
    #[default]
    Auto,
    /// The `initialize` handshake only (2025-11-25 and older), for a server that mishandles a
    /// `server/discover` it does not know.
    Handshake,
    /// `server/discover` only (2026-07-28): a server that does not speak it fails to connect.
    Stateless,
}

impl UpstreamProtocol {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamProtocol::Auto => "auto",
            UpstreamProtocol::Handshake => "2025-11-25",
            UpstreamProtocol::Stateless => "2026-07-28",
        }
    }
}

/// `allow_tools` / `deny_tools`, as written. A tool is exposed when it matches some `allow`
/// pattern (or `allow` is empty) and no `deny` pattern. Patterns are globs (`*`, `?`, `[..]`),
/// already checked to compile.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolFilter {
    /// Globs of original tool names to expose; empty = all.
    pub allow: Vec<String>,
    /// Globs of original tool names to hide.
    pub deny: Vec<String>,
}

/// A string that may hold a secret: `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

// === an HTTP server's sign-in (`oauth`, checked in `oauth.rs`) ===

/// Signing algorithms toolgate can sign a client assertion with (RFC 7523).
pub const ASSERTION_ALGORITHMS: &[&str] = &["RS256", "RS384", "RS512", "PS256", "ES256", "ES384"];

/// How toolgate signs in to one HTTP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthConfig {
    /// `false` when the config says `oauth = false`: a `401` is then only an error.
    pub enabled: bool,
    /// Which grant obtains the tokens.
    pub flow: OAuthFlow,
    /// A client registered with the authorization server beforehand. Without one, toolgate
    /// uses `client_metadata_url` where the server accepts it, else dynamic registration.
    pub client_id: Option<String>,
    /// The secret of `client_id`, for a confidential client.
    pub client_secret: Option<Secret>,
    /// An `https` URL where toolgate's Client ID Metadata Document is published.
    pub client_metadata_url: Option<url::Url>,
    /// A PEM private key to sign client assertions with (`private_key_jwt`, RFC 7523).
    pub private_key: Option<Secret>,
    /// The algorithm of `private_key` (`RS256` unless said).
    pub algorithm: String,
    /// Scopes to ask for besides those the server names.
    pub scopes: Vec<String>,
    /// The loopback port that receives the authorization redirect (any free port unless
    /// said), for a pre-registered client whose redirect URI names a port.
    pub redirect_port: Option<u16>,
    /// Each caller signs in with their own account, and calls go out with their own token.
    pub per_principal: bool,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            enabled: true,
            flow: OAuthFlow::AuthorizationCode,
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            private_key: None,
            algorithm: "RS256".to_owned(),
            scopes: Vec::new(),
            redirect_port: None,
            per_principal: false,
        }
    }
}

/// `flow = "..."`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OAuthFlow {
    /// A person signs in through a browser (`toolgate login`): authorization code with PKCE.
    #[default]
    AuthorizationCode,
    /// The gateway is the client itself, with a secret or a private key: no person at hand.
    ClientCredentials,
}

impl OAuthFlow {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OAuthFlow::AuthorizationCode => "authorization_code",
            OAuthFlow::ClientCredentials => "client_credentials",
        }
    }
}

// === egress (`[proxy]`, `proxy`, `tls`; checked in `egress.rs`) ===

/// Which proxy requests take: the variables, none, or the ones configured.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ProxyChoice {
    /// What `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` and `NO_PROXY` (or their lowercase forms)
    /// say, read when the HTTP client is built: nothing configured.
    #[default]
    Environment,
    /// `proxy = false`: straight to the server, whatever the variables say.
    Direct,
    /// The proxies configured (`[proxy]`, or a `proxy = "..."` of its own); the variables are
    /// not read.
    Via(ProxyConfig),
}

/// Proxies by the scheme of the URL requested, and the hosts that go direct.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProxyConfig {
    /// The proxy of `http://` URLs (a URL that may hold `user:pass@`); `None`: direct.
    pub http: Option<Secret>,
    /// The proxy of `https://` URLs; `None`: direct.
    pub https: Option<Secret>,
    /// Hosts reached directly: names (a name also covers its subdomains), `.domain` suffixes,
    /// IP addresses, CIDR ranges, or `*` for all.
    pub no_proxy: Vec<String>,
}

impl ProxyConfig {
    /// Every URL through `proxy`.
    pub fn all(proxy: Secret) -> ProxyConfig {
        ProxyConfig { http: Some(proxy.clone()), https: Some(proxy), no_proxy: Vec::new() }
    }

    /// `no_proxy` as the variable writes it (comma-separated).
    pub fn no_proxy_string(&self) -> String {
        self.no_proxy.join(",")
    }
}

/// `tls = { ... }` of an HTTP server: what its certificate is checked against, and the
/// certificate toolgate shows it. The default is the usual verification against the system's
/// roots, with no client certificate.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsConfig {
    /// `ca`: certificates trusted for this server besides the system's roots.
    pub ca: Option<PemFile>,
    /// `client_cert`: the certificate chain shown to a server that asks for one (mutual TLS).
    pub client_cert: Option<PemFile>,
    /// `client_key`: its private key; set exactly when `client_cert` is.
    pub client_key: Option<PemFile>,
    /// `pin_sha256`: the SHA-256 of the DER of the server's own (leaf) certificate must be
    /// one of these, on top of the usual verification; empty: no pin.
    pub pin_sha256: Vec<[u8; 32]>,
    /// `insecure_skip_verify`: no verification at all (a warning on every connection).
    pub insecure_skip_verify: bool,
}

impl TlsConfig {
    /// Whether this is the usual verification and nothing more.
    pub fn is_default(&self) -> bool {
        *self == TlsConfig::default()
    }
}

/// A PEM file named in the config, read when it was loaded. Its text is a [`Secret`] (a
/// private key's is), which `Debug` does not show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PemFile {
    /// The file, resolved against the config file's directory.
    pub path: PathBuf,
    /// What it held, checked to be PEM of the right kind.
    pub pem: Secret,
}

/// `[state]`: where replicas of one gateway keep what they share (memory: one process keeps
/// it all), and the key they seal what they hand to clients with.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StateConfig {
    /// Where shared state lives.
    pub backend: StateBackend,
    /// The same secret on every replica (at least 32 bytes); `None`: nothing is sealed for
    /// another replica to read.
    pub shared_key: Option<Secret>,
    /// This replica's name (`replica = "${TOOLGATE_REPLICA}"`: the same config, a name from each
    /// replica's environment), which servers pinned with `[servers.NAME] replica` are matched
    /// against. `None`: unnamed (no server can be pinned to it).
    pub replica: Option<String>,
}

/// `[state] backend`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum StateBackend {
    /// In this process (the default): nothing is shared.
    #[default]
    Memory,
    /// A Redis server: `redis://` or `rediss://` (TLS), the whole URL, which may hold a
    /// password.
    Redis(Secret),
    /// A PostgreSQL database: `postgres://` or `postgresql://`, the whole URL.
    Postgres(Secret),
}

/// `[telemetry]`, resolved with the environment: traces are sent when there is an endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetryConfig {
    /// Where spans are POSTed (the whole URL, ending in `/v1/traces`); `None`: tracing is off.
    pub endpoint: Option<url::Url>,
    /// Extra request headers for the receiver (secrets).
    pub headers: std::collections::BTreeMap<String, Secret>,
    /// The share of new traces kept, 0.0 to 1.0; a request that continues a trace follows
    /// its parent's choice.
    pub sampling: f64,
    /// `service.name` of the spans.
    pub service_name: String,
    /// Whether a tool call's arguments and result go into its span (the conventions' opt-in
    /// `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`).
    pub record_arguments: bool,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            endpoint: None,
            headers: std::collections::BTreeMap::new(),
            sampling: 1.0,
            service_name: "toolgate".to_owned(),
            record_arguments: false,
        }
    }
}
