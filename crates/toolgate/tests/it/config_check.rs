//! `toolgate config check` over the fixture configs in `tests/config-check`: each runs through
//! the real binary in a scaffold folder of its own (a `.toml` fixture as `toolgate.toml`, a
//! `.yaml` one, smg-mcp's dialect, as `mcp.yaml`), and its exit code and stdout are compared
//! with `<name>.expected` beside it (the folder written `$DIR`); the fixtures named `valid` or
//! `valid_*` must pass, the others must fail. `UPDATE_GOLDEN=1` rewrites
//! them. Also: the check writes nothing, starts nothing and connects nowhere, and `serve`
//! refuses a bad pipeline before it creates the audit log.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use crate::support::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("config-check")
}

/// A folder holding the config (`toolgate.toml` unless said) and what the fixtures point at:
/// - `plain-file`: a regular file where some fixtures want a directory;
/// - `logs/`: a writable directory for a log;
/// - `broken.jsonl`: an audit log whose chain does not verify (private: `0600`);
/// - `locked/`: a directory nobody may create files in, this process included. Mode 0555 is
///   enough for other users; root ignores mode bits (and these tests often run as root), so as
///   root it is also made immutable (`chattr +i`, which binds root too) until dropped.
struct Scaffold {
    dir: tempfile::TempDir,
    locked_immutable: bool,
    /// The config's file name.
    file: &'static str,
}

impl Scaffold {
    fn new(config: &str) -> Scaffold {
        Scaffold::named("toolgate.toml", config)
    }

    fn named(file: &'static str, config: &str) -> Scaffold {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        std::fs::write(root.join(file), config).expect("write the config");
        std::fs::write(root.join("plain-file"), "not a directory\n").expect("write plain-file");
        std::fs::create_dir(root.join("logs")).expect("create logs");
        std::fs::write(root.join("broken.jsonl"), "not a record\n").expect("write broken.jsonl");
        // Private, as toolgate makes logs, so that the goldens do not depend on the umask (a
        // log others can read gets a warning: see `an_audit_log_others_can_read_...`).
        std::fs::set_permissions(root.join("broken.jsonl"), std::fs::Permissions::from_mode(0o600))
            .expect("chmod broken.jsonl");
        let locked = root.join("locked");
        std::fs::create_dir(&locked).expect("create locked");
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).expect("chmod");
        let locked_immutable = nix::unistd::geteuid().is_root();
        if locked_immutable {
            let status = std::process::Command::new("chattr").arg("+i").arg(&locked).status();
            assert!(
                status.is_ok_and(|s| s.success()),
                "as root this test needs `chattr +i` on the temp dir's file system"
            );
        }
        Scaffold { dir, locked_immutable, file }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn config(&self) -> PathBuf {
        self.root().join(self.file)
    }

    /// Every file and folder under the scaffold with its size and modification time.
    fn listing(&self) -> BTreeMap<PathBuf, (bool, u64, SystemTime)> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, (bool, u64, SystemTime)>) {
            for entry in std::fs::read_dir(dir).expect("read dir") {
                let path = entry.expect("entry").path();
                let meta = std::fs::symlink_metadata(&path).expect("metadata");
                out.insert(
                    path.clone(),
                    (meta.is_dir(), meta.len(), meta.modified().expect("mtime")),
                );
                if meta.is_dir() {
                    walk(&path, out);
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(self.root(), &mut out);
        out
    }
}

impl Drop for Scaffold {
    fn drop(&mut self) {
        if self.locked_immutable {
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .arg(self.root().join("locked"))
                .status();
        }
    }
}

/// Runs `toolgate config check` (with `extra` arguments) on the scaffold's config: exit code
/// and stdout, the scaffold's folder written `$DIR`. Asserts that nothing in the folder
/// changed.
async fn check(scaffold: &Scaffold, extra: &[&str]) -> (i32, String) {
    let before = scaffold.listing();
    let config = scaffold.config().to_string_lossy().into_owned();
    let mut args = vec!["config", "check", "--config", &config];
    args.extend_from_slice(extra);
    let output = run_toolgate(&args).await;
    assert_eq!(scaffold.listing(), before, "config check changed the folder");
    // `locked/` refuses root with EPERM (immutable) and others with EACCES (mode bits): one
    // golden file for both.
    let stdout = String::from_utf8_lossy(&output.stdout)
        .replace(&scaffold.root().display().to_string(), "$DIR")
        .replace("(Operation not permitted)", "(Permission denied)");
    (output.status.code().expect("an exit code"), stdout)
}

#[tokio::test]
async fn every_fixture_gives_its_golden_output() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("fixture dir")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml" || e == "yaml"))
        .collect();
    fixtures.sort();
    assert!(fixtures.len() >= 15, "fixtures missing: {fixtures:?}");
    let mut failures = Vec::new();
    for fixture in &fixtures {
        let text = std::fs::read_to_string(fixture).expect("read fixture");
        let yaml = fixture.extension().is_some_and(|e| e == "yaml");
        let scaffold = Scaffold::named(if yaml { "mcp.yaml" } else { "toolgate.toml" }, &text);
        let (code, stdout) = check(&scaffold, &[]).await;
        let stem = fixture.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let valid = stem == "valid" || stem.starts_with("valid_");
        assert_eq!(code, if valid { 0 } else { 64 }, "{}:\n{stdout}", fixture.display());
        let actual = format!("exit: {code}\n{stdout}");
        let expected_path = fixture.with_extension("expected");
        if update {
            std::fs::write(&expected_path, &actual).expect("write expected");
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "{} (UPDATE_GOLDEN=1 to accept):\n--- expected\n{expected}--- actual\n{actual}",
                fixture.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn json_lists_the_same_problems() {
    let text = std::fs::read_to_string(fixtures().join("several_problems.toml")).expect("read");
    let scaffold = Scaffold::new(&text);
    let (code, plain) = check(&scaffold, &[]).await;
    let (json_code, json) = check(&scaffold, &["--json"]).await;
    assert_eq!((code, json_code), (64, 64));
    let report: Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(report["ok"], false);
    assert_eq!(report["path"], "$DIR/toolgate.toml");
    let problems = report["problems"].as_array().expect("problems");
    let lines: Vec<String> = problems
        .iter()
        .map(|p| format!("{}: {}", p["path"].as_str().unwrap(), p["message"].as_str().unwrap()))
        .collect();
    let plain_lines: Vec<&str> = plain.lines().collect();
    assert_eq!(plain_lines[..plain_lines.len() - 1], lines, "{plain}");
    assert!(problems.len() >= 8, "{json}");

    let valid = Scaffold::new(&std::fs::read_to_string(fixtures().join("valid.toml")).unwrap());
    let (code, json) = check(&valid, &["--json"]).await;
    assert_eq!(code, 0, "{json}");
    let report: Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(report["ok"], true);
    assert_eq!(report["problems"], serde_json::json!([]));
}

/// An audit log already there that others may read: the check warns, naming it, and the
/// config stays valid (the file is the user's); a private one is not mentioned.
#[tokio::test]
async fn an_audit_log_others_can_read_is_named_in_a_warning() {
    use std::os::unix::fs::PermissionsExt as _;
    let scaffold = Scaffold::new("[audit]\nfile = \"logs/audit.jsonl\"\n");
    let log = scaffold.root().join("logs").join("audit.jsonl");
    std::fs::write(&log, "").expect("write the log");
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let (code, stdout) = check(&scaffold, &[]).await;
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.starts_with(
            "warning: audit.file: the audit log $DIR/logs/audit.jsonl can be read or written by \
             others than its owner (mode 0644)"
        ),
        "{stdout}"
    );
    let (_, json) = check(&scaffold, &["--json"]).await;
    let report: Value = serde_json::from_str(&json).expect("JSON");
    assert!(report["warnings"][0].as_str().is_some_and(|w| w.contains("chmod 600")), "{json}");

    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let (code, stdout) = check(&scaffold, &[]).await;
    assert_eq!(code, 0, "{stdout}");
    assert!(!stdout.contains("warning"), "{stdout}");
}

/// A listener whose port a config names, to see whether anything connected to it.
struct Watched(TcpListener);

impl Watched {
    fn new() -> Watched {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        Watched(listener)
    }

    fn addr(&self) -> String {
        self.0.local_addr().expect("address").to_string()
    }

    fn was_contacted(&self) -> bool {
        self.0.accept().is_ok()
    }
}

#[tokio::test]
async fn the_check_binds_nothing_connects_nowhere_and_runs_nothing() {
    let (gateway, admin, upstream, webhook) =
        (Watched::new(), Watched::new(), Watched::new(), Watched::new());
    let scaffold = Scaffold::new("");
    let marker = scaffold.root().join("logs").join("started");
    let config = format!(
        "[gateway]\nlisten = \"{}\"\n\
         [servers.local]\ncommand = \"touch\"\nargs = [{}]\n\
         [servers.remote]\nurl = \"http://{}/mcp\"\n\
         [[pipeline]]\nkind = \"approval\"\nvia = \"external\"\n\
         [audit]\nfile = \"logs/audit.jsonl\"\n[[audit.webhook]]\nurl = \"http://{}/hook\"\n\
         [admin]\nlisten = \"{}\"\ntokens = {{ alice = \"alice-token-0123456789\" }}\n",
        gateway.addr(),
        toml_str(&marker.to_string_lossy()),
        upstream.addr(),
        webhook.addr(),
        admin.addr(),
    );
    std::fs::write(scaffold.config(), config).expect("write config");
    // The gateway's and the admin API's ports are taken: binding either would fail the check.
    let (code, stdout) = check(&scaffold, &[]).await;
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("audit: log $DIR/logs/audit.jsonl, 1 webhook"), "{stdout}");
    for (name, watched) in [("upstream", &upstream), ("webhook", &webhook)] {
        assert!(!watched.was_contacted(), "config check connected to the {name}");
    }
    assert!(!marker.exists(), "config check started a server");
    assert!(!scaffold.root().join("logs/audit.jsonl").exists());
}

#[tokio::test]
async fn commands_that_start_the_gateway_refuse_a_bad_pipeline_before_the_audit_log() {
    let webhook = Watched::new();
    let scaffold = Scaffold::new("");
    let config = format!(
        "[[pipeline]]\nkind = \"policy\"\ndefault = \"maybe\"\n\
         [audit]\nfile = \"logs/audit.jsonl\"\n[[audit.webhook]]\nurl = \"http://{}/hook\"\n",
        webhook.addr()
    );
    std::fs::write(scaffold.config(), config).expect("write config");
    let config = scaffold.config().to_string_lossy().into_owned();
    for args in [vec!["serve", "--stdio"], vec!["tools"], vec!["call", "x"], vec!["servers"]] {
        let mut args = args.clone();
        args.extend(["--config", &config]);
        let output = run_toolgate(&args).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(64), "{args:?}: {stderr}");
        assert!(stderr.contains("pipeline[0].default"), "{args:?}: {stderr}");
        assert!(!scaffold.root().join("logs/audit.jsonl").exists(), "{args:?} created the log");
        assert!(!webhook.was_contacted(), "{args:?} started the webhook");
    }
}

#[tokio::test]
async fn serve_refuses_what_the_check_finds_about_admin_and_the_log() {
    let scaffold = Scaffold::new(
        "[[pipeline]]\nkind = \"approval\"\nvia = \"external\"\n[audit]\nfile = \"logs/a.jsonl\"\n",
    );
    let config = scaffold.config().to_string_lossy().into_owned();
    let output = run_toolgate(&["serve", "--stdio", "--config", &config]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "{stderr}");
    assert!(stderr.contains("pipeline[0].via") && stderr.contains("[admin]"), "{stderr}");
    assert!(!scaffold.root().join("logs/a.jsonl").exists());

    let missing = Scaffold::new("[audit]\nfile = \"missing/audit.jsonl\"\n");
    let config = missing.config().to_string_lossy().into_owned();
    let output = run_toolgate(&["serve", "--stdio", "--config", &config]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "{stderr}");
    assert!(
        stderr.contains("audit.file: audit log ") && stderr.contains("does not exist"),
        "{stderr}"
    );
    assert!(!missing.root().join("missing").exists(), "serve created the directory");
}
