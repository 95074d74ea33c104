//! Tests of the inventory: prefixes, collisions, stable names and resource routing.

use super::*;

fn tool(name: &str) -> mcp::Tool {
    mcp::Tool::new(name.to_owned(), "a tool", Arc::new(serde_json::Map::new()))
}

fn prompt(name: &str) -> mcp::Prompt {
    mcp::Prompt::new(name, Some("a prompt"), None)
}

fn resource(uri: &str) -> mcp::Resource {
    mcp::Resource::new(uri, uri)
}

fn template(uri_template: &str) -> mcp::ResourceTemplate {
    mcp::ResourceTemplate::new(uri_template, uri_template)
}

fn catalog(tools: &[&str]) -> Catalog {
    Catalog { tools: tools.iter().map(|t| tool(t)).collect(), ..Catalog::default() }
}

fn names(inventory: &Inventory) -> Vec<&str> {
    inventory.tools().iter().map(|t| t.name.as_ref()).collect()
}

const ALL: &ToolFilter = &ToolFilter { allow: Vec::new(), deny: Vec::new() };

fn part<'a>(upstream: &'a str, prefix: &'a str, catalog: &'a Catalog) -> Contribution<'a> {
    Contribution { upstream, prefix, filter: ALL, catalog }
}

#[test]
fn tools_are_prefixed_and_routed_back() {
    let a = catalog(&["search", "read.file"]);
    let inventory = Inventory::build([part("github", "gh", &a)]);
    assert_eq!(names(&inventory), ["gh__read_file", "gh__search"]);
    let route = inventory.tool_route("gh__read_file").expect("routed");
    assert_eq!((&*route.upstream, route.original.as_str()), ("github", "read.file"));
    assert!(inventory.tool_route("read.file").is_none());
}

#[test]
fn passthrough_keeps_names() {
    let a = catalog(&["test_simple_text"]);
    let inventory = Inventory::build([part("fixture", "", &a)]);
    assert_eq!(names(&inventory), ["test_simple_text"]);
}

#[test]
fn names_do_not_change_when_other_servers_come_and_go() {
    let a = catalog(&["echo"]);
    let b = catalog(&["echo", "other"]);
    let alone = Inventory::build([part("a", "a", &a)]);
    let together = Inventory::build([part("b", "b", &b), part("a", "a", &a)]);
    assert_eq!(names(&alone), ["a__echo"]);
    assert_eq!(names(&together), ["a__echo", "b__echo", "b__other"]);
    assert!(together.collisions().is_empty());
}

#[test]
fn collisions_are_reported_and_both_stay_reachable() {
    let a = catalog(&["echo"]);
    let b = catalog(&["echo"]);
    let inventory = Inventory::build([part("zeta", "", &b), part("alpha", "", &a)]);
    let [collision] = inventory.collisions() else { panic!("one collision expected") };
    assert_eq!(collision.exposed, "echo");
    assert_eq!(&*collision.kept.upstream, "alpha");
    assert_eq!(&*collision.other.upstream, "zeta");
    let renamed = collision.renamed_to.clone().expect("the other is renamed");
    assert!(renamed.starts_with("echo_"), "{renamed}");
    assert_eq!(&*inventory.tool_route("echo").expect("kept").upstream, "alpha");
    assert_eq!(&*inventory.tool_route(&renamed).expect("renamed").upstream, "zeta");
    assert_eq!(names(&inventory).len(), 2);
}

#[test]
fn sanitizing_collisions_are_caught_too() {
    let a = catalog(&["a.b", "a_b"]);
    let inventory = Inventory::build([part("s", "s", &a)]);
    assert_eq!(inventory.collisions().len(), 1);
    assert_eq!(names(&inventory).len(), 2);
}

#[test]
fn allow_and_deny_globs_filter_tools() {
    let a = catalog(&["read_file", "read_dir", "write_file", "move_file"]);
    let filter =
        ToolFilter { allow: vec!["read_*".into(), "write_*".into()], deny: vec!["*_dir".into()] };
    let inventory = Inventory::build([Contribution {
        upstream: "fs",
        prefix: "fs",
        filter: &filter,
        catalog: &a,
    }]);
    assert_eq!(names(&inventory), ["fs__read_file", "fs__write_file"]);
    assert!(inventory.tool_route("fs__move_file").is_none(), "hidden tools are not callable");
}

#[test]
fn prompts_are_namespaced_like_tools() {
    let a = Catalog { prompts: vec![prompt("greet")], ..Catalog::default() };
    let inventory = Inventory::build([part("p", "p", &a)]);
    assert_eq!(inventory.prompts()[0].name, "p__greet");
    assert_eq!(inventory.prompt_route("p__greet").expect("routed").original, "greet");
}

#[test]
fn unique_resource_uris_are_kept_and_shared_ones_rewritten() {
    let a = Catalog {
        resources: vec![resource("file:///a"), resource("test://shared")],
        ..Catalog::default()
    };
    let b = Catalog { resources: vec![resource("test://shared")], ..Catalog::default() };
    let inventory = Inventory::build([part("a", "a", &a), part("b", "b", &b)]);
    let uris: Vec<_> = inventory.resources().iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        ["file:///a", "toolgate://a/test%3A%2F%2Fshared", "toolgate://b/test%3A%2F%2Fshared"]
    );
    for uri in uris {
        let route = inventory.resource_route(uri).expect("every listed uri routes");
        assert!(route.original == "file:///a" || route.original == "test://shared");
    }
    assert_eq!(
        &*inventory.resource_route("toolgate://b/test%3A%2F%2Fshared").unwrap().upstream,
        "b"
    );
}

#[test]
fn template_uris_route_to_their_upstream() {
    let a = Catalog {
        resource_templates: vec![template("test://template/{id}/data")],
        ..Catalog::default()
    };
    let b = Catalog { resource_templates: vec![template("file:///{path}")], ..Catalog::default() };
    let inventory = Inventory::build([part("a", "a", &a), part("b", "b", &b)]);
    let route = inventory.resource_route("test://template/42/data").expect("matches a template");
    assert_eq!((&*route.upstream, route.original.as_str()), ("a", "test://template/42/data"));
    assert_eq!(&*inventory.resource_route("file:///etc/x").expect("matches").upstream, "b");
    assert!(inventory.resource_route("nothing://here").is_none());
}

#[test]
fn shared_templates_are_rewritten_but_still_expandable() {
    let a = Catalog { resource_templates: vec![template("test://t/{id}")], ..Catalog::default() };
    let b = a.clone();
    let inventory = Inventory::build([part("a", "a", &a), part("b", "b", &b)]);
    let rewritten = &inventory.resource_templates()[1].uri_template;
    assert_eq!(rewritten, "toolgate://b/test%3A%2F%2Ft%2F{id}");
    let expanded = rewritten.replace("{id}", "7");
    let route = inventory.resource_route(&expanded).expect("routes");
    assert_eq!((&*route.upstream, route.original.as_str()), ("b", "test://t/7"));
}

#[test]
fn each_listed_resource_and_template_names_its_upstream() {
    let a = Catalog {
        resources: vec![resource("test://shared"), resource("file:///a")],
        resource_templates: vec![template("test://t/{id}"), template("mem://{key}")],
        ..Catalog::default()
    };
    let b = Catalog {
        resources: vec![resource("test://shared")],
        resource_templates: vec![template("test://t/{id}")],
        ..Catalog::default()
    };
    let inventory = Inventory::build([part("a", "a", &a), part("b", "b", &b)]);
    let origin = |route: Option<&Route>| {
        let route = route.expect("listed");
        (route.upstream.to_string(), route.original.clone())
    };
    for resource in inventory.resources() {
        let (upstream, original) = origin(inventory.listed_resource_route(&resource.uri));
        assert!(
            (upstream == "a" && ["test://shared", "file:///a"].contains(&original.as_str()))
                || (upstream == "b" && original == "test://shared"),
            "{} -> {upstream} {original}",
            resource.uri
        );
    }
    let templates: Vec<(String, String)> = inventory
        .resource_templates()
        .iter()
        .map(|t| origin(inventory.template_route(&t.uri_template)))
        .collect();
    assert_eq!(
        templates,
        [
            ("a".to_owned(), "test://t/{id}".to_owned()),
            ("a".to_owned(), "mem://{key}".to_owned()),
            ("b".to_owned(), "test://t/{id}".to_owned()),
        ]
    );
    assert!(inventory.listed_resource_route("file:///unlisted").is_none());
    assert!(inventory.template_route("file:///{path}").is_none());
}

#[test]
fn a_single_resource_upstream_gets_unknown_uris() {
    let a = Catalog { resources: vec![resource("mem://x")], ..Catalog::default() };
    let inventory = Inventory::build([part("a", "a", &a), part("t", "t", &catalog(&["x"]))]);
    assert_eq!(&*inventory.resource_route("mem://y").expect("only one").upstream, "a");
}

#[test]
fn rewritten_uris_round_trip() {
    for (upstream, original) in [("a", "test://x"), ("we ird/", "file:///a b/{c}?d=%20")] {
        let route = parse_rewritten_uri(&rewrite_uri(upstream, original)).expect("parses");
        assert_eq!((&*route.upstream, route.original.as_str()), (upstream, original));
    }
}

#[test]
fn unlisted_names_go_to_the_only_passthrough_upstream_within_its_filter() {
    let fs = catalog(&["read_file", "move_file"]);
    let gh = catalog(&["issue"]);
    let filter = ToolFilter { allow: Vec::new(), deny: vec!["move_*".into()] };
    let inventory = Inventory::build([
        Contribution { upstream: "fs", prefix: "", filter: &filter, catalog: &fs },
        part("gh", "gh", &gh),
    ]);
    let route = inventory.unlisted_tool_route("not_listed").expect("to the passthrough");
    assert_eq!((&*route.upstream, route.original.as_str()), ("fs", "not_listed"));
    assert!(inventory.unlisted_tool_route("move_file").is_none(), "denied stays denied");
    assert!(inventory.unlisted_tool_route("read_file").is_none(), "listed names route exactly");
    assert!(inventory.unlisted_tool_route("gh__issue").is_none(), "listed names route exactly");
    assert_eq!(&*inventory.unlisted_prompt_route("any").expect("prompt").upstream, "fs");
}

#[test]
fn unlisted_names_are_unknown_without_exactly_one_passthrough_upstream() {
    let a = catalog(&["echo"]);
    let prefixed = Inventory::build([part("a", "a", &a)]);
    assert!(prefixed.unlisted_tool_route("echo").is_none());
    assert!(prefixed.unlisted_prompt_route("echo").is_none());
    let two = Inventory::build([part("a", "", &a), part("b", "", &a)]);
    assert!(two.unlisted_tool_route("other").is_none(), "ambiguous: no guessing");
}

#[test]
fn only_what_an_upstream_offers_is_offered() {
    let a = Catalog {
        resources: vec![resource("mem://x"), resource("test://shared")],
        resource_templates: vec![template("test://t/{id}/data"), template("test://both/{id}")],
        ..Catalog::default()
    };
    let b = Catalog {
        resources: vec![resource("test://shared")],
        resource_templates: vec![template("test://both/{id}")],
        ..Catalog::default()
    };
    let inventory = Inventory::build([part("a", "a", &a), part("b", "b", &b)]);
    let offered = |uri: &str| {
        inventory.offered_resource_route(uri).map(|r| format!("{}:{}", r.upstream, r.original))
    };
    assert_eq!(offered("mem://x").as_deref(), Some("a:mem://x"), "listed");
    assert_eq!(offered("test://t/7/data").as_deref(), Some("a:test://t/7/data"), "a template's");
    assert_eq!(
        offered("toolgate://b/test%3A%2F%2Fshared").as_deref(),
        Some("b:test://shared"),
        "a shared URI, rewritten"
    );
    assert_eq!(
        offered("toolgate://b/test%3A%2F%2Fboth%2F3").as_deref(),
        Some("b:test://both/3"),
        "a shared template's, rewritten"
    );
    for unoffered in [
        "mem://y",
        "test://t/7/other",
        "toolgate://b/mem%3A%2F%2Fx",
        "toolgate://nobody/test%3A%2F%2Fshared",
        "test://both/3",
    ] {
        assert_eq!(offered(unoffered), None, "{unoffered}");
    }
    let only = Catalog { resources: vec![resource("mem://x")], ..Catalog::default() };
    let single = Inventory::build([part("a", "a", &only)]);
    assert!(single.resource_route("mem://y").is_some(), "reads may still go to the only one");
    assert!(single.offered_resource_route("mem://y").is_none(), "subscriptions may not");
}
