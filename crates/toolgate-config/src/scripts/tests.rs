//! Tests of `[scripts]`: every key, the defaults, how folders are resolved, and every problem
//! reported with its path, all at once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{ScriptsConfig, parse_memory};
use crate::{Config, ConfigErrors, FixedEnvironment, Format};

fn env() -> FixedEnvironment {
    FixedEnvironment::new()
        .with_var("SCRIPTS", "/srv/scripts")
        .with_var("EMPTY", "")
        .with_home_dir("/home/ada")
        .with_current_dir("/work")
}

fn toml(text: &str) -> Result<Config, ConfigErrors> {
    crate::parse_str(text, Format::Toml, Path::new("/etc/toolgate"), &env())
}

fn scripts(text: &str) -> ScriptsConfig {
    match toml(text) {
        Ok(config) => config.scripts,
        Err(errors) => panic!("config must load:\n{errors}"),
    }
}

fn errors(text: &str) -> Vec<String> {
    match toml(text) {
        Ok(config) => panic!("config must fail, got {:?}", config.scripts),
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn every_key() {
    let scripts = scripts(
        r#"
        [scripts]
        dirs = [".toolgate/scripts", "/opt/toolgate/scripts"]
        instructions = 250000
        memory = "16MiB"
        timeout = "1500ms"
        tool_timeout = "45s"
        watch = false
        "#,
    );
    assert_eq!(
        scripts,
        ScriptsConfig {
            dirs: vec![
                PathBuf::from("/etc/toolgate/.toolgate/scripts"),
                PathBuf::from("/opt/toolgate/scripts"),
            ],
            instructions: Some(250_000),
            memory: Some(16 * 1024 * 1024),
            timeout: Some(Duration::from_millis(1500)),
            tool_timeout: Some(Duration::from_secs(45)),
            watch: false,
        }
    );
}

#[test]
fn absent_table_gives_the_defaults() {
    let expected = ScriptsConfig {
        dirs: Vec::new(),
        instructions: None,
        memory: None,
        timeout: None,
        tool_timeout: None,
        watch: true,
    };
    assert_eq!(ScriptsConfig::default(), expected);
    assert_eq!(Config::default().scripts, expected);
    assert_eq!(scripts(""), expected);
    assert_eq!(scripts("[scripts]\n"), expected);
    // A JSON client config has no `[scripts]`.
    let json = crate::parse_str("{\"mcpServers\": {}}", Format::Json, Path::new("/"), &env())
        .expect("config must load");
    assert_eq!(json.scripts, expected);
}

#[test]
fn folders_are_resolved_like_the_other_paths() {
    let scripts = scripts(
        r#"
        [scripts]
        dirs = ["scripts", "../common/scripts", "~/toolgate/scripts", "${SCRIPTS}/mine", "/abs"]
        "#,
    );
    let dirs: Vec<&Path> = scripts.dirs.iter().map(PathBuf::as_path).collect();
    assert_eq!(
        dirs,
        [
            Path::new("/etc/toolgate/scripts"),
            Path::new("/etc/toolgate/../common/scripts"),
            Path::new("/home/ada/toolgate/scripts"),
            Path::new("/srv/scripts/mine"),
            Path::new("/abs"),
        ]
    );
    assert!(scripts.watch);
}

#[test]
fn memory_as_an_integer_of_bytes() {
    assert_eq!(scripts("[scripts]\nmemory = 1048576\n").memory, Some(1 << 20));
}

#[test]
fn timeout_in_seconds() {
    assert_eq!(scripts("[scripts]\ntimeout = 2\n").timeout, Some(Duration::from_secs(2)));
}

#[test]
fn every_problem_with_its_path() {
    let found = errors(
        r#"
        [scripts]
        dirs = ["a", "", 3, "${EMPTY}", "${NOPE}"]
        instructions = 0
        memory = "16MB"
        timeout = "soon"
        watch = "yes"
        colour = "blue"
        "#,
    );
    assert_eq!(
        found,
        [
            "scripts.colour: unknown key (expected one of: dirs, instructions, memory, timeout, \
             tool_timeout, watch)",
            "scripts.dirs[2]: expected a string, found integer",
            "scripts.instructions: 0 is out of range (at least 1)",
            "scripts.memory: invalid memory size \"16MB\": unknown unit \"MB\": write MiB (units \
             are binary, and only B, KiB, MiB and GiB are accepted)",
            "scripts.timeout: invalid duration \"soon\": expected a number at character 1",
            "scripts.watch: expected a boolean, found string",
        ]
    );
    // Once every element is a string, each folder is checked.
    let found = errors(
        r#"
        [scripts]
        dirs = ["a", "", " ", "${EMPTY}", "${NOPE}"]
        "#,
    );
    assert_eq!(
        found,
        [
            "scripts.dirs[1]: must not be empty",
            "scripts.dirs[2]: must not be empty",
            "scripts.dirs[3]: must not be empty",
            "scripts.dirs[4]: environment variable NOPE is not set",
        ]
    );
}

#[test]
fn wrong_types() {
    let found = errors(
        r#"
        [scripts]
        dirs = ".toolgate/scripts"
        instructions = "many"
        memory = true
        timeout = []
        "#,
    );
    assert_eq!(
        found,
        [
            "scripts.dirs: expected an array of strings, found string",
            "scripts.instructions: expected a positive integer, found string",
            "scripts.memory: expected a number of bytes or a size such as \"16MiB\", found boolean",
            "scripts.timeout: expected a duration (such as \"30s\") or a number of seconds, \
             found array",
        ]
    );
    assert_eq!(errors("scripts = 1"), ["scripts: expected a table, found integer"]);
    assert_eq!(
        errors("[scripts]\ndirs = []\nmemory = -1\ninstructions = -5\ntimeout = 0\n"),
        [
            "scripts.dirs: needs at least one folder (leave `dirs` out to load .toolgate/scripts \
             beside the config file)",
            "scripts.instructions: -5 is out of range (at least 1)",
            "scripts.memory: -1 is out of range (at least 1)",
            "scripts.timeout: must be greater than zero",
        ]
    );
}

#[test]
fn memory_sizes() {
    assert_eq!(parse_memory("1B"), Ok(1));
    assert_eq!(parse_memory("512KiB"), Ok(512 * 1024));
    assert_eq!(parse_memory("16MiB"), Ok(16 * 1024 * 1024));
    assert_eq!(parse_memory("16 MiB"), Ok(16 * 1024 * 1024));
    assert_eq!(parse_memory(" 2GiB "), Ok(2 * 1024 * 1024 * 1024));
    assert_eq!(parse_memory("4096B"), Ok(4096));
}

#[test]
fn memory_size_problems() {
    let problem = |text: &str| parse_memory(text).expect_err("size must be refused");
    assert_eq!(problem(""), "expected a whole number followed by a unit (B, KiB, MiB or GiB)");
    assert_eq!(problem("MiB"), "expected a whole number followed by a unit (B, KiB, MiB or GiB)");
    assert_eq!(problem("-1MiB"), "expected a whole number followed by a unit (B, KiB, MiB or GiB)");
    assert_eq!(
        problem("1024"),
        "missing unit: write one of B, KiB, MiB or GiB after the number, or give a number of \
         bytes as an integer (without quotes)"
    );
    assert_eq!(
        problem("1.5GiB"),
        "expected a whole number: write a smaller unit instead of a fraction (\"1536MiB\", not \
         \"1.5GiB\")"
    );
    assert_eq!(problem("0MiB"), "must be greater than zero");
    assert_eq!(problem("0B"), "must be greater than zero");
    for (text, meant) in [("16MB", "MiB"), ("16mib", "MiB"), ("1KB", "KiB"), ("1kB", "KiB")] {
        assert_eq!(
            problem(text),
            format!(
                "unknown unit {:?}: write {meant} (units are binary, and only B, KiB, MiB and \
                 GiB are accepted)",
                text.trim_start_matches(|c: char| c.is_ascii_digit())
            )
        );
    }
    assert_eq!(problem("2GB"), problem("2gb").replace("\"gb\"", "\"GB\""));
    assert_eq!(problem("16 parsecs"), "unknown unit \"parsecs\" (expected B, KiB, MiB or GiB)");
    assert_eq!(problem("16MiB extra"), "unknown unit \"MiB extra\" (expected B, KiB, MiB or GiB)");
    assert_eq!(problem("17179869184GiB"), format!("too large (at most {} bytes)", u64::MAX));
    assert_eq!(problem("99999999999999999999B"), format!("too large (at most {} bytes)", u64::MAX));
}
