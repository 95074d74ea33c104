//! `toolgate serve`: the gateway as an MCP server on streamable HTTP or stdio.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use tokio_util::sync::CancellationToken;
use toolgate_gateway::{StartupWait, SubscriptionBounds};
use toolgate_server::{ConnectionLimits, DEFAULT_GRACE, HttpOptions, MCP_PATH};

use crate::GlobalArgs;
use crate::setup;

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Serve one MCP session on stdin/stdout (what Claude Desktop and similar clients launch).
    #[arg(long)]
    stdio: bool,
    /// Address for streamable HTTP (overrides `[gateway] listen`; default 127.0.0.1:8931).
    /// An address other than loopback needs `[auth]` (access tokens or API keys), or
    /// `[auth] allow_anonymous = true` to serve anyone.
    #[arg(long, value_name = "ADDR", conflicts_with = "stdio")]
    listen: Option<SocketAddr>,
}

pub(crate) async fn run(global: &GlobalArgs, args: ServeArgs) -> anyhow::Result<ExitCode> {
    // stdout belongs to MCP in --stdio mode, and desktop clients show stderr: keep it quiet.
    setup::init_logging(global, if args.stdio { "warn" } else { "info" });
    let (config, source) = setup::load_config(global)?;
    let address = args.listen.unwrap_or(config.gateway.listen);
    if !args.stdio {
        check_exposure(address, config.auth.as_ref())?;
        if config.auth.as_ref().is_some_and(|auth| auth.allow_anonymous) {
            tracing::warn!(
                "[auth] allow_anonymous = true: requests without credentials are served, as \
                 anonymous:anonymous"
            );
        }
    }
    tracing::info!("{}", setup::describe(&source));
    if args.stdio && matches!(source, setup::ConfigSource::Demo) {
        tracing::warn!("{}", setup::describe(&source));
    }
    // Required servers are waited for; the others get `startup_wait` and join when ready.
    let wait = StartupWait::Bounded(config.gateway.startup_wait);
    let gateway = setup::connect(&config, &source, wait).await?;
    if !gateway.starting().is_empty() {
        tracing::warn!(
            "serving without {} (still starting after {}); they join when they connect",
            gateway.starting().join(", "),
            toolgate_core::duration::format(config.gateway.startup_wait),
        );
    }
    let inventory = gateway.inventory();
    let subscriptions = SubscriptionBounds::default();
    gateway.bound_subscriptions(SubscriptionBounds {
        most: config.gateway.max_subscriptions.unwrap_or(subscriptions.most),
        most_bytes: config.gateway.max_subscription_bytes.unwrap_or(subscriptions.most_bytes),
    });
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone())?);
    // Bound before the admin API starts: the canonical URL of /mcp is the audience of the
    // tokens both accept.
    let listener = match args.stdio {
        true => None,
        false => Some(
            tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("cannot listen on {address}"))?,
        ),
    };
    let mcp_address = match &listener {
        Some(listener) => listener.local_addr().context("cannot read the bound address")?,
        None => address,
    };
    let auth = match &config.auth {
        Some(auth) => {
            let resource = url::Url::parse(&format!("http://{mcp_address}{MCP_PATH}"))
                .context("the address of /mcp is not a URL")?;
            let authenticator = toolgate_server::Authenticator::new(auth, &resource)
                .context("cannot use [auth]")?;
            if !args.stdio {
                tracing::info!(resource = %authenticator.resource(), "{}", describe_auth(auth));
            }
            Some(std::sync::Arc::new(authenticator))
        }
        None => None,
    };
    let admin = match &config.admin {
        Some(admin) => {
            let identity = auth.clone().map(|auth| {
                let roles = config.auth.as_ref().map(|a| a.roles.clone()).unwrap_or_default();
                (auth, std::sync::Arc::new(crate::admin::RoleMembers::new(&roles)))
            });
            let limits = connection_limits(&config.gateway);
            let audit = crate::console::AuditFile(config.audit.file.clone());
            let required = crate::health::Required::of(&config);
            Some(
                start_admin(admin, limits, &gateway, identity, required, audit, shutdown.clone())
                    .await?,
            )
        }
        None => None,
    };
    let served = if args.stdio {
        if config.gateway.llm_api {
            tracing::warn!("[gateway] llm_api is served on HTTP only, not with --stdio");
        }
        tracing::info!(
            tools = inventory.tools().len(),
            servers = gateway.upstreams().len(),
            "serving MCP on stdio"
        );
        // A signal ends the session once requests in flight are done (or the grace is over);
        // stdin closing ends it at once.
        let session = CancellationToken::new();
        let (draining, stop) = (gateway.clone(), session.clone());
        tokio::spawn(async move {
            shutdown.cancelled().await;
            draining.drain(toolgate_server::DEFAULT_GRACE).await;
            tokio::time::sleep(toolgate_server::RESPONSE_FLUSH).await;
            stop.cancel();
        });
        toolgate_server::serve_stdio(gateway.clone(), session).await.map_err(anyhow::Error::from)
    } else {
        let listener = listener.expect("bound for HTTP above");
        let bound = mcp_address;
        tracing::info!(
            tools = inventory.tools().len(),
            servers = gateway.upstreams().len(),
            "serving MCP at http://{bound}{MCP_PATH}"
        );
        // Requests may not name these as servers: the bound addresses, not the configured
        // ones (a port 0 is chosen when bound).
        let own = std::iter::once(bound).chain(admin.as_ref().map(|(_, at)| *at)).collect();
        let responses = crate::llm_api::service(
            &config,
            gateway.clone(),
            gateway.shared.as_ref(),
            auth.clone(),
            own,
            shutdown.clone(),
        )
        .await?;
        if responses.is_some() {
            tracing::info!("serving the OpenAI-compatible API at http://{bound}/v1/responses");
        }
        let defaults = HttpOptions::default();
        let options = HttpOptions {
            allowed_hosts: config.gateway.allowed_hosts.clone(),
            allowed_origins: config.gateway.allowed_origins.clone(),
            max_sessions: config.gateway.max_sessions.unwrap_or(defaults.max_sessions),
            max_sessions_per_client: config
                .gateway
                .max_sessions_per_client
                .unwrap_or(defaults.max_sessions_per_client),
            session_idle: config.gateway.session_idle.unwrap_or(defaults.session_idle),
            connections: connection_limits(&config.gateway),
            max_listen_streams: config
                .gateway
                .max_listen_streams
                .unwrap_or(defaults.max_listen_streams),
            max_listen_streams_per_client: config
                .gateway
                .max_listen_streams_per_client
                .unwrap_or(defaults.max_listen_streams_per_client),
            stream_queue: config.gateway.stream_queue.unwrap_or(defaults.stream_queue),
            stream_max_age: config.gateway.stream_max_age.unwrap_or(defaults.stream_max_age),
            auth,
            routes: Some(main_routes(&config, &gateway, responses)),
            shared_key: config.state.shared_key.clone(),
            shared: gateway.shared.clone(),
            ..defaults
        };
        toolgate_server::serve_http(listener, gateway.clone(), &options, shutdown)
            .await
            .map_err(anyhow::Error::from)
    };
    if let Some((admin, _)) = admin {
        admin.abort();
    }
    gateway.shutdown().await;
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Refuses to serve HTTP beyond this machine without `[auth]`: every client would be
/// `anonymous:anonymous`, calling every tool the policy allows. `[auth] allow_anonymous = true`
/// says that is meant. With an issuer, tokens are for the URL clients reach `/mcp` at, which
/// only `audience` can say when the address is not loopback.
fn check_exposure(
    address: SocketAddr,
    auth: Option<&toolgate_config::AuthConfig>,
) -> anyhow::Result<()> {
    if address.ip().is_loopback() {
        return Ok(());
    }
    let Some(auth) = auth else {
        anyhow::bail!(
            "refusing to serve on {address} without [auth]: anyone who can reach it could call \
             every tool. Add [auth] (an issuer or [auth.api_keys]; see `toolgate keys new`), \
             set [auth] allow_anonymous = true to serve anyone, or listen on 127.0.0.1"
        );
    };
    if auth.issuer.is_some() && auth.audience.is_none() {
        anyhow::bail!(
            "[auth] audience is needed to serve on {address}: set it to the URL clients reach \
             /mcp at (for example https://gateway.example.com/mcp), which tokens must be issued for"
        );
    }
    Ok(())
}

/// One line on who may call: the issuer, its introspection endpoint, how many API keys,
/// whether anonymous is let in.
fn describe_auth(auth: &toolgate_config::AuthConfig) -> String {
    let mut parts = Vec::new();
    if let Some(issuer) = &auth.issuer {
        parts.push(format!("access tokens from {issuer}"));
    }
    if let Some(introspection) = &auth.introspection {
        parts.push(format!("opaque tokens introspected at {}", introspection.url));
    }
    match auth.api_keys.len() {
        0 => {}
        1 => parts.push("1 API key".to_owned()),
        n => parts.push(format!("{n} API keys")),
    }
    if auth.allow_anonymous {
        parts.push("anonymous requests".to_owned());
    }
    format!("[auth]: accepting {}", parts.join(", "))
}

/// Binds the admin API and serves it in the background until `shutdown`.
async fn start_admin(
    config: &toolgate_config::AdminConfig,
    limits: ConnectionLimits,
    running: &setup::Running,
    identity: Option<(
        std::sync::Arc<toolgate_server::Authenticator>,
        std::sync::Arc<crate::admin::RoleMembers>,
    )>,
    required: crate::health::Required,
    audit: crate::console::AuditFile,
    shutdown: CancellationToken,
) -> anyhow::Result<(tokio::task::JoinHandle<()>, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {} ([admin] listen)", config.listen))?;
    let bound = listener.local_addr().context("cannot read the admin API's bound address")?;
    let tokens = crate::admin::AdminTokens::new(
        config.tokens.iter().map(|(name, token)| (name.clone(), token.expose().to_owned())),
    );
    let (router, admin) = crate::admin::admin_router(running, tokens, identity, required);
    let following = crate::admin::follow_shared_contracts(&admin);
    let router = router
        .merge(crate::console::router(admin))
        // The console's audit page reads the audit log.
        .layer(axum::Extension(audit));
    tracing::info!(
        "admin API at http://{bound} (approvals, events, interceptors, integrity, metrics, console)"
    );
    running.approvals.set_attended(true);
    let serving = tokio::spawn(async move {
        crate::admin::serve_admin(listener, router, limits, DEFAULT_GRACE, shutdown).await;
        if let Some(following) = following {
            following.abort();
        }
    });
    Ok((serving, bound))
}

/// What the main listener serves beside `/mcp`: `/readyz`, `/metrics` with `[gateway]
/// metrics`, and the OpenAI-compatible endpoint with `[gateway] llm_api`.
fn main_routes(
    config: &toolgate_config::Config,
    running: &setup::Running,
    responses: Option<toolgate_responses::Service>,
) -> axum::Router {
    let metrics = config.gateway.metrics.then(|| running.metrics.clone()).flatten();
    if metrics.is_some() {
        tracing::info!("serving Prometheus metrics at /metrics ([gateway] metrics = true)");
    }
    let required = crate::health::Required::of(config);
    let health = crate::health::routes(running.gateway.clone(), required, metrics);
    match responses {
        Some(service) => health.merge(toolgate_responses::router(std::sync::Arc::new(service))),
        None => health,
    }
}

/// The bounds on the connections of both listeners, from `[gateway]`.
fn connection_limits(gateway: &toolgate_config::GatewayConfig) -> ConnectionLimits {
    let defaults = ConnectionLimits::default();
    ConnectionLimits {
        max_connections: gateway.max_connections.unwrap_or(defaults.max_connections),
        header_timeout: gateway.header_timeout.unwrap_or(defaults.header_timeout),
        body_timeout: gateway.body_timeout.unwrap_or(defaults.body_timeout),
    }
}

/// SIGINT or SIGTERM starts a graceful shutdown. The handlers are in place when this returns
/// (before `serve` says it is serving), not when the returned future first runs: a signal that
/// came in between would otherwise end the process at once, without the shutdown.
fn cancel_on_signal(
    shutdown: CancellationToken,
) -> anyhow::Result<impl Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).context("cannot watch for SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot watch for SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        tracing::info!("shutting down");
        shutdown.cancel();
    })
}
