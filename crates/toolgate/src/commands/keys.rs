//! `toolgate keys new`: a fresh API key, shown once, and its `[auth.api_keys]` line.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub(crate) enum KeysCommand {
    /// Make a fresh API key: print it once, with the `[auth.api_keys]` line that holds its
    /// hash.
    New(NewArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "The key is `tg_` and 32 random bytes (base64url). It is printed once \
    and toolgate keeps only its SHA-256: store the key where the client reads it, and add the \
    printed line under [auth.api_keys] in toolgate.toml. A lost key cannot be recovered; make \
    a new one and replace the line.\n\n\
    Examples:\n  \
    toolgate keys new ci --groups deploy,readers --tenant acme\n  \
    toolgate keys new ci --json | jq -r .key")]
pub(crate) struct NewArgs {
    /// The key's name, the principal it stands for: letters, digits, `_`, `-` or `.`.
    #[arg(value_name = "NAME")]
    name: String,
    /// Groups its holder is in, comma-separated.
    #[arg(long, value_name = "G,...", value_delimiter = ',')]
    groups: Vec<String>,
    /// Its holder's tenant.
    #[arg(long, value_name = "T")]
    tenant: Option<String>,
    /// Print JSON: `name`, `key`, `hash`, `config_line`, `groups`, `tenant`.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(command: KeysCommand) -> anyhow::Result<ExitCode> {
    match command {
        KeysCommand::New(args) => new(args),
    }
}

fn new(args: NewArgs) -> anyhow::Result<ExitCode> {
    if !toolgate_config::is_api_key_name(&args.name) {
        return Err(crate::usage::usage(format!(
            "invalid key name {:?}: use 1 to 64 letters, digits, `_`, `-` or `.`",
            args.name
        )));
    }
    if args.groups.iter().any(|group| group.trim().is_empty()) {
        return Err(crate::usage::usage("--groups: a group name must not be empty"));
    }
    if args.tenant.as_ref().is_some_and(|tenant| tenant.trim().is_empty()) {
        return Err(crate::usage::usage("--tenant must not be empty"));
    }
    let new = toolgate_auth::generate_key().context("making a key")?;
    let line = new.config_line(&args.name, &args.groups, args.tenant.as_deref());
    if args.json {
        let report = serde_json::json!({
            "name": args.name,
            "key": new.key,
            "hash": format!("{:?}", new.hash),
            "config_line": line,
            "groups": args.groups,
            "tenant": args.tenant,
        });
        println!("{report:#}");
    } else {
        println!("API key {:?} (shown only now: toolgate keeps only its hash):", args.name);
        println!();
        println!("  {}", new.key);
        println!();
        println!("Add this line under [auth.api_keys] in toolgate.toml:");
        println!();
        println!("  {line}");
        println!();
        println!("Clients send the key as `Authorization: Bearer <key>`.");
    }
    Ok(ExitCode::SUCCESS)
}
