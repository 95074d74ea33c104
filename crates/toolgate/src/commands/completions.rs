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
    let mut command = crate::Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut command, "toolgate", &mut out);
    Ok(ExitCode::SUCCESS)
}
