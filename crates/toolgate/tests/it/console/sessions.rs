//! The sessions page, and what an admin of one tenant may do in the console: two tenants'
//! callers hold sessions (and one a 2026-07-28 listen stream); the gateway's admin sees them
//! all, a tenant's admin only its own, and neither the pins nor a restart is theirs.

use rmcp::ServiceExt as _;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

use super::{ALICE, Browser, admin_url, csrf};
use crate::support::*;

async fn client_with_key(url: &str, key: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(key);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("client connects with its key")
}

/// Opens a 2026-07-28 `subscriptions/listen` stream as `key`'s holder; it stays open while the
/// answer is held.
async fn listen(url: &str, key: &str) -> reqwest::Response {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let request = json!({
        "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}, "_meta": meta},
    });
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(key)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(request.to_string())
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    response
}

/// The text between `<code>` and `</code>` in the sessions table's rows.
fn shown_ids(page: &str) -> Vec<String> {
    let table = page.split_once("<table id=\"sessions\">").expect("the table").1;
    let table = table.split_once("</table>").expect("its end").0;
    table
        .split("<th scope=\"row\"><code>")
        .skip(1)
        .map(|rest| rest.split('<').next().expect("an id").to_owned())
        .collect()
}

#[tokio::test]
async fn the_sessions_page_shows_each_tenants_admin_its_own_and_no_pins_or_restarts() {
    let keys: Vec<(&str, toolgate_auth::NewKey, &str)> = vec![
        ("dev", toolgate_auth::generate_key().unwrap(), "acme"),
        ("gdev", toolgate_auth::generate_key().unwrap(), "globex"),
        ("acme-admin", toolgate_auth::generate_key().unwrap(), "acme"),
    ];
    let lines: Vec<String> =
        keys.iter().map(|(name, key, tenant)| key.config_line(name, &[], Some(tenant))).collect();
    let config = ConfigDir::new(&format!(
        "{}\n[admin]\nlisten = \"127.0.0.1:0\"\ntokens = {{ alice = \"{ALICE}\" }}\n\n\
         [tenants.acme]\nservers = [\"fx\"]\n[tenants.globex]\nservers = [\"fx\"]\n\n\
         [auth.roles]\nadmins = [\"key:*-admin\"]\n\n[auth.api_keys]\n{}\n",
        fixture_server("fx", "stdio", None),
        lines.join("\n"),
    ));
    let key = |name: &str| keys.iter().find(|k| k.0 == name).expect("a key").1.key.clone();
    let gateway = HttpGateway::start(&config.path()).await;
    let admin = admin_url(&gateway).await;
    assert_eq!(Browser::new(&admin).get("/console/sessions").await.status(), 303, "no session");

    let dev = client_with_key(&gateway.url, &key("dev")).await;
    let gdev = client_with_key(&gateway.url, &key("gdev")).await;
    let stream = listen(&gateway.url, &key("dev")).await;

    let everyone = Browser::sign_in(&admin, ALICE).await;
    let page = everyone.page("/console/sessions").await;
    assert!(page.contains("href=\"/console/sessions\""), "in the navigation: {page}");
    assert!(page.contains("2 sessions open"), "{page}");
    assert!(page.contains("key:dev@acme") && page.contains("key:gdev@globex"), "{page}");
    assert!(page.contains(">streamable-http<") && page.contains(">2025-"), "{page}");
    let ids = shown_ids(&page);
    assert_eq!(ids.len(), 2, "{page}");
    assert!(ids.iter().all(|id| id.len() == 8), "ids shortened: {ids:?}");
    assert!(page.contains("1 subscriptions/listen stream open"), "{page}");
    assert!(page.contains(">2026-07-28<"), "the stream's protocol: {page}");

    let tenant = Browser::sign_in(&admin, &key("acme-admin")).await;
    let page = tenant.page("/console/sessions").await;
    assert!(page.contains("1 session open"), "{page}");
    assert!(page.contains("key:dev@acme") && !page.contains("globex"), "acme's only: {page}");
    assert!(page.contains("1 subscriptions/listen stream open"), "{page}");
    assert!(!page.contains("href=\"/console/pins\""), "not in its navigation: {page}");
    let token = csrf(&page);
    assert_eq!(tenant.get("/console/pins").await.status(), 403);
    assert_eq!(tenant.get("/console/pins/fx__echo").await.status(), 403);
    assert_eq!(tenant.get("/console/servers").await.status(), 403);
    let approve = tenant
        .post("/console/pins/fx__echo/approve", &[("csrf", &token), ("digest", "sha256:0")], true)
        .await;
    assert_eq!(approve.status(), 403, "a tenant's admin approves no contract");
    let restart = tenant.post("/console/servers/fx/restart", &[("csrf", &token)], true).await;
    assert_eq!(restart.status(), 403, "nor restarts a server every tenant uses");
    let api = reqwest::Client::new()
        .post(format!("{admin}/servers/fx/restart"))
        .bearer_auth(key("acme-admin"))
        .send()
        .await
        .expect("answered");
    assert_eq!(api.status(), 403, "over the admin API neither");

    // Sessions that end leave the page.
    drop(stream);
    gdev.cancel().await.expect("closes");
    let page = everyone.page("/console/sessions").await;
    assert!(!page.contains("globex"), "{page}");
    dev.cancel().await.expect("closes");
    assert!(gateway.terminate().await.success());
}
