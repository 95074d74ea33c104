//! `toolgate interceptors`: the pipeline as it will run, phase by phase. Nothing is started.

use std::io::Write as _;
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;
use toolgate_intercept::Phase;

use crate::GlobalArgs;
use crate::setup;

#[derive(Debug, Args)]
pub(crate) struct InterceptorsArgs {
    /// Print what the `interceptors/list` method returns (SEP-2624 descriptors) as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(global: &GlobalArgs, args: InterceptorsArgs) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    let (config, source) = setup::load_config(global)?;
    let services = toolgate_interceptors::Services::new(toolgate_audit::EventBus::new())
        .with_admin_api(config.admin.is_some())
        .with_config_dir(source.dir())
        .with_script_limits(setup::script_limits(&config));
    let entries = setup::pipeline_entries(&config, source.dir().as_deref());
    let pipeline = toolgate_interceptors::build_pipeline(&entries, &services)
        .map_err(setup::InvalidPipeline)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &toolgate_gateway::interceptors_list(&pipeline))?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if pipeline.is_empty() {
        writeln!(out, "no interceptors: every message passes unchanged ([[pipeline]] is empty)")?;
        return Ok(ExitCode::SUCCESS);
    }
    for (phase, heading) in [
        (Phase::Request, "request phase (before the upstream sees a request), in this order:"),
        (Phase::Response, "response phase (before the caller sees an answer), in this order:"),
    ] {
        writeln!(out, "{heading}")?;
        let order = pipeline.run_order(phase);
        let in_phase: Vec<_> = order
            .iter()
            .map(|d| (d, events_in(&d.to_json(), phase.as_str())))
            .filter(|(_, events)| !events.is_empty())
            .collect();
        if in_phase.is_empty() {
            writeln!(out, "  (none)")?;
        }
        for (i, (descriptor, events)) in in_phase.iter().enumerate() {
            let json = descriptor.to_json();
            let name = if descriptor.name == descriptor.kind {
                descriptor.name.clone()
            } else {
                format!("{} ({})", descriptor.name, descriptor.kind)
            };
            writeln!(
                out,
                "  {}. {name:<20} {:<10} {:<6} {:<11} priority {:<5} timeout {:?}",
                i + 1,
                json["type"].as_str().unwrap_or(""),
                json["mode"].as_str().unwrap_or(""),
                if descriptor.fail_open { "fail-open" } else { "fail-closed" },
                descriptor.priority,
                descriptor.timeout,
            )?;
            writeln!(out, "     on {}{}", events.join(", "), filters(&json["toolgate"]))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The events a descriptor's hooks cover at `phase`.
fn events_in(descriptor: &Value, phase: &str) -> Vec<String> {
    let hooks = descriptor["hooks"].as_array().cloned().unwrap_or_default();
    hooks
        .iter()
        .filter(|hook| hook["phase"] == phase)
        .flat_map(|hook| hook["events"].as_array().cloned().unwrap_or_default())
        .filter_map(|event| event.as_str().map(str::to_owned))
        .collect()
}

/// `; servers a, b; tools c` for the filters that are set.
fn filters(toolgate: &Value) -> String {
    let mut text = String::new();
    for key in ["servers", "tools"] {
        let list: Vec<&str> = toolgate[key]
            .as_array()
            .map(|items| items.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !list.is_empty() {
            text.push_str(&format!("; {key} {}", list.join(", ")));
        }
    }
    text
}
