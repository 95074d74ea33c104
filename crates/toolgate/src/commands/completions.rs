//! `toolgate completions SHELL`: the shell completion script, generated from the command line
//! definition (clap_complete), printed to stdout.

use std::process::ExitCode;

use clap::{Args, CommandFactory as _};
use clap_complete::Shell;

#[derive(Debug, Args)]
#[command(after_help = "Install, for example:\n  \
    toolgate completions bash > ~/.local/share/bash-completion/completions/toolgate\n  \
    toolgate completions zsh > ~/.zfunc/_toolgate     (with ~/.zfunc in $fpath)\n  \
    toolgate completions fish > ~/.config/fish/completions/toolgate.fish")]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: Shell,
}

pub(crate) fn run(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut command = visible_command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut command, "toolgate", &mut out);
    Ok(ExitCode::SUCCESS)
}

/// The command line without its hidden subcommands (`demo-server`). clap_complete's scripts
/// offer hidden subcommands too, and clap cannot remove a subcommand, so the root is put
/// together again from the real one's arguments and visible subcommands.
fn visible_command() -> clap::Command {
    let full = crate::Cli::command();
    clap::Command::new("toolgate")
        .version(env!("CARGO_PKG_VERSION"))
        .args(full.get_arguments().cloned())
        .subcommands(full.get_subcommands().filter(|command| !command.is_hide_set()).cloned())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    #[test]
    fn the_completed_command_is_the_real_one_minus_hidden_subcommands() {
        let full = crate::Cli::command();
        let visible = super::visible_command();
        let names = |command: &clap::Command| -> Vec<String> {
            command.get_subcommands().map(|s| s.get_name().to_owned()).collect()
        };
        let expected: Vec<String> = full
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| s.get_name().to_owned())
            .collect();
        assert_eq!(names(&visible), expected);
        assert!(names(&full).contains(&"demo-server".to_owned()));
        let args = |command: &clap::Command| -> Vec<String> {
            command.get_arguments().map(|a| a.get_id().to_string()).collect()
        };
        assert_eq!(args(&visible), args(&full), "the global options are kept");
    }
}
