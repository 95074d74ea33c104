//! `toolgate man [--dir DIR]`: the manual page, generated from the command line definition
//! (clap_mangen): toolgate(1) on stdout, or one page per command written into a folder.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, CommandFactory as _};

#[derive(Debug, Args)]
#[command(after_help = "Read it with `toolgate man | man -l -`, or install the pages with\n  \
    toolgate man --dir ~/.local/share/man/man1")]
pub(crate) struct ManArgs {
    /// Write toolgate.1 and a page per command (toolgate-serve.1, ...) into DIR instead.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub(crate) fn run(args: &ManArgs) -> anyhow::Result<ExitCode> {
    let command = crate::Cli::command();
    match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(command, dir)
                .with_context(|| format!("cannot write the manual pages into {}", dir.display()))?;
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command).render(&mut page)?;
            let mut out = std::io::stdout().lock();
            out.write_all(&page)?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
