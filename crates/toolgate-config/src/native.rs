//! `toolgate.toml`, toolgate's own format: `import`, `[gateway]`, `[servers.<name>]` and
//! `[[pipeline]]` (`[audit]` and `[admin]` are checked in `audit`, `[agent]` in `agent`,
//! `[llm]` in `llm`, `[scripts]` in `scripts`, `[auth]` in `auth`).

use crate::check::{Checker, Entry, ServerKind, optional};
use crate::error::{index_path, key_path};
use crate::model::{
    AdminConfig, AuditConfig, DEFAULT_CALL_TIMEOUT, DEFAULT_RESTART_WAIT, DEFAULT_STARTUP_TIMEOUT,
    GatewayConfig, HttpConfig, HttpTransport, InterceptorConfig, ServerConfig, StdioConfig,
    ToolFilter, TransportConfig, UpstreamProtocol,
};
use crate::value::Value;

pub(crate) const TOP_KEYS: &[&str] = &[
    "import",
    "gateway",
    "servers",
    "pipeline",
    "audit",
    "admin",
    "agent",
    "llm",
    "pool",
    "scripts",
    "auth",
    "tenants",
    "proxy",
    "telemetry",
    "state",
    "inventory",
];
const GATEWAY_KEYS: &[&str] = &[
    "listen",
    "allowed_hosts",
    "allowed_origins",
    "startup_wait",
    "max_sessions",
    "max_sessions_per_client",
    "session_idle",
    "http_front",
    "max_connections",
    "header_timeout",
    "body_timeout",
    "max_listen_streams",
    "max_listen_streams_per_client",
    "max_subscriptions",
    "max_subscription_bytes",
    "stream_queue",
    "stream_max_age",
    "public_url",
    "llm_api",
    "metrics",
];
const SERVER_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "env_pass",
    "env_remove",
    "cwd",
    "url",
    "transport",
    "headers",
    "pool",
    "proxy",
    "tls",
    "prefix",
    "allow_tools",
    "deny_tools",
    "protocol",
    "startup_timeout",
    "timeout",
    "restart_wait",
    "required",
    "enabled",
    "integrity",
    "response_format",
    "oauth",
    "replica",
    "tool_ttl",
    "refresh_interval",
    "refresh_on_error",
];
const STDIO_KEYS: &[&str] = &["args", "env", "env_pass", "env_remove", "cwd"];
const HTTP_KEYS: &[&str] = &["transport", "headers", "pool", "oauth", "proxy", "tls"];

/// What a `toolgate.toml` holds, once checked. Parts that failed are left at their defaults;
/// the checker has the errors.
#[derive(Debug, Default)]
pub(crate) struct Document {
    pub(crate) gateway: GatewayConfig,
    pub(crate) servers: Vec<Entry>,
    pub(crate) imports: Vec<Import>,
    pub(crate) pipeline: Vec<InterceptorConfig>,
    pub(crate) audit: AuditConfig,
    pub(crate) admin: Option<AdminConfig>,
    pub(crate) agent: crate::agent::AgentConfig,
    pub(crate) llm: crate::llm::LlmConfig,
    pub(crate) scripts: crate::scripts::ScriptsConfig,
    pub(crate) auth: Option<crate::auth::AuthConfig>,
    pub(crate) tenants: std::collections::BTreeMap<String, crate::tenants::TenantConfig>,
    /// The entries of every `[[tenants.NAME.pipeline]]`, each for its tenant only.
    pub(crate) tenant_pipeline: Vec<InterceptorConfig>,
    /// `[proxy]`, when written (`load` applies it to the servers without a `proxy` of their
    /// own).
    pub(crate) proxy: Option<crate::model::ProxyConfig>,
    /// `[telemetry]` as written, checked with the environment once the format is known.
    pub(crate) telemetry: Option<Value>,
    /// `[state]` as written, checked with the environment once the format is known.
    pub(crate) state: Option<Value>,
    /// `[inventory]` as written, applied to every server once the imports are read too.
    pub(crate) inventory: Option<Value>,
}

/// One `import` entry.
#[derive(Debug)]
pub(crate) struct Import {
    /// `import[i]`
    pub(crate) path: String,
    /// The file as written (relative to the TOML file's directory).
    pub(crate) file: String,
}

/// Checks a whole `toolgate.toml` document.
pub(crate) fn check(cx: &mut Checker<'_>, root: &Value) -> Document {
    let mut document = Document::default();
    let Some(entries) = cx.table(root, "") else { return document };
    let fields = cx.known_keys(entries, "", TOP_KEYS);
    if let Some(value) = fields.get("gateway")
        && let Some(gateway) = check_gateway(cx, value)
    {
        document.gateway = gateway;
    }
    if let Some(value) = fields.get("servers")
        && let Some(servers) = cx.table(value, "servers")
    {
        document.servers =
            servers.iter().filter_map(|(name, value)| check_server(cx, name, value)).collect();
    }
    if let Some(value) = fields.get("proxy") {
        document.proxy = crate::egress::check_proxy_table(cx, value);
    }
    if let Some(value) = fields.get("pipeline") {
        document.pipeline = crate::pipeline::check_pipeline(cx, value);
    }
    if let Some(value) = fields.get("audit")
        && let Some(audit) = crate::audit::check_audit(cx, value)
    {
        document.audit = audit;
    }
    if let Some(value) = fields.get("admin") {
        document.admin = crate::audit::check_admin(cx, value);
    }
    if let Some(value) = fields.get("agent")
        && let Some(agent) = crate::agent::check_agent(cx, value)
    {
        document.agent = agent;
    }
    if let Some(value) = fields.get("llm")
        && let Some(llm) = crate::llm::check_llm(cx, value)
    {
        document.llm = llm;
    }
    if let Some(value) = fields.get("pool")
        && let Some(pool) = crate::llm::check_pool(cx, value)
    {
        document.llm.pool = pool;
    }
    if let Some(value) = fields.get("scripts")
        && let Some(scripts) = crate::scripts::check_scripts(cx, value)
    {
        document.scripts = scripts;
    }
    if let Some(value) = fields.get("auth") {
        document.auth = crate::auth::check_auth(cx, value);
    }
    if let Some(Value::Table(admin)) = fields.get("admin")
        && !admin.iter().any(|(key, _)| key == "tokens")
        && document
            .auth
            .as_ref()
            .is_none_or(|auth| auth.roles.admins.is_empty() && auth.roles.approvers.is_empty())
    {
        cx.error(
            "admin",
            "missing `tokens`: the admin API needs at least one `name = \"${TOKEN_VAR}\"` (the \
             name is who approves), or members in [auth.roles]",
        );
    }
    // A server that signs in each caller sends them back to the gateway's public address.
    if document.gateway.public_url.is_none() {
        for entry in &document.servers {
            if let TransportConfig::Http(http) = &entry.server.transport
                && http.oauth.per_principal
            {
                cx.error(
                    &format!("{}.oauth.per_principal", key_path("servers", &entry.server.name)),
                    "needs [gateway] public_url: the address callers come back to after signing \
                     in (its /oauth/callback)",
                );
            }
        }
    }
    if let Some(value) = fields.get("tenants")
        && let Some((tenants, pipeline)) = crate::tenants::check_tenants(cx, value)
    {
        document.tenants = tenants;
        document.tenant_pipeline = pipeline;
    }
    document.telemetry = fields.get("telemetry").map(|value| (*value).clone());
    document.state = fields.get("state").map(|value| (*value).clone());
    document.inventory = fields.get("inventory").map(|value| (*value).clone());
    if let Some(value) = fields.get("import")
        && let Some(files) = cx.strings(value, "import")
    {
        document.imports = files
            .into_iter()
            .enumerate()
            .map(|(i, file)| Import { path: index_path("import", i), file: file.to_owned() })
            .collect();
    }
    document
}

fn check_gateway(cx: &mut Checker<'_>, value: &Value) -> Option<GatewayConfig> {
    let entries = cx.table(value, "gateway")?;
    let fields = cx.known_keys(entries, "gateway", GATEWAY_KEYS);
    let defaults = GatewayConfig::default();
    let listen = match fields.get("listen") {
        None => Some(defaults.listen),
        Some(value) => cx.listen(value, "gateway.listen"),
    };
    let allowed_hosts = match fields.get("allowed_hosts") {
        None => Some(defaults.allowed_hosts),
        Some(value) => hosts(cx, value, "gateway.allowed_hosts"),
    };
    let startup_wait = match fields.get("startup_wait") {
        None => Some(defaults.startup_wait),
        Some(value) => cx.duration(value, "gateway.startup_wait"),
    };
    let allowed_origins = match fields.get("allowed_origins") {
        None => Some(defaults.allowed_origins),
        Some(value) => origins(cx, value, "gateway.allowed_origins"),
    };
    let max_sessions =
        optional_count(cx, fields.get("max_sessions").copied(), "gateway.max_sessions");
    let max_sessions_per_client = optional_count(
        cx,
        fields.get("max_sessions_per_client").copied(),
        "gateway.max_sessions_per_client",
    );
    // `http_front` chose between toolgate's own HTTP front and rmcp's; only the first is left.
    // "toolgate" is still accepted so that configs that named it keep working.
    if let Some(value) = fields.get("http_front")
        && let Some(front) = cx.string(value, "gateway.http_front")
        && front != "toolgate"
    {
        let why = if front == "rmcp" {
            "\"rmcp\" is no longer available: toolgate serves /mcp with its own front (remove \
             the key)"
                .to_owned()
        } else {
            format!(
                "unknown front {front:?} (the only one is \"toolgate\"; the key can be removed)"
            )
        };
        cx.error("gateway.http_front", why);
    }
    let session_idle =
        optional_duration(cx, fields.get("session_idle").copied(), "gateway.session_idle");
    let count = |cx: &mut Checker<'_>, key: &str| {
        optional_count(cx, fields.get(key).copied(), &format!("gateway.{key}"))
    };
    let max_connections = count(cx, "max_connections");
    let max_listen_streams = count(cx, "max_listen_streams");
    let max_listen_streams_per_client = count(cx, "max_listen_streams_per_client");
    let max_subscriptions = count(cx, "max_subscriptions");
    let stream_queue = count(cx, "stream_queue");
    let duration = |cx: &mut Checker<'_>, key: &str| {
        optional_duration(cx, fields.get(key).copied(), &format!("gateway.{key}"))
    };
    let header_timeout = duration(cx, "header_timeout");
    let body_timeout = duration(cx, "body_timeout");
    let stream_max_age = duration(cx, "stream_max_age");
    let public_url = match fields.get("public_url") {
        None => Some(None),
        Some(value) => cx.url(value, "gateway.public_url").map(Some),
    };
    let llm_api = match fields.get("llm_api") {
        None => Some(defaults.llm_api),
        Some(value) => cx.boolean(value, "gateway.llm_api"),
    };
    let metrics = match fields.get("metrics") {
        None => Some(defaults.metrics),
        Some(value) => cx.boolean(value, "gateway.metrics"),
    };
    let max_subscription_bytes = match fields.get("max_subscription_bytes") {
        None => Some(None),
        Some(value) => size(cx, value, "gateway.max_subscription_bytes")
            .map(|bytes| Some(usize::try_from(bytes).unwrap_or(usize::MAX))),
    };
    Some(GatewayConfig {
        listen: listen?,
        allowed_hosts: allowed_hosts?,
        allowed_origins: allowed_origins?,
        startup_wait: startup_wait?,
        max_sessions: max_sessions?,
        max_sessions_per_client: max_sessions_per_client?,
        session_idle: session_idle?,
        max_connections: max_connections?,
        header_timeout: header_timeout?,
        body_timeout: body_timeout?,
        max_listen_streams: max_listen_streams?,
        max_listen_streams_per_client: max_listen_streams_per_client?,
        max_subscriptions: max_subscriptions?,
        max_subscription_bytes: max_subscription_bytes?,
        stream_queue: stream_queue?,
        stream_max_age: stream_max_age?,
        public_url: public_url?,
        llm_api: llm_api?,
        metrics: metrics?,
    })
}

/// A number of bytes: an integer, or a string such as `"64KiB"` (the units of `[scripts]
/// memory`).
fn size(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<u64> {
    match value {
        Value::String(text) => match crate::scripts::parse_memory(text) {
            Ok(bytes) => Some(bytes),
            Err(reason) => {
                cx.error(path, format!("invalid size {text:?}: {reason}"));
                None
            }
        },
        Value::Integer(n) if *n >= 1 => u64::try_from(*n).ok(),
        Value::Integer(n) => {
            cx.error(path, format!("{n} is out of range (at least 1)"));
            None
        }
        other => {
            cx.expected(path, "a number of bytes or a size such as \"64KiB\"", other);
            None
        }
    }
}

/// An optional duration greater than zero (`Some(None)`: not set; `None`: a problem was
/// reported).
fn optional_duration(
    cx: &mut Checker<'_>,
    value: Option<&Value>,
    path: &str,
) -> Option<Option<std::time::Duration>> {
    match value {
        None => Some(None),
        Some(value) => cx.duration(value, path).and_then(|d| cx.positive(d, path)).map(Some),
    }
}

/// An optional count of at least 1 (`Some(None)`: not set; `None`: a problem was reported).
fn optional_count(
    cx: &mut Checker<'_>,
    value: Option<&Value>,
    path: &str,
) -> Option<Option<usize>> {
    match value {
        None => Some(None),
        Some(Value::Integer(n)) if *n >= 1 => Some(usize::try_from(*n).ok()),
        Some(Value::Integer(n)) => {
            cx.error(path, format!("{n} is out of range (at least 1)"));
            None
        }
        Some(other) => {
            cx.expected(path, "a positive integer", other);
            None
        }
    }
}

/// Host names (optionally with `:port`) accepted in the `Host` header.
fn hosts(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Vec<String>> {
    let hosts = cx.strings(value, path)?;
    let mut ok = true;
    for (i, host) in hosts.iter().enumerate() {
        let valid = !host.is_empty()
            && host.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']' | '_')
            });
        if !valid {
            cx.error(
                &index_path(path, i),
                format!("invalid host {host:?} (expected a host name, optionally with :port)"),
            );
            ok = false;
        }
    }
    ok.then(|| hosts.into_iter().map(str::to_owned).collect())
}

/// Origins (`scheme://host[:port]`) accepted in the `Origin` header.
fn origins(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<Vec<String>> {
    let origins = cx.strings(value, path)?;
    let mut out = Some(Vec::with_capacity(origins.len()));
    for (i, origin) in origins.into_iter().enumerate() {
        let trimmed = origin.strip_suffix('/').unwrap_or(origin);
        // `:*`: any port of that scheme and host.
        let base = trimmed.strip_suffix(":*").unwrap_or(trimmed);
        let valid = url::Url::parse(base).is_ok_and(|url| {
            url.host().is_some()
                && url.username().is_empty()
                && url.password().is_none()
                && url.path() == "/"
                && url.query().is_none()
                && url.fragment().is_none()
        });
        match (valid, &mut out) {
            (true, Some(out)) => out.push(trimmed.to_owned()),
            (true, None) => {}
            (false, _) => {
                cx.error(
                    &index_path(path, i),
                    format!("invalid origin {origin:?} (expected scheme://host[:port], or :* for any port)"),
                );
                out = None;
            }
        }
    }
    out
}

fn check_server(cx: &mut Checker<'_>, name: &str, value: &Value) -> Option<Entry> {
    let path = key_path("servers", name);
    let name_ok = cx.server_name(name, &path);
    let entries = cx.table(value, &path)?;
    let fields = cx.known_keys(entries, &path, SERVER_KEYS);
    let at = |key: &str| key_path(&path, key);

    let mode = cx.mode(&path, &fields, STDIO_KEYS, HTTP_KEYS);
    let stdio = mode != Some(ServerKind::Http);
    let http = mode != Some(ServerKind::Stdio);
    let field = |key: &str, wanted: bool| fields.get(key).copied().filter(|_| wanted);

    let command = field("command", true).map(|v| cx.command(v, &at("command")));
    let args = optional(field("args", stdio), |v| cx.args(v, &at("args")));
    let env = optional(field("env", stdio), |v| cx.env_vars(v, &at("env")));
    let env_pass = optional(field("env_pass", stdio), |v| cx.env_pass(v, &at("env_pass")));
    let env_remove = optional(field("env_remove", stdio), |v| cx.env_remove(v, &at("env_remove")));
    let cwd = optional(field("cwd", stdio), |v| cx.cwd(v, &at("cwd")).map(Some));
    let url = field("url", true).map(|v| cx.url(v, &at("url")));
    let transport = optional(field("transport", http), |v| transport(cx, v, &at("transport")));
    // A server's credentials are a secret of toolgate's toward that server: no other (stdio)
    // server inherits the variables they come from unless it names them exactly.
    let headers =
        optional(field("headers", http), |v| cx.secret(|cx| cx.headers(v, &at("headers"))));
    let pool = optional(field("pool", http), |v| cx.boolean(v, &at("pool")));
    let oauth = optional(field("oauth", http), |v| crate::oauth::check(cx, v, &at("oauth")));
    let proxy =
        optional(field("proxy", http), |v| crate::egress::check_proxy_choice(cx, v, &at("proxy")));
    // A bad url is reported on its own; `tls` is then checked as if for https.
    let https = !matches!(&url, Some(Some(url)) if url.scheme() != "https");
    let tls = optional(field("tls", http), |v| crate::egress::check_tls(cx, v, &at("tls"), https));
    let prefix = match fields.get("prefix") {
        Some(value) => cx.prefix(value, &at("prefix")),
        None => Some(cx.default_prefix(name, &path)),
    };
    let allow = optional(fields.get("allow_tools").copied(), |v| cx.globs(v, &at("allow_tools")));
    let deny = optional(fields.get("deny_tools").copied(), |v| cx.globs(v, &at("deny_tools")));
    let protocol =
        optional(fields.get("protocol").copied(), |v| upstream_protocol(cx, v, &at("protocol")));
    let startup_timeout = optional(fields.get("startup_timeout").copied(), |v| {
        cx.duration(v, &at("startup_timeout"))
    })
    .map(|d| d.unwrap_or(DEFAULT_STARTUP_TIMEOUT));
    let timeout = optional(fields.get("timeout").copied(), |v| cx.duration(v, &at("timeout")))
        .map(|d| d.unwrap_or(DEFAULT_CALL_TIMEOUT));
    let restart_wait =
        optional(fields.get("restart_wait").copied(), |v| cx.duration(v, &at("restart_wait")))
            .map(|d| d.unwrap_or(DEFAULT_RESTART_WAIT));
    let required = optional(fields.get("required").copied(), |v| cx.boolean(v, &at("required")));
    let enabled = optional(fields.get("enabled").copied(), |v| cx.boolean(v, &at("enabled")));
    let integrity = optional(fields.get("integrity").copied(), |v| {
        let table = cx.table(v, &at("integrity"))?;
        let json = table.iter().map(|(key, value)| (key.clone(), value.to_json())).collect();
        Some(json)
    });
    let response_format = optional(fields.get("response_format").copied(), |v| {
        crate::response_format::check(cx, v, &at("response_format"))
    });
    let refresh = crate::inventory::refresh(cx, &fields, &path);
    let replica = optional(fields.get("replica").copied(), |v| {
        crate::state::replica_name(cx, v, &at("replica"))
    });

    let transport = match mode? {
        ServerKind::Stdio => TransportConfig::Stdio(StdioConfig {
            command: command??,
            args: args?.unwrap_or_default(),
            env: env?.unwrap_or_default(),
            env_pass: env_pass?.unwrap_or_default(),
            env_remove: env_remove?.unwrap_or_default(),
            cwd: cwd?.flatten(),
            // Filled in once the whole document is read (`load::withhold`).
            withheld: Default::default(),
        }),
        ServerKind::Http => TransportConfig::Http(HttpConfig {
            url: url??,
            transport: transport?.unwrap_or_default(),
            headers: headers?.unwrap_or_default(),
            pool: pool?.unwrap_or(true),
            oauth: oauth?.unwrap_or_default(),
            proxy: proxy?.unwrap_or_default(),
            tls: tls?.unwrap_or_default(),
        }),
    };
    let protocol = protocol?.unwrap_or_default();
    if protocol == UpstreamProtocol::Stateless
        && matches!(&transport, TransportConfig::Http(http) if http.transport == HttpTransport::Sse)
    {
        cx.error(
            &at("protocol"),
            "\"2026-07-28\" cannot be spoken over transport = \"sse\" (legacy HTTP+SSE has \
             only the handshake era); use \"auto\" or \"2025-11-25\"",
        );
        return None;
    }
    let server = ServerConfig {
        prefix: prefix?,
        protocol,
        tools: ToolFilter { allow: allow?.unwrap_or_default(), deny: deny?.unwrap_or_default() },
        startup_timeout: startup_timeout?,
        timeout: timeout?,
        restart_wait: restart_wait?,
        required: required?.unwrap_or(false),
        enabled: enabled?.unwrap_or(true),
        integrity: integrity?,
        response_format: response_format?.unwrap_or_default(),
        replica: replica?,
        refresh: refresh?,
        ..ServerConfig::new(name_ok.then(|| name.to_owned())?, transport)
    };
    Some(Entry { server, place: cx.place(&path) })
}

fn upstream_protocol(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<UpstreamProtocol> {
    let all = [UpstreamProtocol::Auto, UpstreamProtocol::Handshake, UpstreamProtocol::Stateless];
    one_of(cx, value, path, "protocol", all, UpstreamProtocol::as_str)
}

fn transport(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<HttpTransport> {
    let all = [HttpTransport::Auto, HttpTransport::StreamableHttp, HttpTransport::Sse];
    one_of(cx, value, path, "transport", all, HttpTransport::as_str)
}

/// The one of `all` whose spelling (`name`) `value` is; an error naming `what` and every
/// spelling otherwise.
fn one_of<T: Copy, const N: usize>(
    cx: &mut Checker<'_>,
    value: &Value,
    path: &str,
    what: &str,
    all: [T; N],
    name: fn(T) -> &'static str,
) -> Option<T> {
    let text = cx.string(value, path)?;
    let found = all.into_iter().find(|item| name(*item) == text);
    if found.is_none() {
        let expected: Vec<&str> = all.into_iter().map(name).collect();
        cx.error(
            path,
            format!("unknown {what} {text:?} (expected one of: {})", expected.join(", ")),
        );
    }
    found
}
