//! Golden tests: every config in `tests/fixtures/valid` and `tests/fixtures/invalid` is loaded
//! with a fixed environment and compared with the `<name>.expected` file beside it (a dump of
//! the `Config`, or the full error list). `UPDATE_GOLDEN=1 cargo test -p toolgate-config`
//! rewrites the expected files.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use toolgate_config::{
    AdminConfig, AgentConfig, AuditConfig, Config, FixedEnvironment, GatewayConfig, HttpConfig,
    InProcessConfig, InterceptorConfig, LlmConfig, LlmModel, ScriptsConfig, Secret, ServerConfig,
    StdioConfig, ToolFilter, TransportConfig, WebhookConfig,
};

/// Every value of a secret-looking variable contains this; no output may.
const SECRET_MARK: &str = "SECRET";

fn env() -> FixedEnvironment {
    FixedEnvironment::new()
        .with_var("HOME", "/home/ada")
        .with_var("USER", "ada")
        .with_var("EMPTY", "")
        .with_var("MCP_HOST", "mcp.example.com")
        .with_var("REMOTE_TOKEN", "SECRET-remote-token")
        .with_var("GITHUB_PAT", "SECRET-github-pat")
        .with_var("API_KEY", "SECRET-api-key")
        .with_var("ALICE_TOKEN", "SECRET-alice-0123456789")
        .with_var("BOB_TOKEN", "SECRET-bob-0123456789")
        .with_home_dir("/home/ada")
        .with_current_dir("/nonexistent-cwd")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures")
}

#[test]
fn valid_fixtures() {
    run("valid", |path| match toolgate_config::load_file(path, &env()) {
        Ok(config) => {
            let debug = format!("{config:?}");
            assert!(!debug.contains(SECRET_MARK), "{}: Debug shows a secret", path.display());
            Ok(dump(&config))
        }
        Err(errors) => Err(format!("{}: unexpected errors:\n{errors}", path.display())),
    });
}

#[test]
fn invalid_fixtures() {
    run("invalid", |path| match toolgate_config::load_file(path, &env()) {
        Ok(config) => Err(format!("{}: loaded but must fail:\n{}", path.display(), dump(&config))),
        Err(errors) => {
            assert_eq!(errors.file(), Some(path), "errors must name their file");
            assert!(!errors.is_empty());
            Ok(format!("{errors}\n"))
        }
    });
}

/// Checks every fixture in `fixtures/<dir>` (not its subfolders) with `output`.
fn run(dir: &str, output: impl Fn(&Path) -> Result<String, String>) {
    let root = fixtures();
    let dir = root.join(dir);
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let mut paths: Vec<PathBuf> = fs::read_dir(&dir)
        .expect("fixture dir must be readable")
        .map(|entry| entry.expect("fixture entry must be readable").path())
        .filter(|path| {
            path.is_file()
                && matches!(
                    path.extension().and_then(|e| e.to_str()),
                    Some("toml" | "json" | "yaml" | "yml")
                )
        })
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no fixtures in {}", dir.display());

    let mut failures = Vec::new();
    for path in &paths {
        let actual = match output(path) {
            Ok(actual) => actual.replace(&root.display().to_string(), "$FIXTURES"),
            Err(failure) => {
                failures.push(failure);
                continue;
            }
        };
        assert!(
            !actual.contains(SECRET_MARK),
            "{}: output shows a secret:\n{actual}",
            path.display()
        );
        let expected_path = path.with_extension("expected");
        if update {
            fs::write(&expected_path, &actual).expect("expected file must be writable");
            continue;
        }
        let expected = fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "{} differs from {} (UPDATE_GOLDEN=1 to accept):\n--- expected\n{expected}\n--- actual\n{actual}",
                path.display(),
                expected_path.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures failed:\n\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n\n")
    );
}

/// A stable, readable dump of a config. Destructures everything, so that a new field fails to
/// compile here until it is dumped too.
fn dump(config: &Config) -> String {
    let Config {
        gateway,
        servers,
        pipeline,
        audit,
        admin,
        agent,
        llm,
        scripts,
        auth,
        tenants,
        warnings,
        secret_env,
        proxy,
        telemetry,
        state,
    } = config;
    let GatewayConfig {
        listen,
        allowed_hosts,
        allowed_origins,
        startup_wait,
        max_sessions,
        max_sessions_per_client,
        session_idle,
        max_connections,
        header_timeout,
        body_timeout,
        max_listen_streams,
        max_listen_streams_per_client,
        max_subscriptions,
        max_subscription_bytes,
        stream_queue,
        stream_max_age,
        public_url,
        llm_api,
        metrics,
    } = gateway;
    let mut out = String::new();
    let w = &mut out;
    line(w, 0, "gateway", "");
    line(w, 1, "listen", listen);
    line(w, 1, "allowed_hosts", format!("{allowed_hosts:?}"));
    line(w, 1, "allowed_origins", format!("{allowed_origins:?}"));
    // Shown only when set, so that fixtures written before it existed still hold.
    if *startup_wait != toolgate_config::DEFAULT_STARTUP_WAIT {
        line(w, 1, "startup_wait", format!("{startup_wait:?}"));
    }
    if let Some(max_sessions) = max_sessions {
        line(w, 1, "max_sessions", max_sessions);
    }
    if let Some(most) = max_sessions_per_client {
        line(w, 1, "max_sessions_per_client", most);
    }
    if let Some(session_idle) = session_idle {
        line(w, 1, "session_idle", format!("{session_idle:?}"));
    }
    if let Some(public_url) = public_url {
        line(w, 1, "public_url", public_url);
    }
    if *llm_api {
        line(w, 1, "llm_api", llm_api);
    }
    if *metrics {
        line(w, 1, "metrics", metrics);
    }
    let counts = [
        ("max_connections", max_connections),
        ("max_listen_streams", max_listen_streams),
        ("max_listen_streams_per_client", max_listen_streams_per_client),
        ("max_subscriptions", max_subscriptions),
        ("max_subscription_bytes", max_subscription_bytes),
        ("stream_queue", stream_queue),
    ];
    for (key, count) in counts {
        if let Some(count) = count {
            line(w, 1, key, count);
        }
    }
    let durations = [
        ("header_timeout", header_timeout),
        ("body_timeout", body_timeout),
        ("stream_max_age", stream_max_age),
    ];
    for (key, duration) in durations {
        if let Some(duration) = duration {
            line(w, 1, key, format!("{duration:?}"));
        }
    }
    line(w, 0, "servers", "");
    for server in servers {
        let ServerConfig {
            name,
            transport,
            prefix,
            tools,
            protocol,
            startup_timeout,
            timeout,
            restart_wait,
            required,
            enabled,
            integrity,
            response_format,
            replica,
            refresh,
        } = server;
        line(w, 1, name, "");
        line(w, 2, "transport", transport.kind());
        match transport {
            TransportConfig::Stdio(StdioConfig {
                command,
                args,
                env,
                env_pass,
                env_remove,
                cwd,
                withheld,
            }) => {
                line(w, 2, "command", format!("{command:?}"));
                line(w, 2, "args", format!("{args:?}"));
                line(w, 2, "env", secrets(env));
                // Shown only when set, so that fixtures written before it existed still hold.
                if !env_pass.is_empty() {
                    line(w, 2, "env_pass", format!("{env_pass:?}"));
                }
                line(w, 2, "env_remove", format!("{env_remove:?}"));
                line(w, 2, "cwd", format!("{cwd:?}"));
                // Every child withholds the config's secret variables (dumped once, below).
                assert_eq!(withheld, secret_env, "{name}: withholds what the config names");
            }
            TransportConfig::Http(HttpConfig {
                url,
                transport: _,
                headers,
                pool,
                oauth,
                proxy,
                tls,
            }) => {
                line(w, 2, "url", url);
                line(w, 2, "headers", secrets(headers));
                // Shown only when off, so that fixtures written before it existed still hold.
                if !pool {
                    line(w, 2, "pool", pool);
                }
                if oauth != &toolgate_config::OAuthConfig::default() {
                    line(w, 2, "oauth", format!("{oauth:?}"));
                }
                // The same: shown only when set (secrets as `***`, files by name).
                if *proxy != toolgate_config::ProxyChoice::Environment {
                    line(w, 2, "proxy", format!("{proxy:?}"));
                }
                if !tls.is_default() {
                    line(w, 2, "tls", format!("{tls:?}"));
                }
            }
            TransportConfig::InProcess(InProcessConfig { origin }) => {
                line(w, 2, "origin", format!("{origin:?}"));
            }
        }
        let ToolFilter { allow, deny } = tools;
        line(w, 2, "prefix", format!("{prefix:?}"));
        line(w, 2, "allow_tools", format!("{allow:?}"));
        line(w, 2, "deny_tools", format!("{deny:?}"));
        // Shown only when not the default, so that fixtures written before it existed still hold.
        if *protocol != toolgate_config::UpstreamProtocol::Auto {
            line(w, 2, "protocol", protocol.as_str());
        }
        line(w, 2, "startup_timeout", format!("{startup_timeout:?}"));
        line(w, 2, "timeout", format!("{timeout:?}"));
        if *restart_wait != toolgate_config::DEFAULT_RESTART_WAIT {
            line(w, 2, "restart_wait", format!("{restart_wait:?}"));
        }
        line(w, 2, "required", required);
        line(w, 2, "enabled", enabled);
        if let Some(integrity) = integrity {
            line(w, 2, "integrity", serde_json::Value::Object(integrity.clone()));
        }
        if !response_format.is_empty() {
            let entries: Vec<String> = response_format
                .iter()
                .map(|(tool, format)| format!("{tool:?}: {format}"))
                .collect();
            line(w, 2, "response_format", format!("{{{}}}", entries.join(", ")));
        }
        if let Some(replica) = replica {
            line(w, 2, "replica", replica);
        }
        if *refresh != toolgate_config::Refresh::default() {
            line(w, 2, "refresh", format!("{refresh:?}"));
        }
    }
    if !pipeline.is_empty() {
        line(w, 0, "pipeline", "");
    }
    for entry in pipeline {
        let InterceptorConfig {
            path,
            kind,
            name,
            mode,
            fail_open,
            priority,
            timeout,
            servers,
            tools,
            tenants,
            options,
        } = entry;
        line(w, 1, path, "");
        line(w, 2, "kind", kind);
        line(w, 2, "name", format!("{name:?}"));
        line(w, 2, "mode", mode.as_str());
        line(w, 2, "fail_open", format!("{fail_open:?}"));
        line(w, 2, "priority", priority);
        line(w, 2, "timeout", format!("{timeout:?}"));
        line(w, 2, "servers", format!("{servers:?}"));
        line(w, 2, "tools", format!("{tools:?}"));
        // Shown only when set, so that fixtures written before it existed still hold.
        if !tenants.is_empty() {
            line(w, 2, "tenants", format!("{tenants:?}"));
        }
        line(w, 2, "options", serde_json::Value::Object(options.clone()));
    }
    if *audit != AuditConfig::default() {
        let AuditConfig { file, events, redact, detect, hash_key, webhooks, required } = audit;
        line(w, 0, "audit", "");
        line(w, 1, "file", format!("{file:?}"));
        line(w, 1, "events", format!("{events:?}"));
        line(w, 1, "redact", format!("{redact:?}"));
        line(w, 1, "detect", format!("{detect:?}"));
        line(w, 1, "hash_key", format!("{:?}", hash_key.as_ref().map(ToString::to_string)));
        // Shown only when set, so that fixtures written before it existed still hold.
        if *required {
            line(w, 1, "required", required);
        }
        for (i, hook) in webhooks.iter().enumerate() {
            let WebhookConfig { url, events, headers, queue, retries } = hook;
            line(w, 1, &format!("webhook[{i}]"), "");
            line(w, 2, "url", url);
            line(w, 2, "events", format!("{events:?}"));
            line(w, 2, "headers", secrets(headers));
            line(w, 2, "queue", queue);
            line(w, 2, "retries", retries);
        }
    }
    if let Some(AdminConfig { listen, tokens }) = admin {
        line(w, 0, "admin", "");
        line(w, 1, "listen", listen);
        line(w, 1, "tokens", secrets(tokens));
    }
    if *agent != AgentConfig::default() {
        let AgentConfig {
            provider,
            model,
            base_url,
            api_key_env,
            max_turns,
            system,
            temperature,
            max_tokens,
            tool_timeout,
            context_tokens,
            sessions,
            proxy,
        } = agent;
        line(w, 0, "agent", "");
        line(w, 1, "provider", format!("{provider:?}"));
        line(w, 1, "model", format!("{model:?}"));
        line(w, 1, "base_url", format!("{:?}", base_url.as_ref().map(url::Url::as_str)));
        line(w, 1, "api_key_env", format!("{api_key_env:?}"));
        line(w, 1, "max_turns", format!("{max_turns:?}"));
        line(w, 1, "system", format!("{system:?}"));
        line(w, 1, "temperature", format!("{temperature:?}"));
        line(w, 1, "max_tokens", format!("{max_tokens:?}"));
        line(w, 1, "tool_timeout", format!("{tool_timeout:?}"));
        line(w, 1, "context_tokens", format!("{context_tokens:?}"));
        line(w, 1, "sessions", format!("{sessions:?}"));
        if *proxy != toolgate_config::ProxyChoice::Environment {
            line(w, 1, "proxy", format!("{proxy:?}"));
        }
    }
    if *llm != LlmConfig::default() {
        let LlmConfig {
            store,
            allowed_server_urls,
            max_tool_calls,
            store_ttl,
            store_max_per_caller,
            max_in_flight,
            max_in_flight_per_caller,
            models,
            pool,
        } = llm;
        line(w, 0, "llm", "");
        // A Postgres URL is a `Secret`: shown as `***`.
        line(w, 1, "store", format!("{store:?}"));
        line(w, 1, "allowed_server_urls", format!("{allowed_server_urls:?}"));
        line(w, 1, "max_tool_calls", format!("{max_tool_calls:?}"));
        for (key, bound) in [
            ("store_ttl", store_ttl.map(toolgate_core::duration::format)),
            ("store_max_per_caller", store_max_per_caller.map(|n| n.to_string())),
            ("max_in_flight", max_in_flight.map(|n| n.to_string())),
            ("max_in_flight_per_caller", max_in_flight_per_caller.map(|n| n.to_string())),
        ] {
            if let Some(bound) = bound {
                line(w, 1, key, bound);
            }
        }
        for (name, model) in models {
            let LlmModel { provider, model, base_url, api_key_env } = model;
            line(w, 1, &format!("models.{name}"), "");
            line(w, 2, "provider", format!("{provider:?}"));
            line(w, 2, "model", format!("{model:?}"));
            line(w, 2, "base_url", format!("{:?}", base_url.as_ref().map(url::Url::as_str)));
            line(w, 2, "api_key_env", format!("{api_key_env:?}"));
        }
        if *pool != toolgate_config::PoolConfig::default() {
            let toolgate_config::PoolConfig { max_connections, idle_timeout, warmup } = pool;
            line(w, 1, "pool", "");
            line(w, 2, "max_connections", format!("{max_connections:?}"));
            line(w, 2, "idle_timeout", format!("{idle_timeout:?}"));
            for entry in warmup {
                let toolgate_config::Warmup { url, label, token, tenant } = entry;
                // The token is a `Secret`: shown as `***`.
                line(
                    w,
                    2,
                    &format!("warmup.{label}"),
                    format!("{} {token:?} {tenant:?}", url.as_str()),
                );
            }
        }
    }
    if *scripts != ScriptsConfig::default() {
        let ScriptsConfig { dirs, instructions, memory, timeout, tool_timeout, watch } = scripts;
        line(w, 0, "scripts", "");
        line(w, 1, "dirs", format!("{dirs:?}"));
        line(w, 1, "instructions", format!("{instructions:?}"));
        line(w, 1, "memory", format!("{memory:?}"));
        line(w, 1, "timeout", format!("{timeout:?}"));
        line(w, 1, "tool_timeout", format!("{tool_timeout:?}"));
        line(w, 1, "watch", watch);
    }
    if let Some(auth) = auth {
        let toolgate_config::AuthConfig {
            issuer,
            audience,
            scopes,
            jwks_url,
            principal_claim,
            groups_claim,
            tenant_claim,
            clock_skew,
            algorithms,
            allow_anonymous,
            introspection,
            api_keys,
            roles,
        } = auth;
        line(w, 0, "auth", "");
        line(w, 1, "issuer", format!("{issuer:?}"));
        line(w, 1, "audience", format!("{audience:?}"));
        line(w, 1, "scopes", format!("{scopes:?}"));
        line(w, 1, "jwks_url", format!("{:?}", jwks_url.as_ref().map(|u| u.as_str())));
        line(w, 1, "principal_claim", principal_claim);
        line(w, 1, "groups_claim", format!("{groups_claim:?}"));
        line(w, 1, "tenant_claim", format!("{tenant_claim:?}"));
        line(w, 1, "clock_skew", format!("{clock_skew:?}"));
        line(w, 1, "algorithms", format!("{algorithms:?}"));
        line(w, 1, "allow_anonymous", allow_anonymous);
        // Shown only when set, so that fixtures written before it existed still hold.
        if let Some(introspection) = introspection {
            let toolgate_config::IntrospectionConfig {
                url,
                client_id,
                client_secret,
                cache_size,
                cache_ttl,
            } = introspection;
            line(w, 1, "introspection.url", url);
            line(w, 1, "introspection.client_id", client_id);
            line(w, 1, "introspection.client_secret", client_secret);
            line(w, 1, "introspection.cache_size", cache_size);
            line(w, 1, "introspection.cache_ttl", format!("{cache_ttl:?}"));
        }
        for (name, key) in api_keys {
            let toolgate_config::ApiKeyConfig { hash, groups, tenant } = key;
            line(w, 1, &format!("api_keys.{name}"), "");
            line(w, 2, "hash", format!("{hash:?}"));
            line(w, 2, "groups", format!("{groups:?}"));
            line(w, 2, "tenant", format!("{tenant:?}"));
        }
        // Shown only when set, so that fixtures written before it existed still hold.
        if *roles != toolgate_config::Roles::default() {
            let toolgate_config::Roles { approvers, admins } = roles;
            line(w, 1, "roles.approvers", format!("{approvers:?}"));
            line(w, 1, "roles.admins", format!("{admins:?}"));
        }
    }
    for (name, tenant) in tenants {
        let toolgate_config::TenantConfig { servers } = tenant;
        line(w, 0, &format!("tenants.{name}"), "");
        line(w, 1, "servers", format!("{servers:?}"));
    }
    line(w, 0, "warnings", "");
    for warning in warnings {
        writeln!(w, "  - {warning}").expect("writing to a String must succeed");
    }
    // Shown only when the config adds to the providers' key variables, which every config
    // withholds, so that fixtures written before it existed still hold.
    let providers: std::collections::BTreeSet<String> =
        toolgate_config::PROVIDER_KEY_VARS.iter().map(|name| (*name).to_owned()).collect();
    assert!(secret_env.is_superset(&providers), "the providers' key variables are withheld");
    if *secret_env != providers {
        let extra: Vec<_> = secret_env.difference(&providers).collect();
        line(w, 0, "secret_env (besides the providers' keys)", format!("{extra:?}"));
    }
    if let Some(proxy) = proxy {
        line(w, 0, "proxy", format!("{proxy:?}"));
    }
    // Shown only when set, so that fixtures written before it existed still hold.
    if *telemetry != toolgate_config::TelemetryConfig::default() {
        line(w, 0, "telemetry", format!("{telemetry:?}"));
    }
    // Shown only when written, so that fixtures written before it existed still hold.
    if *state != toolgate_config::StateConfig::default() {
        line(w, 0, "state", format!("{state:?}"));
    }
    out
}

fn line(out: &mut String, depth: usize, key: &str, value: impl std::fmt::Display) {
    let value = value.to_string();
    let sep = if value.is_empty() { ":" } else { ": " };
    writeln!(out, "{:width$}{key}{sep}{value}", "", width = depth * 2)
        .expect("writing to a String must succeed");
}

fn secrets(map: &std::collections::BTreeMap<String, Secret>) -> String {
    let entries: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!("{{{}}}", entries.join(", "))
}
