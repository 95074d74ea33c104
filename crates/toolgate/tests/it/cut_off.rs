//! A server the policy cuts off from prompts and resources is cut off everywhere they show:
//! over stdio and HTTP, with two fixture servers (`cut` and `open`: prompts, resources,
//! templates and completions), `default = "deny"` and rules denying `prompts/*` and
//! `resources/*` for `cut`. `cut`'s prompts, resources and templates are not listed and
//! completions about them are refused; `open`'s are all there.

use rmcp::model::{ArgumentInfo, CompleteRequestParams, Reference};

use crate::support::*;

fn config() -> ConfigDir {
    ConfigDir::new(&format!(
        "{}\n{}\n[[pipeline]]\nkind = \"policy\"\ndefault = \"deny\"\n\
         rules = [\n\
           {{ events = [\"prompts/*\"], servers = [\"cut\"], decision = \"deny\", reason = \"no prompts from cut\" }},\n\
           {{ events = [\"resources/*\"], servers = [\"cut\"], decision = \"deny\", reason = \"no reading cut\" }},\n\
         ]\n",
        fixture_server("cut", "stdio", None),
        fixture_server("open", "stdio", None),
    ))
}

fn completion(reference: Reference, argument: &str, value: &str) -> CompleteRequestParams {
    CompleteRequestParams::new(reference, ArgumentInfo::new(argument, value))
}

async fn is_cut_off_everywhere(client: Client) {
    let prompts = client.list_all_prompts().await.expect("prompts/list");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(names.iter().all(|n| !n.starts_with("cut__")), "{names:?}");
    assert!(names.contains(&"open__test_prompt_with_arguments"), "{names:?}");

    // Both servers list the same URIs, so each is exposed under `toolgate://<server>/`.
    let resources = client.list_all_resources().await.expect("resources/list");
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert!(uris.iter().all(|u| !u.starts_with("toolgate://cut/")), "{uris:?}");
    assert!(uris.iter().any(|u| u.starts_with("toolgate://open/")), "{uris:?}");
    let templates = client.list_all_resource_templates().await.expect("templates/list");
    let templates: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(templates, ["toolgate://open/test%3A%2F%2Ftemplate%2F{id}%2Fdata"]);

    let open = client
        .complete(completion(
            Reference::for_prompt("open__test_prompt_with_arguments"),
            "arg1",
            "pa",
        ))
        .await
        .expect("completions of open's prompt");
    assert_eq!(open.completion.values, ["paris", "park", "party"]);
    let refused = client
        .complete(completion(
            Reference::for_prompt("cut__test_prompt_with_arguments"),
            "arg1",
            "pa",
        ))
        .await
        .expect_err("completions of cut's prompt are refused");
    let message = refused.to_string();
    assert!(message.contains("refused by policy"), "{message}");
    assert!(message.contains("no prompts from cut"), "{message}");
    let template = Reference::for_resource("toolgate://cut/test%3A%2F%2Ftemplate%2F{id}%2Fdata");
    let refused = client
        .complete(completion(template, "id", "1"))
        .await
        .expect_err("completions of cut's template are refused");
    assert!(refused.to_string().contains("no reading cut"), "{refused}");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_cut_off_server_is_cut_off_everywhere_over_stdio() {
    let config = config();
    is_cut_off_everywhere(stdio_client(&config.path()).await).await;
}

#[tokio::test]
async fn a_cut_off_server_is_cut_off_everywhere_over_http() {
    let config = config();
    let gateway = HttpGateway::start(&config.path()).await;
    is_cut_off_everywhere(http_client(&gateway.url).await).await;
    assert!(gateway.terminate().await.success());
}
