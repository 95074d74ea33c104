//! The programs a benchmark runs: `toolgate`, which is measured, and `toolgate-fixture`
//! (toolgate-testkit's fixture server), the upstream of every path. Both are looked for next
//! to this executable unless named: `cargo build --release -p toolgate -p toolgate-testkit
//! -p toolgate-bench` (what bench/setup runs) puts all three in one folder.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::Args;

/// `--toolgate` and `--fixture`, shared by every benchmark.
#[derive(Debug, Args)]
pub(crate) struct BinaryArgs {
    /// The toolgate binary to measure [default: `toolgate` next to this executable]
    #[arg(long, value_name = "PATH")]
    toolgate: Option<PathBuf>,
    /// The fixture server every path calls [default: `toolgate-fixture` next to this
    /// executable]
    #[arg(long, value_name = "PATH")]
    fixture: Option<PathBuf>,
}

/// The programs, found.
#[derive(Debug, Clone)]
pub(crate) struct Binaries {
    /// The gateway under measurement.
    pub(crate) toolgate: PathBuf,
    /// The upstream server (`toolgate-fixture`).
    pub(crate) fixture: PathBuf,
}

impl BinaryArgs {
    /// Each program as named, else next to this executable; an error says how to build a
    /// missing one.
    pub(crate) fn resolve(&self) -> anyhow::Result<Binaries> {
        Ok(Binaries {
            toolgate: find(self.toolgate.as_deref(), "toolgate", "--toolgate", "toolgate")?,
            fixture: find(
                self.fixture.as_deref(),
                "toolgate-fixture",
                "--fixture",
                "toolgate-testkit",
            )?,
        })
    }
}

/// `explicit`, else `name` next to this executable; an error says how to build it.
pub(crate) fn find(
    explicit: Option<&Path>,
    name: &str,
    option: &str,
    package: &str,
) -> anyhow::Result<PathBuf> {
    let path = match explicit {
        Some(path) => path.to_owned(),
        None => std::env::current_exe()
            .context("cannot find toolgate-bench's own executable")?
            .with_file_name(name),
    };
    if !path.is_file() {
        bail!(
            "no {name} binary at {}: build it (`cargo build --release -p {package}`, or \
             bench/setup) or pass {option} PATH",
            path.display()
        );
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_binary_says_how_to_build_it() {
        let args =
            BinaryArgs { toolgate: Some(PathBuf::from("/nonexistent/toolgate")), fixture: None };
        let error = args.resolve().expect_err("no such file").to_string();
        assert!(error.contains("/nonexistent/toolgate"), "{error}");
        assert!(error.contains("--toolgate PATH"), "{error}");
    }

    #[test]
    fn named_binaries_are_used_as_they_are() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (toolgate, fixture) = (dir.path().join("tg"), dir.path().join("fx"));
        std::fs::write(&toolgate, "").expect("write");
        std::fs::write(&fixture, "").expect("write");
        let args = BinaryArgs { toolgate: Some(toolgate.clone()), fixture: Some(fixture.clone()) };
        let found = args.resolve().expect("both exist");
        assert_eq!((found.toolgate, found.fixture), (toolgate, fixture));
    }
}
