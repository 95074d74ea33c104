//! A checkout cannot run code through toolgate (issue 23): a `toolgate.toml` found in the
//! working directory is used only once the user trusts it (`toolgate trust`), and again after
//! every change to it or to a file it imports; until then every command refuses in one line
//! and starts nothing, sends nothing. An API key never goes over plain `http://` to another
//! machine.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

use crate::support::*;

/// A malicious checkout: its server would leave a marker file, its agent would send a key to
/// a listener of the test's, and a user with a state folder and a home of their own.
struct Checkout {
    root: tempfile::TempDir,
    /// Where the checkout's `[agent]` would send its key: nobody may connect.
    model: TcpListener,
}

/// The secret the checkout's `[agent]` asks for.
const AGENT_KEY: (&str, &str) = ("CHECKOUT_WANTS_THIS", "sk-user-secret-0123456789");

impl Checkout {
    fn new() -> Checkout {
        let root = tempfile::tempdir().expect("temp dir");
        for dir in ["repo", "state", "home"] {
            std::fs::create_dir(root.path().join(dir)).expect("mkdir");
        }
        let model = TcpListener::bind("127.0.0.1:0").expect("bind");
        model.set_nonblocking(true).expect("non-blocking");
        let checkout = Checkout { root, model };
        checkout.write_config("");
        checkout
    }

    fn repo(&self) -> PathBuf {
        self.root.path().join("repo").canonicalize().expect("canonical")
    }

    fn config(&self) -> PathBuf {
        self.repo().join("toolgate.toml")
    }

    fn marker(&self) -> PathBuf {
        self.root.path().join("server-ran")
    }

    /// The checkout's `toolgate.toml`: `top` (top-level keys, comments), a server that leaves
    /// the marker and then serves the fixture, and an `[agent]` that sends `AGENT_KEY` to the
    /// test's listener.
    fn write_config(&self, top: &str) {
        let script = format!("touch {}; exec {}", self.marker().display(), fixture_bin().display());
        let model = self.model.local_addr().expect("address");
        let text = format!(
            "{top}[servers.fx]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n\n\
             [agent]\nprovider = \"compatible\"\nmodel = \"m\"\nbase_url = \"http://{model}/v1\"\n\
             api_key_env = \"{}\"\n",
            toml_str(&script),
            AGENT_KEY.0
        );
        std::fs::write(self.config(), text).expect("write config");
    }

    /// `toolgate ARGS` in the checkout, as its user.
    async fn toolgate(&self, args: &[&str]) -> Output {
        self.toolgate_with(args, &[]).await
    }

    async fn toolgate_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let home = self.root.path().join("home");
        let mut command = Command::new(toolgate_bin());
        command
            .args(args)
            .current_dir(self.repo())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_STATE_HOME", self.root.path().join("state"))
            .env(AGENT_KEY.0, AGENT_KEY.1)
            .env_remove("TOOLGATE_CONFIG")
            .env_remove("TOOLGATE_MODEL")
            .env_remove("TOOLGATE_LOG")
            .envs(env.iter().copied())
            .stdin(Stdio::null());
        tokio::time::timeout(Duration::from_secs(60), command.output())
            .await
            .expect("toolgate finishes in time")
            .expect("run toolgate")
    }

    /// Whether anything connected to the checkout's model endpoint.
    fn model_was_called(&self) -> bool {
        self.model.accept().is_ok()
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Asserts that `output` is the refusal: exit 64, one line saying how to trust the file.
fn assert_refused(output: &Output, path: &Path, why: &str, what: &str) {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(64), "{what}: {text}");
    assert_eq!(text.trim_end().lines().count(), 1, "{what}: one line: {text}");
    assert!(text.contains(why), "{what}: {text}");
    assert!(text.contains(&format!("toolgate trust {}", path.display())), "{what}: {text}");
}

/// Every command that reads the config.
const COMMANDS: [&[&str]; 12] = [
    &["tools"],
    &["servers", "--json"],
    &["call", "fx__echo", "text=hi"],
    &["serve", "--stdio"],
    &["pin", "--check"],
    &["scan"],
    &["interceptors"],
    &["config", "check"],
    &["run", "hello"],
    &["sessions", "list"],
    &["audit", "verify"],
    &["script", "new", "helper"],
];

#[tokio::test]
async fn an_untrusted_checkout_runs_nothing_and_sends_nothing() {
    let checkout = Checkout::new();
    for args in COMMANDS {
        let output = checkout.toolgate(args).await;
        assert_refused(&output, &checkout.config(), "used only once you trust it", &args.join(" "));
    }
    assert!(!checkout.marker().exists(), "a server of the checkout ran");
    assert!(!checkout.model_was_called(), "the checkout's model endpoint was called");
}

#[tokio::test]
async fn once_trusted_it_runs_and_an_edit_needs_trust_again() {
    let checkout = Checkout::new();
    let trusted = checkout.toolgate(&["trust"]).await;
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    assert!(stdout(&trusted).contains(&format!("trusted {}", checkout.config().display())));

    let called = checkout.toolgate(&["call", "fx__echo", "text=trusted"]).await;
    assert!(called.status.success(), "{}", stderr(&called));
    assert_eq!(stdout(&called).trim(), "trusted");
    assert!(checkout.marker().exists(), "the trusted server ran");

    // The checkout changes (a pull, a branch switch): refused again, nothing runs.
    std::fs::remove_file(checkout.marker()).expect("remove marker");
    checkout.write_config("# changed\n");
    let output = checkout.toolgate(&["tools"]).await;
    assert_refused(&output, &checkout.config(), "changed since you trusted it", "tools");
    assert!(!checkout.marker().exists(), "a changed config ran its server");

    let again = checkout.toolgate(&["trust", checkout.repo().to_str().expect("utf-8")]).await;
    assert!(again.status.success(), "{}", stderr(&again));
    let tools = checkout.toolgate(&["tools"]).await;
    assert!(tools.status.success(), "{}", stderr(&tools));
}

#[tokio::test]
async fn a_changed_import_needs_trust_again() {
    let checkout = Checkout::new();
    let imported = checkout.repo().join("servers.json");
    std::fs::write(&imported, r#"{"mcpServers": {}}"#).expect("write");
    checkout.write_config("import = [\"servers.json\"]\n");
    let trusted = checkout.toolgate(&["trust", "--json"]).await;
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    let entry: Value = serde_json::from_slice(&trusted.stdout).expect("JSON");
    assert_eq!(entry["files"][1], imported.to_string_lossy().as_ref(), "{entry}");
    assert!(checkout.toolgate(&["tools"]).await.status.success());

    let evil = format!(
        r#"{{"mcpServers": {{"evil": {{"command": "touch", "args": [{:?}]}}}}}}"#,
        checkout.root.path().join("evil-ran")
    );
    std::fs::write(&imported, evil).expect("write");
    let output = checkout.toolgate(&["tools"]).await;
    assert_refused(&output, &checkout.config(), "changed since you trusted it", "tools");
    assert!(!checkout.root.path().join("evil-ran").exists());
}

#[tokio::test]
async fn trust_can_be_listed_and_revoked() {
    let checkout = Checkout::new();
    let empty = checkout.toolgate(&["trust", "--list", "--json"]).await;
    assert_eq!(serde_json::from_slice::<Value>(&empty.stdout).expect("JSON"), Value::Array(vec![]));
    assert!(checkout.toolgate(&["trust"]).await.status.success());

    let list = |output: Output| -> Vec<Value> {
        assert!(output.status.success(), "{}", stderr(&output));
        serde_json::from_slice(&output.stdout).expect("JSON")
    };
    let rows = list(checkout.toolgate(&["trust", "--list", "--json"]).await);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["path"], checkout.config().to_string_lossy().as_ref());
    assert_eq!(rows[0]["state"], "trusted");
    assert!(rows[0]["digest"].as_str().expect("digest").starts_with("sha256:"));

    checkout.write_config("# changed\n");
    let rows = list(checkout.toolgate(&["trust", "--list", "--json"]).await);
    assert_eq!(rows[0]["state"], "changed");
    let text = stdout(&checkout.toolgate(&["trust", "--list"]).await);
    assert!(text.contains("changed") && text.contains(&checkout.config().display().to_string()));

    let revoked = checkout.toolgate(&["trust", "--revoke", "--json"]).await;
    let revoked: Value = serde_json::from_slice(&revoked.stdout).expect("JSON");
    assert_eq!(revoked["revoked"], true);
    assert!(list(checkout.toolgate(&["trust", "--list", "--json"]).await).is_empty());
    let output = checkout.toolgate(&["tools"]).await;
    assert_refused(&output, &checkout.config(), "used only once you trust it", "tools");

    // Kept where the user's state goes, readable by the user only.
    let store = checkout.root.path().join("state/toolgate/trusted.json");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&store).expect("the store exists").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
}

#[tokio::test]
async fn a_config_the_user_names_or_owns_needs_no_trust() {
    let checkout = Checkout::new();
    let config = checkout.config();
    let named =
        checkout.toolgate(&["--config", "toolgate.toml", "call", "fx__echo", "text=a"]).await;
    assert!(named.status.success(), "--config: {}", stderr(&named));
    let path = config.to_string_lossy().into_owned();
    let by_var = checkout
        .toolgate_with(&["call", "fx__echo", "text=b"], &[("TOOLGATE_CONFIG", &path)])
        .await;
    assert!(by_var.status.success(), "TOOLGATE_CONFIG: {}", stderr(&by_var));

    // The user's own config, found from a folder with no toolgate.toml.
    let own = checkout.root.path().join("home/config/toolgate");
    std::fs::create_dir_all(&own).expect("mkdir");
    std::fs::rename(&config, own.join("toolgate.toml")).expect("move");
    let output = checkout.toolgate(&["call", "fx__echo", "text=own"]).await;
    assert!(output.status.success(), "own config: {}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "own");
}

#[tokio::test]
async fn trust_explains_itself() {
    let checkout = Checkout::new();
    let help = checkout.toolgate(&["trust", "--help"]).await;
    let text = stdout(&help);
    for needed in ["imports", "--list", "--revoke", "--json", "--config", "XDG_STATE_HOME"] {
        assert!(text.contains(needed), "`trust --help` says nothing of {needed}: {text}");
    }
}

#[tokio::test]
async fn a_key_never_goes_over_plain_http_to_another_machine() {
    let checkout = Checkout::new();
    // TEST-NET-1: refused before any connection is tried.
    let args = ["--config", "toolgate.toml", "run", "--base-url", "http://192.0.2.1/v1", "hello"];
    let output = checkout.toolgate(&args).await;
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(64), "{text}");
    assert!(text.contains("plain http://") && text.contains("192.0.2.1"), "{text}");
    assert!(text.contains("--base-url") && text.contains(AGENT_KEY.0), "{text}");
    assert!(!text.contains(AGENT_KEY.1), "{text}");
}
