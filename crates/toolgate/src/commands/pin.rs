//! `toolgate pin`: pin what each server offers (tools, prompts, resources, templates) in
//! `toolgate.lock`, or check and show what changed since.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::{Value, json};
use toolgate_integrity::lock::LOCK_FILE;
use toolgate_integrity::{Contract, Kind, Lock, ServerDrift, diff};

use crate::GlobalArgs;
use crate::commands::offered::{Offered, enabled_servers, offered};
use crate::setup::{self, ConfigSource};

#[derive(Debug, Args)]
pub(crate) struct PinArgs {
    /// Only this server (repeatable); the lock keeps the other servers' pins as they are.
    #[arg(long, value_name = "NAME")]
    server: Vec<String>,
    /// Write nothing: list each changed, added and removed item; exit 1 if anything drifted.
    #[arg(long, conflicts_with = "diff")]
    check: bool,
    /// Write nothing: show what changed (word diff of descriptions, schema paths, annotations)
    /// and each item's contract digest (what `POST /integrity/{tool}/approve` on the admin API
    /// takes); exit 1 if anything drifted.
    #[arg(long)]
    diff: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// The lock file [default: toolgate.lock beside the config file].
    #[arg(long, value_name = "FILE")]
    lock: Option<PathBuf>,
    /// Accept what this tool (or prompt, resource, template: its name or URI as the server
    /// gives it) is now, and leave every other pin as it is (repeatable; --server narrows
    /// where it is looked for). Shows what is accepted.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["check", "diff"])]
    approve: Vec<String>,
}

pub(crate) async fn run(global: &GlobalArgs, args: PinArgs) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    let (config, source) = setup::load_config(global)?;
    let lock_path = match (&args.lock, &source) {
        (Some(path), _) => path.clone(),
        (None, ConfigSource::File(config)) => {
            config.parent().map_or_else(|| PathBuf::from(LOCK_FILE), |dir| dir.join(LOCK_FILE))
        }
        (None, ConfigSource::Demo | ConfigSource::Absent) => {
            return Err(setup::usage(
                "no config file, so no place for toolgate.lock: pass --config FILE or --lock FILE",
            ));
        }
    };
    let scripts = setup::script_servers(&config, source.dir().as_deref());
    let known: Vec<String> = enabled_servers(&config.servers, &scripts, &args.server)?
        .into_iter()
        .map(str::to_owned)
        .collect();
    let lock = Lock::read(&lock_path)?;
    let writing = !args.check && !args.diff;
    if !writing && lock.is_none() {
        anyhow::bail!(
            "no lock file at {}: run `toolgate pin` first to pin what the servers offer now",
            lock_path.display()
        );
    }
    let mut lock = lock.unwrap_or_default();

    let selected: Vec<_> = config
        .servers
        .iter()
        .filter(|s| s.enabled && (args.server.is_empty() || args.server.contains(&s.name)))
        .cloned()
        .collect();
    let scripts: Vec<_> = scripts
        .into_iter()
        .filter(|(s, _)| args.server.is_empty() || args.server.contains(&s.name))
        .collect();
    let Offered { servers: offered, unreachable } = offered(&selected, scripts).await;
    let drifts: Vec<ServerDrift> =
        offered.iter().map(|(server, now)| lock.drift(server, now)).collect();
    let mut out = std::io::stdout().lock();

    if !args.approve.is_empty() {
        for (server, why) in &unreachable {
            eprintln!("warning: server `{server}` is not connected: {why}");
        }
        let mut approved = Vec::new();
        for name in &args.approve {
            let found: Vec<(&String, &Contract)> = offered
                .iter()
                .flat_map(|(server, now)| now.iter().map(move |c| (server, c)))
                .filter(|(_, c)| c.key == *name)
                .collect();
            match found.as_slice() {
                [] => anyhow::bail!(
                    "no server offers `{name}` now{}; nothing written",
                    if unreachable.is_empty() { "" } else { " (some servers are not connected)" }
                ),
                [(server, now)] => approved.push(((*server).clone(), (*now).clone())),
                several => {
                    let servers: Vec<&str> = several.iter().map(|(s, _)| s.as_str()).collect();
                    return Err(setup::usage(format!(
                        "`{name}` is offered by {}: say which with --server",
                        servers.join(", ")
                    )));
                }
            }
        }
        for (server, now) in approved {
            match lock.contract(&server, now.kind, &now.key) {
                Some(pinned) if pinned.digest == now.digest => {
                    writeln!(
                        out,
                        "{} `{}` of `{server}`: already pinned as it is",
                        now.kind.noun(),
                        now.key
                    )?;
                }
                Some(pinned) => {
                    writeln!(out, "approved {} `{}` of `{server}`:", now.kind.noun(), now.key)?;
                    for change in diff::changes(&pinned, &now) {
                        writeln!(out, "    {change}")?;
                    }
                }
                None => {
                    writeln!(out, "approved {} `{}` of `{server}` (new)", now.kind.noun(), now.key)?
                }
            }
            lock.pin(&server, now);
        }
        lock.write(&lock_path)?;
        writeln!(out, "wrote {}", lock_path.display())?;
        return Ok(ExitCode::SUCCESS);
    }

    if writing {
        if !unreachable.is_empty() {
            for (server, why) in &unreachable {
                eprintln!("error: cannot pin server `{server}`: {why}");
            }
            eprintln!("nothing written to {}", lock_path.display());
            return Ok(ExitCode::FAILURE);
        }
        let dropped: Vec<String> = if args.server.is_empty() {
            lock.servers().filter(|s| !known.iter().any(|k| k == s)).map(str::to_owned).collect()
        } else {
            Vec::new()
        };
        for server in &dropped {
            lock.forget_server(server);
        }
        for (server, now) in offered {
            lock.pin_server(&server, now);
        }
        lock.write(&lock_path)?;
        if args.json {
            let report = json!({
                "lock": lock_path,
                "servers": drifts.iter().map(|d| summary_json(d, &lock)).collect::<Vec<_>>(),
                "dropped": dropped,
            });
            writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        } else {
            for drift in &drifts {
                writeln!(out, "{}", summary_line(drift, &lock))?;
            }
            for server in &dropped {
                writeln!(out, "{server}: no longer in the config, its pins removed")?;
            }
            writeln!(out, "wrote {}", lock_path.display())?;
        }
        return Ok(ExitCode::SUCCESS);
    }

    let drifted = drifts.iter().any(|d| !d.is_empty()) || !unreachable.is_empty();
    if args.json {
        let report = json!({
            "lock": lock_path,
            "drift": drifted,
            "servers": drifts.iter().map(|d| drift_json(d, args.diff)).collect::<Vec<_>>(),
            "unreachable": unreachable.iter().map(|(server, why)| json!({"server": server, "error": why})).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        for drift in &drifts {
            write_drift(&mut out, drift, args.diff)?;
        }
        for (server, why) in &unreachable {
            writeln!(out, "{server}: not checked: {why}")?;
        }
        if drifted {
            writeln!(
                out,
                "\nto accept what the servers offer now: toolgate pin{}",
                args.server.iter().map(|s| format!(" --server {s}")).collect::<String>()
            )?;
        }
    }
    Ok(if drifted { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// `fs: pinned 14 tools, 2 prompts (1 changed, 1 added since the last pin)`.
fn summary_line(drift: &ServerDrift, lock: &Lock) -> String {
    let pinned = lock.contracts(&drift.server);
    let counts: Vec<String> = Kind::ALL
        .into_iter()
        .filter_map(|kind| {
            let n = pinned.iter().filter(|c| c.kind == kind).count();
            (n > 0).then(|| format!("{n} {}{}", kind.noun(), if n == 1 { "" } else { "s" }))
        })
        .collect();
    let counts = if counts.is_empty() { "nothing".to_owned() } else { counts.join(", ") };
    let since = if !drift.pinned {
        " (first pin)".to_owned()
    } else if drift.is_empty() {
        " (unchanged)".to_owned()
    } else {
        format!(
            " ({} changed, {} added, {} removed since the last pin)",
            drift.changed.len(),
            drift.added.len(),
            drift.removed.len()
        )
    };
    format!("{}: pinned {counts}{since}", drift.server)
}

fn write_drift(
    out: &mut impl std::io::Write,
    drift: &ServerDrift,
    diff: bool,
) -> std::io::Result<()> {
    if !drift.pinned {
        writeln!(out, "{}: not pinned ({} items offered)", drift.server, drift.added.len())?;
        return Ok(());
    }
    if drift.is_empty() {
        writeln!(out, "{}: unchanged", drift.server)?;
        return Ok(());
    }
    writeln!(out, "{}:", drift.server)?;
    for (pinned, now) in &drift.changed {
        writeln!(out, "  changed  {} `{}`", now.kind.noun(), now.key)?;
        if diff {
            // What an approver names to accept this change over the admin API.
            writeln!(out, "      digest: {} → {}", pinned.digest, now.digest)?;
            for change in diff::changes(pinned, now) {
                writeln!(out, "      {change}")?;
            }
        }
    }
    for added in &drift.added {
        writeln!(out, "  added    {} `{}`", added.kind.noun(), added.key)?;
        if diff {
            writeln!(out, "      digest: {}", added.digest)?;
        }
        if diff && let Some(description) = added.field("description").and_then(Value::as_str) {
            writeln!(out, "      description: {description}")?;
        }
    }
    for removed in &drift.removed {
        writeln!(out, "  removed  {} `{}`", removed.kind.noun(), removed.key)?;
    }
    Ok(())
}

fn item_json(contract: &Contract) -> Value {
    json!({"kind": contract.kind.noun(), "key": contract.key, "digest": contract.digest})
}

fn summary_json(drift: &ServerDrift, lock: &Lock) -> Value {
    json!({
        "server": drift.server,
        "pinned": lock.contracts(&drift.server).iter().map(item_json).collect::<Vec<_>>(),
        "first_pin": !drift.pinned,
        "changed": drift.changed.len(),
        "added": drift.added.len(),
        "removed": drift.removed.len(),
    })
}

fn drift_json(drift: &ServerDrift, with_diff: bool) -> Value {
    let changed: Vec<Value> = drift
        .changed
        .iter()
        .map(|(pinned, now)| {
            let mut item = json!({
                "kind": now.kind.noun(), "key": now.key,
                "pinned_digest": pinned.digest, "digest": now.digest,
            });
            if with_diff {
                item["changes"] =
                    diff::changes(pinned, now).iter().map(ToString::to_string).collect();
                item["pinned"] = pinned.value.clone();
                item["now"] = now.value.clone();
            }
            item
        })
        .collect();
    json!({
        "server": drift.server,
        "pinned": drift.pinned,
        "changed": changed,
        "added": drift.added.iter().map(item_json).collect::<Vec<_>>(),
        "removed": drift.removed.iter().map(item_json).collect::<Vec<_>>(),
    })
}
