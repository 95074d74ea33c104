//! toolgate as the OAuth client of an upstream, end to end against real things: the MCP
//! TypeScript SDK's own bearer-auth middleware ([`GuardedServer`]) guarding an MCP server, and a
//! real authorization server (oidc-provider, [`OidcProvider`]) that issues and introspects its
//! tokens. `toolgate login` signs alice in once (the browser step scripted: the printed address
//! is followed as a browser would, and the redirect delivered to toolgate's loopback receiver);
//! then `toolgate call` and `toolgate serve`, each a new process, and a gateway that was already
//! running, use the stored tokens, refresh them when the server stops taking the access token
//! or it is about to expire, and say to run `toolgate login` when the refresh token is gone
//! too, after `toolgate logout`, or when a tool needs a scope the tokens lack (which the next
//! login asks for). A machine client needs no login. No token, code or secret appears in any
//! output (logging at trace level), the audit log, or the token folder's files.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, BufReader};
use tokio::process::Command;
use toolgate_testkit::oidc::{CI_ACME, GuardedServer, OidcProvider, ProviderOptions};

use crate::support::*;

/// How long one toolgate command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// The upstream's name in the config.
const NAME: &str = "guarded";

/// An authorization server, the MCP server it guards, and a home for toolgate: its config
/// (the guarded server as `guarded`, an audit log of every event), its token folder and key.
struct Scene {
    provider: OidcProvider,
    server: GuardedServer,
    home: tempfile::TempDir,
    /// Everything every toolgate process printed, for the search for secrets.
    printed: Vec<String>,
    /// The authorization codes the logins got, secrets too.
    codes: Vec<String>,
}

impl Scene {
    /// Starts both servers, the authorization server issuing opaque access tokens (which the
    /// guarded server introspects: a revoked one is refused at once); `oauth` is the server's
    /// `oauth = ...` line, if any.
    async fn start(oauth: Option<&str>) -> Scene {
        Scene::start_with(ProviderOptions { opaque: true, ..Default::default() }, oauth).await
    }

    /// [`Scene::start`] with the authorization server's `options`.
    async fn start_with(options: ProviderOptions, oauth: Option<&str>) -> Scene {
        let provider = OidcProvider::start_with(options).await;
        let server = GuardedServer::start(&provider).await;
        let home = tempfile::tempdir().expect("a temp dir");
        let config = format!(
            "[audit]\nfile = \"audit.jsonl\"\nevents = [\"*\"]\n\n[servers.{NAME}]\nurl = {}\n{}\n",
            toml_str(server.url()),
            oauth.unwrap_or_default(),
        );
        std::fs::write(home.path().join("toolgate.toml"), config).expect("write the config");
        Scene { provider, server, home, printed: Vec::new(), codes: Vec::new() }
    }

    fn config(&self) -> PathBuf {
        self.home.path().join("toolgate.toml")
    }

    /// Where the tokens are (`$XDG_STATE_HOME/toolgate/oauth`).
    fn token_dir(&self) -> PathBuf {
        self.home.path().join("state/toolgate/oauth")
    }

    /// The key that encrypts them (`$XDG_CONFIG_HOME/toolgate/oauth.key`).
    fn key_file(&self) -> PathBuf {
        self.home.path().join("config/toolgate/oauth.key")
    }

    /// `toolgate ARGS --config <config>` in this home, logging everything (trace), so that the
    /// search for secrets covers the detailed log.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(toolgate_bin());
        command
            .args(args)
            .arg("--config")
            .arg(self.config())
            .env_remove("TOOLGATE_CONFIG")
            .env("HOME", self.home.path())
            .env("XDG_STATE_HOME", self.home.path().join("state"))
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            // The key in a file of the test's home, which the test reads the tokens with (a
            // desktop's keyring would keep it out of reach; keyring.rs tests that).
            .env("TOOLGATE_KEYRING", "off")
            .env("TOOLGATE_LOG", "trace")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// Runs `toolgate ARGS` to completion, keeping what it printed.
    async fn run(&mut self, args: &[&str]) -> Output {
        let output = tokio::time::timeout(COMMAND_TIMEOUT, self.command(args).output())
            .await
            .unwrap_or_else(|_| panic!("toolgate {args:?} finishes in time"))
            .expect("run toolgate");
        self.printed.push(String::from_utf8_lossy(&output.stdout).into_owned());
        self.printed.push(String::from_utf8_lossy(&output.stderr).into_owned());
        output
    }

    /// `toolgate call guarded__whoami`, which must succeed: what the server says of the token.
    async fn whoami(&mut self) -> Value {
        let output = self.run(&["call", &format!("{NAME}__whoami")]).await;
        let (out, err) = texts(&output);
        assert!(output.status.success(), "whoami failed: {out}\n{err}\n{}", self.server.stderr());
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"))
    }

    /// `toolgate call guarded__whoami`, which must fail saying to run `toolgate login guarded`.
    async fn assert_needs_login(&mut self, when: &str) {
        self.assert_call_needs_login("whoami", when).await;
    }

    /// `toolgate call guarded__TOOL`, which must fail saying to run `toolgate login guarded`.
    async fn assert_call_needs_login(&mut self, tool: &str, when: &str) {
        let output = self.run(&["call", &format!("{NAME}__{tool}")]).await;
        let (out, err) = texts(&output);
        assert_eq!(output.status.code(), Some(1), "{when}: {out}\n{err}");
        // What it answered, not its log (whose lines start with a time).
        let answered: Vec<&str> = out
            .lines()
            .chain(err.lines().filter(|l| !l.starts_with(|c: char| c.is_ascii_digit())))
            .collect();
        let wanted = format!("needs a login: run `toolgate login {NAME}`");
        assert!(
            answered.iter().any(|l| l.contains(&wanted)),
            "{when}: the answer says {wanted:?}: {answered:#?}\n{err}"
        );
    }

    /// `toolgate login guarded --no-browser`, with the browser scripted: the address it prints
    /// is followed through the authorization server's (automatic) sign-in as alice, and the
    /// redirect it ends with is opened, which is toolgate's loopback receiver. Its stdout.
    async fn login(&mut self) -> String {
        let mut child = self
            .command(&["login", NAME, "--no-browser"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn toolgate login");
        let mut stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let mut err = String::new();
        let address = tokio::time::timeout(COMMAND_TIMEOUT, async {
            while let Some(line) = lines.next_line().await.expect("read stderr") {
                err.push_str(&line);
                err.push('\n');
                if let Some(url) = line.strip_prefix("  ").filter(|l| l.starts_with("http")) {
                    return Some(url.trim().to_owned());
                }
            }
            None
        })
        .await
        .expect("toolgate login prints the address in time");
        let Some(address) = address else {
            let mut out = String::new();
            let _ = stdout.read_to_string(&mut out).await;
            panic!("toolgate login printed no address to open:\n{out}\n{err}");
        };
        assert!(
            err.contains("Open this address to sign in:"),
            "the address comes with what to do with it: {err}"
        );
        let redirect = self.provider.authorize(&address).await;
        assert!(redirect.starts_with("http://127.0.0.1:"), "to the loopback receiver: {redirect}");
        let parsed = reqwest::Url::parse(&redirect).expect("a URL");
        let code =
            parsed.query_pairs().find(|(name, _)| name == "code").map(|(_, v)| v.into_owned());
        self.codes.push(code.unwrap_or_else(|| panic!("with a code: {redirect}")));
        let page = reqwest::get(&redirect).await.expect("the receiver answers");
        assert!(page.status().is_success(), "the receiver takes the code: {}", page.status());
        let (mut out, mut rest) = (String::new(), String::new());
        let status = tokio::time::timeout(COMMAND_TIMEOUT, async {
            stdout.read_to_string(&mut out).await.expect("read stdout");
            while let Some(line) = lines.next_line().await.expect("read stderr") {
                rest.push_str(&line);
                rest.push('\n');
            }
            child.wait().await.expect("wait")
        })
        .await
        .expect("toolgate login finishes once the code is in");
        err.push_str(&rest);
        self.printed.push(out.clone());
        self.printed.push(err.clone());
        assert!(status.success(), "toolgate login failed: {out}\n{err}");
        out
    }

    /// The stored sign-in of `guarded`, read as toolgate reads it.
    fn record(&self) -> Option<toolgate_oauth::Record> {
        let vault = toolgate_oauth::Vault::open_with_key_file(&self.token_dir(), &self.key_file())
            .expect("the vault opens");
        vault.read(NAME).expect("the record reads")
    }

    /// The stored client id, access token and refresh token.
    fn stored_tokens(&self) -> (String, String, String) {
        let record = self.record().expect("a stored sign-in");
        let credentials = record.credentials.expect("credentials");
        let tokens = credentials.token_response.expect("a token response");
        let tokens = serde_json::to_value(&tokens).expect("serializes");
        let field =
            |name: &str| tokens[name].as_str().unwrap_or_else(|| panic!("{name}")).to_owned();
        let (access, refresh) = (field("access_token"), field("refresh_token"));
        (credentials.client_id, access, refresh)
    }

    /// Fails if any of `secrets` is in anything a toolgate process printed, in the audit log,
    /// or in a file of the token folder; checks that folder's and its files' modes.
    fn assert_nothing_leaked(&self, secrets: &[String]) {
        let mut places: Vec<(String, String)> = self
            .printed
            .iter()
            .enumerate()
            .map(|(i, text)| (format!("output {i} of a toolgate process"), text.clone()))
            .collect();
        let audit =
            std::fs::read_to_string(self.home.path().join("audit.jsonl")).expect("the audit log");
        assert!(audit.lines().count() > 0, "the audit log has events");
        places.push(("the audit log".to_owned(), audit));
        let dir = self.token_dir();
        let mode = |path: &Path| std::fs::metadata(path).expect("metadata").permissions().mode();
        assert_eq!(mode(&dir) & 0o777, 0o700, "{}", dir.display());
        for entry in std::fs::read_dir(&dir).expect("the token folder") {
            let path = entry.expect("entry").path();
            assert_eq!(mode(&path) & 0o777, 0o600, "{}", path.display());
            let bytes = std::fs::read(&path).expect("read");
            places.push((path.display().to_string(), String::from_utf8_lossy(&bytes).into_owned()));
        }
        let key = self.key_file();
        assert_eq!(mode(&key) & 0o777, 0o600, "{}", key.display());
        assert_eq!(mode(key.parent().expect("a folder")) & 0o777, 0o700, "the key's folder");
        for secret in secrets.iter().chain(&self.codes) {
            assert!(secret.len() >= 8, "a secret worth looking for: {secret:?}");
            for (place, text) in &places {
                assert!(
                    !text.contains(secret.as_str()),
                    "a secret ({}...) is in {place}:\n{text}",
                    &secret[..4]
                );
            }
        }
    }
}

/// stdout and stderr as text.
fn texts(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn upstream_login_once_then_every_process_uses_and_refreshes_the_tokens() {
    let mut scene = Scene::start(None).await;

    // Before a login, a call of the server's tool says what to do.
    scene.assert_needs_login("before any login").await;
    assert!(scene.server.tokens().await.is_empty(), "no token reached the server");
    let output = scene.run(&["servers", "--json"]).await;
    let rows: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {:?}", texts(&output)));
    let row = rows.as_array().and_then(|rows| rows.iter().find(|r| r["name"] == NAME));
    let row = row.unwrap_or_else(|| panic!("a row for {NAME}: {rows}"));
    let error = row["error"].as_str().unwrap_or_default();
    assert!(error.contains(&format!("toolgate login {NAME}")), "{row}\n{}", texts(&output).1);

    let said = scene.login().await;
    // The tokens are opaque and there is no ID token: toolgate cannot tell who signed in (the
    // JWT test below sees alice's name).
    assert!(said.starts_with(&format!("Signed in to {NAME} as ")), "{said}");

    // A new process, with the stored token: alice, with the one token the login got.
    let who = scene.whoami().await;
    assert_eq!(who["sub"], "alice", "{who}");
    assert_eq!(who["tokens_seen"], 1, "{who}");
    let again = scene.whoami().await;
    assert_eq!(again["token"], who["token"], "the same token while it is good: {again}");

    // The authorization server forgets the access token (as if it expired early): the next
    // call refreshes it, with no new login.
    let (_, first_access, first_refresh) = scene.stored_tokens();
    let seen = scene.server.tokens().await;
    assert_eq!(seen, std::slice::from_ref(&first_access), "the server saw the stored token");
    assert_eq!(scene.provider.destroy(&first_access).await.as_deref(), Some("AccessToken"));
    let refreshed = scene.whoami().await;
    assert_eq!(refreshed["sub"], "alice", "{refreshed}");
    assert_ne!(refreshed["token"], who["token"], "another token: {refreshed}");
    assert_eq!(refreshed["tokens_seen"], 2, "{refreshed}");
    let (client_id, access, refresh) = scene.stored_tokens();
    assert_ne!(access, first_access, "the refreshed token is stored");

    // A gateway serving others uses the stored tokens too.
    let served = serve_whoami(&mut scene).await;
    assert_eq!(served["sub"], "alice", "{served}");

    // The refresh token revoked at the authorization server (which revokes its grant, the
    // access token too): the next call needs a login again.
    scene.provider.revoke_as(&client_id, None, &refresh, "refresh_token").await;
    scene.assert_needs_login("after the refresh token was revoked").await;

    let mut secrets = scene.server.tokens().await;
    secrets.extend([first_access, first_refresh, access, refresh]);
    scene.assert_nothing_leaked(&secrets);
}

/// `toolgate serve` on HTTP with the scene's home; an MCP client calls `guarded__whoami`
/// through it. What the server said.
async fn serve_whoami(scene: &mut Scene) -> Value {
    let (failed, text) = serve_calls(scene, &["whoami"]).await.remove(0);
    assert!(!failed, "{text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// `toolgate serve` on HTTP with the scene's home; one MCP client calls `guarded__TOOL` for
/// each of `tools` in turn, in one session. Whether each failed, and its text.
async fn serve_calls(scene: &mut Scene, tools: &[&str]) -> Vec<(bool, String)> {
    let serving = Serving::start(scene).await;
    let mut results = Vec::new();
    for tool in tools {
        results.push(serving.call(tool).await);
    }
    serving.stop(scene).await;
    results
}

/// An MCP client that notes the gateway's `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct ToolsWatch(std::sync::Arc<tokio::sync::Notify>);

impl rmcp::ClientHandler for ToolsWatch {
    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<rmcp::RoleClient>) {
        self.0.notify_one();
    }
}

/// `toolgate serve` on HTTP with a scene's home, and an MCP client of it.
struct Serving {
    child: tokio::process::Child,
    client: rmcp::service::RunningService<rmcp::RoleClient, ToolsWatch>,
    tools_changed: ToolsWatch,
    /// Every line it logged so far.
    log: std::sync::Arc<tokio::sync::watch::Sender<Vec<String>>>,
    /// Reads its stderr into `log`, until it ends.
    reader: tokio::task::JoinHandle<()>,
}

impl Serving {
    async fn start(scene: &Scene) -> Serving {
        let mut child = scene
            .command(&["serve", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn toolgate serve");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let log = std::sync::Arc::new(tokio::sync::watch::Sender::new(Vec::<String>::new()));
        let sink = log.clone();
        let reader = tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.send_modify(|log| log.push(line));
            }
        });
        let serving = Serving::wait_for(&log, "serving MCP at ").await;
        let url = serving
            .and_then(|line| {
                let at = line.find("serving MCP at ")? + "serving MCP at ".len();
                line[at..].split_whitespace().next().map(str::to_owned)
            })
            .unwrap_or_else(|| {
                panic!("toolgate serve did not serve:\n{}", log.borrow().join("\n"))
            });
        let tools_changed = ToolsWatch::default();
        let transport = StreamableHttpClientTransport::from_uri(url);
        let client = tools_changed.clone().serve(transport).await.expect("connects");
        Serving { child, client, tools_changed, log, reader }
    }

    /// The first line containing `text`, once it is logged (`None` if the log ends first).
    async fn wait_for(log: &tokio::sync::watch::Sender<Vec<String>>, text: &str) -> Option<String> {
        let mut watch = log.subscribe();
        let found = tokio::time::timeout(
            COMMAND_TIMEOUT,
            watch.wait_for(|lines| lines.iter().any(|l| l.contains(text))),
        )
        .await
        .unwrap_or_else(|_| panic!("no log line with {text:?}"));
        found.ok()?.iter().find(|l| l.contains(text)).cloned()
    }

    /// Calls `guarded__TOOL`: whether it failed, and its text.
    async fn call(&self, tool: &str) -> (bool, String) {
        let call = self.client.call_tool(CallToolRequestParams::new(format!("{NAME}__{tool}")));
        match call.await {
            Ok(result) => (result.is_error == Some(true), first_text(&result)),
            Err(error) => (true, error.to_string()),
        }
    }

    /// Closes the session and stops toolgate (SIGTERM), keeping its log in `scene`.
    async fn stop(self, scene: &mut Scene) {
        let Serving { mut child, client, log, reader, .. } = self;
        client.cancel().await.expect("closes");
        let pid = nix::unistd::Pid::from_raw(child.id().expect("running") as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("signal");
        let status = tokio::time::timeout(COMMAND_TIMEOUT, child.wait())
            .await
            .expect("toolgate stops after SIGTERM")
            .expect("wait");
        // Its stderr ends when it exits.
        tokio::time::timeout(COMMAND_TIMEOUT, reader)
            .await
            .expect("its stderr ends")
            .expect("the reader");
        let text = log.borrow().join("\n");
        scene.printed.push(text.clone());
        assert!(status.success(), "toolgate serve: {status}\n{text}");
    }
}

#[tokio::test]
async fn upstream_login_names_the_account_and_refreshes_tokens_about_to_expire() {
    // JWT access tokens that live 2 seconds: every one is within rmcp's 30 seconds of its
    // expiry when next used, so each process refreshes before it sends one.
    let options = ProviderOptions { opaque: false, access_token_ttl: Some(Duration::from_secs(2)) };
    let mut scene = Scene::start_with(options, None).await;
    let said = scene.login().await;
    assert!(said.contains(&format!("Signed in to {NAME} as alice")), "{said}");
    let (_, login_access, login_refresh) = scene.stored_tokens();

    let who = scene.whoami().await;
    assert_eq!(who["sub"], "alice", "{who}");
    let (_, access, refresh) = scene.stored_tokens();
    assert_ne!(access, login_access, "a refreshed token is stored");
    assert_ne!(refresh, login_refresh, "the refresh token was rotated (a public client)");
    let seen = scene.server.tokens().await;
    assert!(!seen.contains(&login_access), "the token about to expire is not sent");
    let again = scene.whoami().await;
    assert_eq!(again["sub"], "alice", "{again}");
    assert_ne!(again["token"], who["token"], "refreshed again: {again}");
    // And within one session of a gateway serving others.
    let served = serve_calls(&mut scene, &["whoami", "whoami"]).await;
    let whos: Vec<Value> = served
        .iter()
        .map(|(failed, text)| {
            assert!(!failed, "{text}");
            serde_json::from_str(text).expect("JSON")
        })
        .collect();
    assert_eq!(whos[1]["sub"], "alice", "{}", whos[1]);
    assert_ne!(whos[0]["token"], whos[1]["token"], "refreshed within the session");

    let mut secrets = scene.server.tokens().await;
    let (_, last_access, last_refresh) = scene.stored_tokens();
    secrets.extend([login_access, login_refresh, access, refresh, last_access, last_refresh]);
    scene.assert_nothing_leaked(&secrets);
}

#[tokio::test]
async fn upstream_login_again_steps_up_to_the_scope_a_tool_needs() {
    let mut scene = Scene::start(None).await;
    let said = scene.login().await;
    assert!(said.contains("Scopes: mcp:tools"), "{said}");
    assert_eq!(scene.whoami().await["tokens_seen"], 1);

    // The server wants mcp:admin for this tool: a gateway with no person at hand says to log
    // in, and keeps the scope for the login.
    scene.assert_call_needs_login("admin", "a tool that needs more").await;
    let record = scene.record().expect("the sign-in is kept");
    assert!(record.wanted_scopes.contains(&"mcp:admin".to_owned()), "{:?}", record.wanted_scopes);
    assert_eq!(scene.whoami().await["sub"], "alice", "the other tools still work");
    // So in one session of a gateway: the refusal does not cost the session its upstream.
    let served = serve_calls(&mut scene, &["whoami", "admin", "whoami"]).await;
    assert!(!served[0].0, "{:?}", served[0]);
    assert!(served[1].0, "{:?}", served[1]);
    assert!(served[1].1.contains(&format!("toolgate login {NAME}")), "{:?}", served[1]);
    assert!(!served[2].0, "the other tools still work: {:?}", served[2]);

    let said = scene.login().await;
    assert!(said.contains("mcp:admin"), "the login asked for it: {said}");
    let output = scene.run(&["call", &format!("{NAME}__admin")]).await;
    let (out, err) = texts(&output);
    assert!(output.status.success(), "{out}\n{err}\n{}", scene.server.stderr());
    assert!(out.contains("mcp:admin"), "{out}");
    assert!(scene.record().expect("kept").wanted_scopes.is_empty(), "nothing left wanting");

    let mut secrets = scene.server.tokens().await;
    let (_, access, refresh) = scene.stored_tokens();
    secrets.extend([access, refresh]);
    scene.assert_nothing_leaked(&secrets);
}

#[tokio::test]
async fn upstream_login_reaches_a_gateway_that_is_already_running() {
    let mut scene = Scene::start(None).await;
    let serving = Serving::start(&scene).await;
    let (failed, text) = serving.call("whoami").await;
    assert!(failed && text.contains(&format!("toolgate login {NAME}")), "{text}");

    // The user signs in from another process; the running gateway tries the server again
    // (with backoff) and finds the tokens.
    scene.login().await;
    Serving::wait_for(&serving.log, "upstream connected").await.expect("it connects");
    tokio::time::timeout(COMMAND_TIMEOUT, serving.tools_changed.0.notified())
        .await
        .expect("its tools are listed");
    let (failed, text) = serving.call("whoami").await;
    assert!(!failed, "{text}");
    let who: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(who["sub"], "alice", "{who}");
    serving.stop(&mut scene).await;

    let mut secrets = scene.server.tokens().await;
    let (_, access, refresh) = scene.stored_tokens();
    secrets.extend([access, refresh]);
    scene.assert_nothing_leaked(&secrets);
}

#[tokio::test]
async fn upstream_login_is_not_needed_for_a_machine_token_about_to_expire() {
    // Machine tokens that live 2 seconds: each is within toolgate's minute of its expiry from
    // the start, so a gateway must get a new one, not send the old one again.
    let options = ProviderOptions { opaque: true, access_token_ttl: Some(Duration::from_secs(2)) };
    let mut scene = Scene::start_with(options, Some(&ci_acme())).await;
    let serving = Serving::start(&scene).await;
    let (failed, text) = serving.call("whoami").await;
    assert!(!failed, "{text}");
    // The authorization server forgets the last one (as if it had expired by now).
    let seen = scene.server.tokens().await;
    let last = seen.last().expect("a token");
    assert_eq!(scene.provider.destroy(last).await.as_deref(), Some("ClientCredentials"));
    let (failed, text) = serving.call("whoami").await;
    assert!(!failed, "a new token: {text}");
    let who: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(who["client_id"], CI_ACME.id, "{who}");
    assert!(who["tokens_seen"].as_u64() > Some(seen.len() as u64), "{who}");
    serving.stop(&mut scene).await;

    let mut secrets = scene.server.tokens().await;
    secrets.push(CI_ACME.secret.to_owned());
    scene.assert_nothing_leaked(&secrets);
}

/// The `oauth` line of the machine client [`CI_ACME`].
fn ci_acme() -> String {
    format!(
        "oauth = {{ flow = \"client_credentials\", client_id = {}, client_secret = {} }}",
        toml_str(CI_ACME.id),
        toml_str(CI_ACME.secret)
    )
}

#[tokio::test]
async fn upstream_login_logout_deletes_the_tokens_and_a_call_then_needs_a_login() {
    let mut scene = Scene::start(None).await;
    scene.login().await;
    let (_, access, refresh) = scene.stored_tokens();
    assert_eq!(scene.whoami().await["sub"], "alice");

    let output = scene.run(&["logout", NAME]).await;
    let (out, err) = texts(&output);
    assert!(output.status.success(), "{out}\n{err}");
    assert!(out.contains(&format!("Signed out of {NAME}")), "{out}");
    assert!(scene.record().is_none(), "the tokens are deleted");
    let files: Vec<_> = std::fs::read_dir(scene.token_dir()).expect("the folder").collect();
    assert!(files.is_empty(), "no token file is left: {files:?}");
    scene.assert_needs_login("after logout").await;

    // Logging in again works as the first time.
    scene.login().await;
    assert_eq!(scene.whoami().await["sub"], "alice");
    let (_, access_again, refresh_again) = scene.stored_tokens();
    let mut secrets = scene.server.tokens().await;
    secrets.extend([access, refresh, access_again, refresh_again]);
    scene.assert_nothing_leaked(&secrets);
}

#[tokio::test]
async fn upstream_login_is_not_needed_with_client_credentials() {
    let oauth = ci_acme();
    let mut scene = Scene::start(Some(&oauth)).await;
    let who = scene.whoami().await;
    assert_eq!(who["client_id"], CI_ACME.id, "{who}");
    let echo = scene.run(&["call", &format!("{NAME}__echo"), "text=hello"]).await;
    assert_eq!(texts(&echo).0.trim(), "hello", "{}", texts(&echo).1);

    // `toolgate login` has nothing to keep, but says the credentials work.
    let output = scene.run(&["login", NAME]).await;
    let (out, err) = texts(&output);
    assert!(output.status.success(), "{out}\n{err}");
    assert!(out.contains("client credentials of ci-acme work"), "{out}");

    let mut secrets = scene.server.tokens().await;
    assert!(!secrets.is_empty(), "the server saw the gateway's tokens");
    secrets.push(CI_ACME.secret.to_owned());
    scene.assert_nothing_leaked(&secrets);
}
