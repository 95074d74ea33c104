//! `toolgate login SERVER` and `toolgate logout SERVER`: signing in to an upstream that asks
//! for OAuth, once, so that the gateway (this process or a running one) carries the tokens and
//! refreshes them; and forgetting them.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use toolgate_config::{Config, OAuthFlow, ServerConfig};
use toolgate_oauth::probe::{Probe, probe};
use toolgate_oauth::signin::{SIGN_IN_LIMIT, sign_in};
use toolgate_oauth::{SystemBrowser, entry_name};

use crate::GlobalArgs;
use crate::setup;

#[derive(Debug, Args)]
pub(crate) struct LoginArgs {
    /// The server to sign in to (its name in the config).
    server: String,
    /// A scope to ask for besides those the server names (repeatable).
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
    /// Only print the address to open; do not start a browser.
    #[arg(long)]
    no_browser: bool,
    /// Print the outcome as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct LogoutArgs {
    /// The server whose sign-in to forget.
    server: String,
    /// Forget this caller's own sign-in instead (`kind:id@tenant`, as events name callers),
    /// for a server with `oauth = { per_principal = true }`. A running gateway keeps the
    /// caller's connection until it ends; its admin API (`DELETE /sign-ins/SERVER/PRINCIPAL`)
    /// closes it at once.
    #[arg(long, value_name = "PRINCIPAL")]
    principal: Option<String>,
}

fn server<'c>(config: &'c Config, name: &str) -> anyhow::Result<&'c ServerConfig> {
    config.servers.iter().find(|s| s.name == name).with_context(|| {
        let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
        format!("no server named {name:?} in the config (servers: {})", names.join(", "))
    })
}

pub(crate) async fn login(global: &GlobalArgs, args: LoginArgs) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    let (config, _) = setup::load_config(global)?;
    let server = server(&config, &args.server)?;
    let target = toolgate_upstream::sign_in_target(server)
        .map_err(|why| anyhow::anyhow!("cannot sign in to {}: {why}", args.server))?;
    let vault = crate::logins::vault()?;
    let entry = vault.entry(entry_name(&server.name, None), target.url.to_string());
    let mut out = std::io::stdout().lock();

    if target.config.flow == OAuthFlow::ClientCredentials {
        // Nothing to keep: the gateway asks for its own tokens as it needs them. Asking once
        // now shows that the credentials work.
        let challenge = match probe(&target).await? {
            Probe::Challenge(challenge) => Some(challenge),
            Probe::Open { .. } => None,
        };
        let token =
            toolgate_oauth::machine::client_credentials(&target, challenge.as_deref()).await?;
        let client = target.config.client_id.clone().unwrap_or_default();
        if args.json {
            let json = serde_json::json!({"server": server.name, "flow": "client_credentials",
                "client_id": client, "expires_at": token.expires_at});
            writeln!(out, "{json}")?;
        } else {
            writeln!(
                out,
                "{}: the client credentials of {client} work; toolgate asks for tokens as it \
                 needs them (nothing to keep)",
                server.name
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }

    let challenge = match probe(&target).await? {
        Probe::Challenge(challenge) => Some(challenge),
        Probe::Open { status } => {
            tracing::info!(
                status,
                "the server answered without asking for a login; discovering anyway"
            );
            None
        }
    };
    let mut wanted = entry.record()?.map(|r| r.wanted_scopes).unwrap_or_default();
    for scope in args.scopes {
        if !wanted.contains(&scope) {
            wanted.push(scope);
        }
    }
    let browser = SystemBrowser { print_only: args.no_browser };
    let signed_in =
        sign_in(&target, entry, challenge.as_deref(), &wanted, &browser, SIGN_IN_LIMIT).await?;
    if args.json {
        let json = serde_json::json!({"server": server.name, "subject": signed_in.subject,
            "expires_at": signed_in.expires_at, "scopes": signed_in.scopes});
        writeln!(out, "{json}")?;
    } else {
        let who = signed_in.subject.as_deref().unwrap_or("an account the server did not name");
        let until = signed_in
            .expires_at
            .map(|at| format!(", token valid until {}", crate::logins::at_time(at)))
            .unwrap_or_default();
        writeln!(out, "Signed in to {} as {who}{until}.", server.name)?;
        if !signed_in.scopes.is_empty() {
            writeln!(out, "Scopes: {}", signed_in.scopes.join(" "))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn logout(global: &GlobalArgs, args: LogoutArgs) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    let vault = crate::logins::vault()?;
    let entry = entry_name(&args.server, args.principal.as_deref());
    let forgot = vault.remove(&entry)?;
    let mut out = std::io::stdout().lock();
    let whose = args.principal.map(|p| format!(" for {p}")).unwrap_or_default();
    if forgot {
        writeln!(out, "Signed out of {}{whose}: its tokens are deleted.", args.server)?;
    } else {
        writeln!(out, "{} had no sign-in{whose} to forget.", args.server)?;
    }
    Ok(ExitCode::SUCCESS)
}
