//! The other built-ins through the real gateway: an alias with renamed arguments, argument
//! validation, a per-tool timeout from `limits`, and a webhook receiving the call's events.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::support::*;

/// A webhook receiver on 127.0.0.1: every body POSTed arrives on the channel.
pub(crate) async fn webhook() -> (String, mpsc::UnboundedReceiver<Value>) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let sender = Arc::new(Mutex::new(sender));
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
            let sender = sender.clone();
            async move {
                let _ = sender.lock().unwrap().send(body);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, receiver)
}

async fn call(client: &Client, tool: &str, args: Value) -> rmcp::model::CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(object(args)))
        .await
        .expect("a tool result")
}

#[tokio::test]
async fn aliases_validation_limits_and_webhooks_work_together() {
    let (hook, mut received) = webhook().await;
    let config = ConfigDir::new(&format!(
        "{}\n\
         [[pipeline]]\nkind = \"arg_map\"\n\
         map.\"fx__echo\" = {{ alias = \"say\", rename = {{ message = \"text\" }} }}\n\n\
         [[pipeline]]\nkind = \"validate_args\"\n\n\
         [[pipeline]]\nkind = \"limits\"\n\
         tool.\"fx__slow\" = {{ timeout = \"300ms\" }}\n\n\
         [audit]\n[[audit.webhook]]\nurl = {}\nevents = [\"tools/call/*\"]\n",
        fixture_server("fx", "stdio", None),
        toml_str(&hook),
    ));
    let gateway = HttpGateway::start(&config.path()).await;
    let client = http_client(&gateway.url).await;

    let tools = client.list_all_tools().await.expect("tools/list");
    let say = tools.iter().find(|t| t.name == "say").expect("the alias is listed");
    let properties = say.input_schema.get("properties").expect("properties");
    assert!(properties.get("message").is_some(), "the caller sees its own names: {properties:?}");
    assert!(tools.iter().any(|t| t.name == "fx__echo"), "the original stays listed");

    let said = call(&client, "say", json!({"message": "hello"})).await;
    assert_eq!(first_text(&said), "hello", "called by alias, argument renamed");

    let invalid = call(&client, "fx__echo", json!({"text": 5})).await;
    assert_eq!(invalid.is_error, Some(true));
    let text = first_text(&invalid);
    assert!(text.starts_with("refused by validate_args:") && text.contains("/text"), "{text}");

    let slow = call(&client, "fx__slow", json!({"steps": 1, "step_ms": 10_000})).await;
    assert_eq!(slow.is_error, Some(true));
    let text = first_text(&slow);
    assert!(text.contains("300ms"), "the error names the limit from `limits`: {text}");

    // The webhook got the calls' events, in order.
    let mut kinds = Vec::new();
    while kinds.len() < 6 {
        let event = tokio::time::timeout(Duration::from_secs(30), received.recv())
            .await
            .expect("webhook events in time")
            .expect("the receiver is up");
        kinds.push((event["kind"].as_str().unwrap_or("").to_owned(), event["exposed"].clone()));
    }
    let expected = [
        ("tools/call/started", "say"),
        ("tools/call/finished", "say"),
        ("tools/call/started", "fx__echo"),
        ("tools/call/denied", "fx__echo"),
        ("tools/call/started", "fx__slow"),
        ("tools/call/timeout", "fx__slow"),
    ];
    let got: Vec<(&str, &str)> =
        kinds.iter().map(|(k, e)| (k.as_str(), e.as_str().unwrap_or(""))).collect();
    assert_eq!(got, expected);
    client.cancel().await.expect("close");
    assert!(gateway.terminate().await.success());
}
