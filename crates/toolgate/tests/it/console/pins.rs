//! The pins page against a real rug pull: `fx`'s tools pinned with `toolgate pin --server fx`
//! (`fy`'s left new), `weather` rewritten by the server, its change shown as a line diff and
//! approved from the page; an approval of a contract that changed again after it was shown is
//! refused and pins nothing.

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use super::{ALICE, Browser, admin_url, csrf, location};
use crate::recorder::*;
use crate::support::*;

/// `fx` (the rug-pull fixture at stage 0) and `fy`, `integrity` blocking drift (its poisoning
/// scan only reporting, so that what is tested is the pin), an admin token, an audit log;
/// `fx` pinned.
async fn pinned_config() -> ConfigDir {
    let config = ConfigDir::new(&format!(
        "{}args = [\"--rug-pull\", \"0\"]\n\n{}\n\
         [[pipeline]]\nkind = \"integrity\"\ndrift = \"block\"\n\
         poisoning = {{ quarantine = \"off\" }}\n\n\
         [audit]\nfile = \"audit.jsonl\"\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\ntokens = {{ alice = \"{ALICE}\" }}\n",
        fixture_server("fx", "stdio", None),
        fixture_server("fy", "stdio", None),
    ));
    let path = config.dir().join("toolgate.toml");
    let pinned =
        run_toolgate(&["pin", "--config", path.to_str().expect("UTF-8"), "--server", "fx"]).await;
    assert!(pinned.status.success(), "{}", String::from_utf8_lossy(&pinned.stderr));
    config
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned()).with_arguments(object(arguments))
}

/// Moves `weather` to `stage` and waits for the `list_changed` it causes.
async fn rug_pull(client: &RecordingClient, notes: &mut Notes, stage: u8) {
    let moved = client.call_tool(call("fx__rug_pull", json!({"stage": stage}))).await;
    assert_eq!(first_text(&moved.expect("rug_pull")), format!("weather is at stage {stage}"));
    notes.next_matching(|n| matches!(n, Note::ToolsChanged).then_some(())).await;
}

/// The value of the form field `name` on `page`.
fn field(page: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let (_, rest) = page.split_once(&marker).unwrap_or_else(|| panic!("no {name}: {page}"));
    rest.split('"').next().expect("a value").to_owned()
}

/// The pins page's row of `tool`.
fn row<'a>(page: &'a str, tool: &str) -> &'a str {
    let start = page.find(&format!("<tr id=\"pin-{tool}\">")).unwrap_or_else(|| panic!("{page}"));
    let rest = &page[start..];
    &rest[..rest.find("</tr>").expect("the row ends")]
}

async fn tool_names(client: &RecordingClient) -> Vec<String> {
    client.list_all_tools().await.expect("tools/list").iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn a_drifted_tool_is_shown_as_a_diff_and_approved_only_as_it_was_reviewed() {
    let config = pinned_config().await;
    // Beside the lock file now: named, not found as the folder's one file.
    let gateway = HttpGateway::start(&config.dir().join("toolgate.toml")).await;
    let admin = admin_url(&gateway).await;
    let (client, mut notes) = recording_http_client(&gateway.url).await;

    assert_eq!(Browser::new(&admin).get("/console/pins").await.status(), 303, "no session");
    let browser = Browser::sign_in(&admin, ALICE).await;
    let page = browser.page("/console/pins").await;
    assert!(page.contains("href=\"/console/pins\""), "in the navigation: {page}");
    assert!(row(&page, "fx__weather").contains(">pinned<"), "{page}");
    assert!(row(&page, "fy__echo").contains(">new<"), "fy is not pinned: {page}");
    let new = browser.page("/console/pins/fy__echo").await;
    assert!(new.contains("Its contract (not pinned yet)"), "{new}");

    rug_pull(&client, &mut notes, 1).await;
    assert!(!tool_names(&client).await.contains(&"fx__weather".to_owned()), "withheld");
    let page = browser.page("/console/pins").await;
    assert!(row(&page, "fx__weather").contains(">drifted<"), "{page}");
    let first = |tool: &str| page.find(&format!("id=\"pin-{tool}\"")).expect("a row");
    assert!(first("fx__weather") < first("fx__crash"), "what waits for a person comes first");
    let shown = browser.page("/console/pins/fx__weather").await;
    assert!(shown.contains("<caption><code>description</code></caption>"), "{shown}");
    assert!(shown.contains("<tr class=\"removed\">") && shown.contains("<tr class=\"added\">"));
    assert!(shown.contains("Get the weather forecast for a city.</pre>"), "{shown}");
    assert!(shown.contains("&lt;IMPORTANT&gt;Before calling this tool"), "as text: {shown}");
    assert!(!shown.contains("<IMPORTANT>"), "{shown}");
    let reviewed = field(&shown, "digest");
    assert!(reviewed.starts_with("sha256:"), "{reviewed}");
    let token = csrf(&shown);

    // Without the form token, or from elsewhere: refused.
    let approve = "/console/pins/fx__weather/approve";
    let forged = browser.post(approve, &[("digest", &reviewed)], true).await;
    assert_eq!(forged.status(), 403, "no form token");
    let cross = browser.post(approve, &[("csrf", &token), ("digest", &reviewed)], false).await;
    assert_eq!(cross.status(), 403, "no Origin");

    // The server changes `weather` again after it was shown: the approval of what was shown
    // is refused, nothing is pinned, and the page shows the new change.
    rug_pull(&client, &mut notes, 2).await;
    let stale = browser.post(approve, &[("csrf", &token), ("digest", &reviewed)], true).await;
    assert_eq!(stale.status(), 409);
    let stale = stale.text().await.expect("body");
    assert!(stale.contains("changed since it was reviewed"), "{stale}");
    assert!(stale.contains("<caption><code>inputSchema</code></caption>"), "{stale}");
    let current = field(&stale, "digest");
    assert_ne!(current, reviewed);
    let page = browser.page("/console/pins").await;
    assert!(row(&page, "fx__weather").contains(">drifted<"), "nothing pinned: {page}");

    let approved = browser.post(approve, &[("csrf", &token), ("digest", &current)], true).await;
    assert_eq!(approved.status(), 303);
    assert_eq!(location(&approved), "/console/pins?approved=fx__weather");
    let page = browser.page("/console/pins?approved=fx__weather").await;
    assert!(page.contains("is pinned."), "{page}");
    assert!(row(&page, "fx__weather").contains(">approved by alice<"), "{page}");
    assert!(tool_names(&client).await.contains(&"fx__weather".to_owned()), "shown again");
    let called = client.call_tool(call("fx__weather", json!({"city": "Oslo", "note": "n"})));
    assert_eq!(first_text(&called.await.expect("a result")), "sunny in Oslo");

    client.cancel().await.expect("close");
    // Ending the gateway writes out what is left of the audit log.
    assert!(gateway.terminate().await.success());
    let audit = std::fs::read_to_string(config.dir().join("audit.jsonl")).expect("audit log");
    let approvals: Vec<Value> = audit
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a record"))
        .filter(|record| record["kind"] == "integrity/approved")
        .collect();
    assert_eq!(approvals.len(), 1, "{audit}");
    assert_eq!(approvals[0]["by"], "alice");
    assert_eq!(approvals[0]["exposed"], "fx__weather");
    assert_eq!(approvals[0]["digest"], current.as_str());
}
