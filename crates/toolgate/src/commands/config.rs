//! `toolgate config check`: validate the config and print every problem at once.

use std::process::ExitCode;

use clap::Subcommand;

use crate::GlobalArgs;
use crate::setup;

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Check the config and print every problem with its path; exit 64 when it is invalid.
    Check,
}

pub(crate) fn run(global: &GlobalArgs, command: ConfigCommand) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    match command {
        ConfigCommand::Check => match toolgate_config::load(global.config.as_deref()) {
            Ok(Some(loaded)) => {
                for warning in &loaded.config.warnings {
                    println!("warning: {warning}");
                }
                let enabled = loaded.config.servers.iter().filter(|s| s.enabled).count();
                println!(
                    "{}: ok ({} servers, {} enabled)",
                    loaded.path.display(),
                    loaded.config.servers.len(),
                    enabled
                );
                Ok(ExitCode::SUCCESS)
            }
            Ok(None) => {
                println!(
                    "no config found ($TOOLGATE_CONFIG, ./toolgate.toml, \
                     ~/.config/toolgate/toolgate.toml); toolgate would serve its demo server"
                );
                Ok(ExitCode::SUCCESS)
            }
            Err(errors) => {
                for error in errors.iter() {
                    println!("{error}");
                }
                Ok(ExitCode::from(setup::EXIT_USAGE))
            }
        },
    }
}
