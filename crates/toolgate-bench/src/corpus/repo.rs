//! The repository `mcp-server-git` is asked about: a small Rust library grown over a few
//! commits by two authors, with fixed dates (so the same hashes every time), then a change
//! staged, a change not staged and an untracked file, so that `git_status` and the diffs
//! have something to show.

use std::path::Path;

use anyhow::{Context as _, bail};
use tokio::process::Command;

use super::put;

/// (author, date, message, files written: (path, text))
type Commit = (&'static str, &'static str, &'static str, &'static [(&'static str, &'static str)]);

const ADA: &str = "Ada Lovelace <ada@example.org>";
const ALAN: &str = "Alan Turing <alan@example.org>";

const HISTORY: &[Commit] = &[
    (
        ADA,
        "2025-03-01T09:00:00+01:00",
        "Start the units library",
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"units\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            ),
            ("README.md", "# units\n\nConverts lengths between units.\n"),
            ("src/lib.rs", "//! Lengths in several units.\n\npub mod length;\n"),
            ("src/length.rs", LENGTH_V1),
        ],
    ),
    (ALAN, "2025-03-02T14:30:00+01:00", "Add feet and inches", &[("src/length.rs", LENGTH_V2)]),
    (
        ADA,
        "2025-03-04T10:15:00+01:00",
        "Parse lengths written as text",
        &[
            ("src/lib.rs", "//! Lengths in several units.\n\npub mod length;\npub mod parse;\n"),
            ("src/parse.rs", PARSE_V1),
        ],
    ),
    (
        ALAN,
        "2025-03-05T16:45:00+01:00",
        "Parse: accept spaces between number and unit",
        &[("src/parse.rs", PARSE_V2)],
    ),
    (
        ADA,
        "2025-03-07T11:00:00+01:00",
        "Document the units and bump to 0.2.0",
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"units\"\nversion = \"0.2.0\"\nedition = \"2021\"\n",
            ),
            (
                "README.md",
                "# units\n\nConverts lengths between units: metres, kilometres, feet and \
                       inches.\n\n```rust\nlet l = units::parse::length(\"3 ft\")?;\n```\n",
            ),
        ],
    ),
    (ALAN, "2025-03-08T08:20:00+01:00", "Add miles", &[("src/length.rs", LENGTH_V3)]),
];

const LENGTH_V1: &str = "\
/// A unit of length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    Metre,
    Kilometre,
}

impl Unit {
    /// How many metres one of this unit is.
    pub fn metres(self) -> f64 {
        match self {
            Unit::Metre => 1.0,
            Unit::Kilometre => 1000.0,
        }
    }
}

/// Converts `value` from `from` to `to`.
pub fn convert(value: f64, from: Unit, to: Unit) -> f64 {
    value * from.metres() / to.metres()
}
";

const LENGTH_V2: &str = "\
/// A unit of length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    Metre,
    Kilometre,
    Foot,
    Inch,
}

impl Unit {
    /// How many metres one of this unit is.
    pub fn metres(self) -> f64 {
        match self {
            Unit::Metre => 1.0,
            Unit::Kilometre => 1000.0,
            Unit::Foot => 0.3048,
            Unit::Inch => 0.0254,
        }
    }
}

/// Converts `value` from `from` to `to`.
pub fn convert(value: f64, from: Unit, to: Unit) -> f64 {
    value * from.metres() / to.metres()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_foot_is_twelve_inches() {
        assert!((convert(1.0, Unit::Foot, Unit::Inch) - 12.0).abs() < 1e-9);
    }
}
";

const LENGTH_V3: &str = "\
/// A unit of length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    Metre,
    Kilometre,
    Foot,
    Inch,
    Mile,
}

impl Unit {
    /// How many metres one of this unit is.
    pub fn metres(self) -> f64 {
        match self {
            Unit::Metre => 1.0,
            Unit::Kilometre => 1000.0,
            Unit::Foot => 0.3048,
            Unit::Inch => 0.0254,
            Unit::Mile => 1609.344,
        }
    }
}

/// Converts `value` from `from` to `to`.
pub fn convert(value: f64, from: Unit, to: Unit) -> f64 {
    value * from.metres() / to.metres()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_foot_is_twelve_inches() {
        assert!((convert(1.0, Unit::Foot, Unit::Inch) - 12.0).abs() < 1e-9);
    }

    #[test]
    fn a_mile_is_5280_feet() {
        assert!((convert(1.0, Unit::Mile, Unit::Foot) - 5280.0).abs() < 1e-6);
    }
}
";

const PARSE_V1: &str = "\
//! Lengths written as text: `12m`, `3ft`.

use crate::length::Unit;

/// Reads `text` as a number followed by a unit.
pub fn length(text: &str) -> Option<(f64, Unit)> {
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let unit = match unit {
        \"m\" => Unit::Metre,
        \"km\" => Unit::Kilometre,
        \"ft\" => Unit::Foot,
        \"in\" => Unit::Inch,
        _ => return None,
    };
    Some((number.parse().ok()?, unit))
}
";

const PARSE_V2: &str = "\
//! Lengths written as text: `12m`, `3 ft`, `1.5 km`.

use crate::length::Unit;

/// Reads `text` as a number followed by a unit, with or without spaces between.
pub fn length(text: &str) -> Option<(f64, Unit)> {
    let text = text.trim();
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let unit = match unit.trim() {
        \"m\" => Unit::Metre,
        \"km\" => Unit::Kilometre,
        \"ft\" => Unit::Foot,
        \"in\" => Unit::Inch,
        _ => return None,
    };
    Some((number.trim().parse().ok()?, unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_are_allowed() {
        assert_eq!(length(\" 1.5 km \"), Some((1.5, Unit::Kilometre)));
    }
}
";

/// Makes the repository in `root` (which must exist and be empty).
pub(crate) async fn write(root: &Path) -> anyhow::Result<()> {
    git(root, &["init", "--quiet", "--initial-branch=main"], ADA, HISTORY[0].1).await?;
    for (author, date, message, files) in HISTORY {
        for (path, text) in *files {
            put(root, path, text)?;
        }
        git(root, &["add", "--all"], author, date).await?;
        git(root, &["commit", "--quiet", "--message", message], author, date).await?;
    }
    // Work in progress: miles in the parser (staged), a README line (not staged), a new file.
    put(
        root,
        "src/parse.rs",
        &PARSE_V2.replace(
            "        \"in\" => Unit::Inch,\n",
            "        \"in\" => Unit::Inch,\n        \"mi\" => Unit::Mile,\n",
        ),
    )?;
    git(root, &["add", "src/parse.rs"], ALAN, "2025-03-09T09:00:00+01:00").await?;
    put(root, "README.md", &format!("{}\nMiles are parsed as `mi`.\n", HISTORY[4].3[1].1))?;
    put(root, "CHANGELOG.md", "# Changes\n\n## 0.2.0\n\n- feet, inches, miles\n- parsing\n")?;
    Ok(())
}

/// Runs `git ARGS` in `root` as `author` at `date`, ignoring the user's and the system's
/// git configuration.
async fn git(root: &Path, args: &[&str], author: &str, date: &str) -> anyhow::Result<()> {
    let (name, email) = author.split_once(" <").context("an author is `Name <email>`")?;
    let email = email.trim_end_matches('>');
    let output = Command::new("git")
        .args(["-c", "commit.gpgsign=false", "-c", "core.autocrlf=false"])
        .args(args)
        .current_dir(root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", name)
        .env("GIT_AUTHOR_EMAIL", email)
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_NAME", name)
        .env("GIT_COMMITTER_EMAIL", email)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .await
        .context("cannot run git (is it installed?)")?;
    if !output.status.success() {
        bail!("git {} failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim());
    }
    Ok(())
}
