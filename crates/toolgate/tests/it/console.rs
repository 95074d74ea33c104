//! The web console over plain HTTP: log in with an admin token, see the servers, approve one
//! held call and deny another from the approvals page (the client's calls complete), and read
//! the audit page; forms without the session's token or from another origin are refused.
//! Pins (`pins.rs`), sessions and what a tenant's admin may do (`sessions.rs`) and restarting
//! a server (`restart.rs`) have their own files.

mod pins;
mod restart;
mod sessions;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::support::*;

pub(crate) const ALICE: &str = "alice-token-0123456789";

/// A gateway whose `fx__env_get` calls are held for an approver over the admin listener.
pub(crate) fn console_config() -> String {
    console_config_with("", "")
}

/// [`console_config`] with more lines for `fx` (`args`) and more pipeline entries.
fn console_config_with(fx: &str, pipeline: &str) -> String {
    format!(
        "{}{fx}\n[[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
         rules = [{{ tools = [\"env_get\"], decision = \"ask\", reason = \"it reads the <environment>\" }}]\n\n\
         [[pipeline]]\nkind = \"approval\"\nvia = \"external\"\n\n{pipeline}\
         [audit]\nfile = \"audit.jsonl\"\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntokens = {{ alice = \"{ALICE}\" }}\n",
        fixture_server("fx", "stdio", None),
    )
}

/// The admin listener's base URL, from the gateway's log.
pub(crate) async fn admin_url(gateway: &HttpGateway) -> String {
    let line = gateway.wait_for_log(&["admin API at http://"]).await;
    let at = line.find("http://").expect("url");
    line[at..].split_whitespace().next().expect("url").to_owned()
}

/// A browser-like client: keeps the session cookie by hand, follows no redirect.
pub(crate) struct Browser {
    http: reqwest::Client,
    base: String,
    cookie: Option<String>,
}

impl Browser {
    pub(crate) fn new(base: &str) -> Browser {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        Browser { http, base: base.to_owned(), cookie: None }
    }

    /// Signs in with `token` and keeps the session's cookie.
    pub(crate) async fn sign_in(base: &str, token: &str) -> Browser {
        let mut browser = Browser::new(base);
        let response = browser.post("/console/login", &[("token", token)], true).await;
        assert_eq!(response.status(), 303, "signing in");
        let set = response.headers()["set-cookie"].to_str().expect("cookie").to_owned();
        browser.cookie = Some(set.split(';').next().expect("pair").to_owned());
        browser
    }

    pub(crate) async fn get(&self, path: &str) -> reqwest::Response {
        let mut request = self.http.get(format!("{}{path}", self.base));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        request.send().await.expect("GET")
    }

    pub(crate) async fn page(&self, path: &str) -> String {
        let response = self.get(path).await;
        assert_eq!(response.status(), 200, "GET {path}");
        response.text().await.expect("body")
    }

    pub(crate) async fn post(
        &self,
        path: &str,
        form: &[(&str, &str)],
        origin: bool,
    ) -> reqwest::Response {
        let mut request = self.http.post(format!("{}{path}", self.base)).form(form);
        if origin {
            request = request.header("origin", &self.base);
        }
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        request.send().await.expect("POST")
    }
}

pub(crate) fn location(response: &reqwest::Response) -> &str {
    response.headers()["location"].to_str().expect("location")
}

/// The session's form token, from a page.
pub(crate) fn csrf(page: &str) -> String {
    let (_, rest) = page.split_once("name=\"csrf\" value=\"").expect("a form token");
    rest.split('"').next().expect("token").to_owned()
}

async fn call(client: &Client, arguments: Value) -> rmcp::model::CallToolResult {
    client
        .peer()
        .call_tool(
            CallToolRequestParams::new("fx__env_get".to_owned()).with_arguments(object(arguments)),
        )
        .await
        .expect("a tool result")
}

#[tokio::test]
async fn an_operator_logs_in_sees_the_servers_and_decides_held_calls() {
    let config = ConfigDir::new(&console_config());
    let gateway = HttpGateway::start(&config.path()).await;
    let admin = admin_url(&gateway).await;
    let mut browser = Browser::new(&admin);

    // Without a session every page leads to the login form.
    let response = browser.get("/console/servers").await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/console/login");
    let login = browser.page("/console/login").await;
    assert!(login.contains("<label for=\"token\">"), "{login}");

    let wrong = browser.post("/console/login", &[("token", "not-a-token")], true).await;
    assert_eq!(wrong.status(), 401);
    let elsewhere = browser.post("/console/login", &[("token", ALICE)], false).await;
    assert_eq!(elsewhere.status(), 403, "a login form posted without an Origin is refused");
    let response = browser.post("/console/login", &[("token", ALICE)], true).await;
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/console/servers");
    let set = response.headers()["set-cookie"].to_str().expect("cookie").to_owned();
    assert!(set.contains("HttpOnly; SameSite=Strict; Path=/console"), "{set}");
    assert!(!set.contains("Secure"), "plain HTTP: {set}");
    browser.cookie = Some(set.split(';').next().expect("pair").to_owned());

    let response = browser.get("/console/servers").await;
    assert_eq!(response.status(), 200);
    let csp = response.headers()["content-security-policy"].to_str().expect("csp");
    assert!(csp.contains("default-src 'self'") && csp.contains("script-src 'self'"), "{csp}");
    assert_eq!(response.headers()["x-frame-options"], "DENY");
    assert_eq!(response.headers()["referrer-policy"], "same-origin");
    let servers = response.text().await.expect("body");
    assert!(servers.contains("<th scope=\"row\">fx</th>"), "{servers}");
    assert!(servers.contains(">connected<") && servers.contains(">stdio<"), "{servers}");
    assert!(servers.contains("Signed in as <strong>alice</strong>"), "{servers}");

    let inventory = browser.page("/console/inventory?q=env").await;
    assert!(inventory.contains("fx__env_get") && !inventory.contains("fx__echo"), "{inventory}");

    // Two held calls: one approved, one (with markup in its arguments) denied.
    let first = http_client(&gateway.url).await;
    let held = tokio::spawn(async move { call(&first, json!({"name": "HOME"})).await });
    gateway.wait_for_log(&["call a1 ", "is held for approval"]).await;
    let second = http_client(&gateway.url).await;
    let markup = "<script>alert(1)</script>";
    let refused = tokio::spawn(async move { call(&second, json!({"name": markup})).await });
    gateway.wait_for_log(&["call a2 ", "is held for approval"]).await;

    let page = browser.page("/console/approvals").await;
    assert!(page.contains("<tr id=\"call-a1\">") && page.contains("<tr id=\"call-a2\">"), "{page}");
    assert!(page.contains("it reads the &lt;environment&gt;"), "{page}");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{page}");
    assert!(!page.contains(markup), "arguments render as text: {page}");
    let token = csrf(&page);

    let forged = browser.post("/console/approvals/a1", &[("decision", "allow")], true).await;
    assert_eq!(forged.status(), 403, "no form token");
    let cross = browser
        .post("/console/approvals/a1", &[("csrf", &token), ("decision", "allow")], false)
        .await;
    assert_eq!(cross.status(), 403, "no Origin");

    let allowed = browser
        .post("/console/approvals/a1", &[("csrf", &token), ("decision", "allow")], true)
        .await;
    assert_eq!(allowed.status(), 303);
    assert_eq!(location(&allowed), "/console/approvals?id=a1&decision=allow");
    let result = held.await.expect("the call ends");
    assert_ne!(result.is_error, Some(true), "{result:?}");

    let denied = browser
        .post(
            "/console/approvals/a2",
            &[("csrf", &token), ("decision", "deny"), ("reason", "not today")],
            true,
        )
        .await;
    assert_eq!(denied.status(), 303);
    let result = refused.await.expect("the call ends");
    assert_eq!(result.is_error, Some(true));
    let text = first_text(&result);
    assert!(text.contains("alice did not approve this call: not today"), "{text}");
    let page = browser.page("/console/approvals?id=a2&decision=deny").await;
    assert!(page.contains("Call a2 denied.") && page.contains("No call is waiting"), "{page}");

    // Deciding again: the call is gone, said on the page.
    let again = browser
        .post("/console/approvals/a2", &[("csrf", &token), ("decision", "allow")], true)
        .await;
    assert_eq!(again.status(), 404);

    let audit = browser.page("/console/audit?q=approval").await;
    assert!(audit.contains("Chain verified:"), "{audit}");
    assert!(audit.contains("approval/"), "{audit}");

    let events = browser.page("/console/events?pattern=tools/*").await;
    assert!(events.contains("data-pattern=\"tools/*\""), "{events}");
    let stream = browser.get("/console/events/stream?pattern=tools/*").await;
    assert_eq!(stream.status(), 200);
    assert!(stream.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    drop(stream);

    let out = browser.post("/console/logout", &[("csrf", &token)], true).await;
    assert_eq!(out.status(), 303);
    let response = browser.get("/console/servers").await;
    assert_eq!(response.status(), 303, "the session is closed");
    assert!(gateway.terminate().await.success());
}

/// The console in headless Chromium (Debian's), driven by playwright-core: sign in, approve one
/// held call and deny another from the approvals page, the clients' calls completing, open the
/// diff of a tool the server changed and approve its contract (with the keyboard), open the
/// sessions page, and axe-core finding nothing serious on any page. Screenshots are kept under
/// `target/console-screenshots/`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_works_in_a_browser_and_passes_an_accessibility_check() {
    let Some(chromium) = crate::deps::chromium() else { return };
    // `fx` pinned, then its `weather` changed by the server (the rug-pull fixture).
    let config = ConfigDir::new(&console_config_with(
        "args = [\"--rug-pull\", \"0\"]\n",
        "[[pipeline]]\nkind = \"integrity\"\npoisoning = { quarantine = \"off\" }\n\n",
    ));
    let path = config.dir().join("toolgate.toml");
    let pinned = run_toolgate(&["pin", "--config", path.to_str().expect("UTF-8")]).await;
    assert!(pinned.status.success(), "{}", String::from_utf8_lossy(&pinned.stderr));
    let gateway = HttpGateway::start(&path).await;
    let admin = admin_url(&gateway).await;
    let (puller, mut notes) = crate::recorder::recording_http_client(&gateway.url).await;
    let moved = puller
        .call_tool(
            CallToolRequestParams::new("fx__rug_pull").with_arguments(object(json!({"stage": 1}))),
        )
        .await
        .expect("rug_pull");
    assert_eq!(first_text(&moved), "weather is at stage 1");
    notes.next_matching(|n| matches!(n, crate::recorder::Note::ToolsChanged).then_some(())).await;
    let first = http_client(&gateway.url).await;
    let allowed = tokio::spawn(async move { call(&first, json!({"name": "ALLOW_ME"})).await });
    let second = http_client(&gateway.url).await;
    let denied = tokio::spawn(async move { call(&second, json!({"name": "DENY_ME"})).await });

    let artefacts =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/console-screenshots");
    std::fs::create_dir_all(&artefacts).expect("screenshot folder");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/clients/console_browser.mjs");
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(180),
        tokio::process::Command::new(crate::deps::node())
            .arg(&script)
            .arg(&chromium)
            .arg(&admin)
            .arg(ALICE)
            .arg(&artefacts)
            .current_dir(crate::deps::npm_dir())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the browser finishes in time")
    .expect("node runs");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "the browser script failed:\n{printed}");
    let report: Value = serde_json::from_str(
        printed.lines().rfind(|line| line.starts_with('{')).expect("a report"),
    )
    .unwrap_or_else(|e| panic!("{e}:\n{printed}"));
    for (page, found) in report["violations"].as_object().expect("violations") {
        assert_eq!(found, &json!([]), "axe-core on {page}: {report}");
    }
    assert_eq!(report["violations"].as_object().map(|v| v.len()), Some(9), "{report}");
    assert!(report["audit"].as_str().unwrap_or_default().contains("verified"), "{report}");
    let pin = report["pinState"].as_str().unwrap_or_default();
    assert!(pin.contains("approved by alice"), "{report}");
    let sessions = report["sessions"].as_str().unwrap_or_default();
    assert!(sessions.ends_with(" open"), "{report}");
    let names = puller.list_all_tools().await.expect("tools/list");
    assert!(names.iter().any(|t| t.name == "fx__weather"), "approved: shown again");

    let allowed = allowed.await.expect("joined");
    assert_ne!(allowed.is_error, Some(true), "the approved call ran: {allowed:?}");
    let denied = denied.await.expect("joined");
    assert_eq!(denied.is_error, Some(true), "{denied:?}");
    assert!(first_text(&denied).contains("not from the browser"), "{denied:?}");
    let pages = [
        "login",
        "servers",
        "approvals",
        "pins",
        "pin-diff",
        "sessions",
        "inventory",
        "events",
        "audit",
    ];
    for page in pages {
        assert!(artefacts.join(format!("{page}.png")).exists(), "a screenshot of {page}");
    }
    puller.cancel().await.expect("close");
    gateway.terminate().await;
}
