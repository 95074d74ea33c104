//! Tests of smg-mcp's `mcp.yaml`: every mapping onto toolgate's settings, and every refusal
//! and warning, each with its path.

use std::path::Path;

use serde_json::{Value as Json, json};

use crate::{
    Config, FixedEnvironment, Format, HttpConfig, HttpTransport, ProxyChoice, ResultFormat,
    ServerConfig, StdioConfig, TransportConfig,
};

fn env() -> FixedEnvironment {
    FixedEnvironment::new()
        .with_var("BRAVE_KEY", "brave-secret")
        .with_var("PROXY_PASS", "hunter2")
        .with_var("EMPTY", "")
}

fn load(text: &str) -> Result<Config, String> {
    crate::parse_str(text, Format::Yaml, Path::new("/etc/smg"), &env())
        .map_err(|errors| errors.to_string())
}

fn valid(text: &str) -> Config {
    load(text).unwrap_or_else(|errors| panic!("must load:\n{errors}"))
}

/// The errors, one `path: message` per line.
fn invalid(text: &str) -> String {
    match load(text) {
        Ok(config) => panic!("must fail: {config:?}"),
        Err(errors) => errors,
    }
}

fn server<'c>(config: &'c Config, name: &str) -> &'c ServerConfig {
    config.servers.iter().find(|s| s.name == name).expect("the server")
}

fn stdio<'c>(config: &'c Config, name: &str) -> &'c StdioConfig {
    match &server(config, name).transport {
        TransportConfig::Stdio(stdio) => stdio,
        other => panic!("not a stdio server: {other:?}"),
    }
}

fn http<'c>(config: &'c Config, name: &str) -> &'c HttpConfig {
    match &server(config, name).transport {
        TransportConfig::Http(http) => http,
        other => panic!("not an HTTP server: {other:?}"),
    }
}

/// The options of the pipeline entry of `kind`.
fn options(config: &Config, kind: &str) -> Json {
    let entry = config.pipeline.iter().find(|e| e.kind == kind).expect("the entry");
    Json::Object(entry.options.clone())
}

/// The rules of the `policy` entry, as `decision servers tools annotations: reason`.
fn rules(config: &Config) -> Vec<String> {
    let options = options(config, "policy");
    options["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|rule| {
            let part = |key: &str| rule.get(key).map_or(String::new(), |v| format!(" {key}={v}"));
            let head = format!("{}{}{}", part("servers"), part("tools"), part("annotations"));
            format!(
                "{}{head}: {}",
                rule["decision"].as_str().unwrap(),
                rule["reason"].as_str().unwrap()
            )
        })
        .collect()
}

// === servers ===

#[test]
fn stdio_servers_take_command_args_and_envs() {
    let config = valid(
        r#"
servers:
  - name: files
    protocol: stdio
    command: npx
    args: ["-y", "server-filesystem", "${BRAVE_KEY}", 8080]
    envs:
      NODE_ENV: production
      PORT: 8080
      DEBUG: true
"#,
    );
    let files = stdio(&config, "files");
    assert_eq!(files.command, "npx");
    // `${VAR}` is expanded as in toolgate.toml; numbers are read as their text, as serde does.
    assert_eq!(files.args, ["-y", "server-filesystem", "brave-secret", "8080"]);
    let env: Vec<(&str, &str)> =
        files.env.iter().map(|(name, value)| (name.as_str(), value.expose())).collect();
    assert_eq!(env, [("DEBUG", "true"), ("NODE_ENV", "production"), ("PORT", "8080")]);
    assert!(files.env_pass.is_empty(), "toolgate's default environment, not all of it");
    let files = server(&config, "files");
    assert!(!files.required && files.enabled);
    assert_eq!(files.prefix, "files");
    assert!(config.pipeline.iter().all(|entry| entry.kind != "arg_map"));
}

#[test]
fn sse_and_streamable_servers_send_their_token_as_a_bearer_header() {
    let config = valid(
        r#"
servers:
  - name: brave
    protocol: sse
    url: "https://mcp.brave.com/sse"
    token: "${BRAVE_KEY}"
    required: true
  - name: custom
    protocol: streamable
    url: "https://custom.example.com/mcp"
    token: 12345
    headers:
      X-Tenant-ID: tenant-123
"#,
    );
    let brave = http(&config, "brave");
    assert_eq!(brave.transport, HttpTransport::Sse);
    assert_eq!(brave.url.as_str(), "https://mcp.brave.com/sse");
    assert_eq!(brave.headers["Authorization"].expose(), "Bearer brave-secret");
    assert!(server(&config, "brave").required);
    let custom = http(&config, "custom");
    assert_eq!(custom.transport, HttpTransport::StreamableHttp);
    assert_eq!(custom.headers["Authorization"].expose(), "Bearer 12345");
    assert_eq!(custom.headers["X-Tenant-ID"].expose(), "tenant-123");
    // The token's variable is a secret of toolgate's: no stdio server inherits it.
    assert!(config.secret_env.contains("BRAVE_KEY"));
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn an_authorization_header_wins_over_the_token_as_in_smg() {
    let config = valid(
        r#"
servers:
  - name: api
    protocol: streamable
    url: "https://api.example.com/mcp"
    token: ignored
    headers:
      authorization: "Basic abc"
"#,
    );
    let api = http(&config, "api");
    assert_eq!(api.headers.len(), 1);
    assert_eq!(api.headers["authorization"].expose(), "Basic abc");
    assert_eq!(
        config.warnings,
        ["servers.api.token: ignored: headers.authorization is sent instead, as in smg-mcp"]
    );
}

#[test]
fn bad_tokens_are_refused() {
    let errors = invalid(
        r#"
servers:
  - name: a
    protocol: sse
    url: "https://a.example.com/sse"
    token: "${EMPTY}"
  - name: b
    protocol: sse
    url: "https://b.example.com/sse"
    token: "${UNSET_TOKEN}"
"#,
    );
    assert!(errors.contains("servers.a.token: is empty"), "{errors}");
    assert!(errors.contains("servers.b.token: ") && errors.contains("UNSET_TOKEN"), "{errors}");
}

#[test]
fn protocol_decides_which_keys_belong() {
    let errors = invalid(
        r#"
servers:
  - name: local
    protocol: stdio
    command: local-mcp
    url: "https://x.example.com"
    token: t
  - name: remote
    protocol: streamable
    url: "https://remote.example.com/mcp"
    envs: { A: b }
  - name: nothing
    protocol: sse
  - name: unknown
    protocol: websocket
  - name: untold
    command: x
"#,
    );
    let expected = [
        "servers.local.url: only for protocol sse or streamable (this server's is stdio)",
        "servers.local.token: only for protocol sse or streamable (this server's is stdio)",
        "servers.remote.envs: only for protocol stdio (this server's is streamable)",
        "servers.nothing: protocol sse needs `url`",
        "servers.unknown.protocol: unknown protocol \"websocket\" (expected stdio, sse or streamable)",
        "servers.untold: missing `protocol` (stdio, sse or streamable)",
    ];
    for line in expected {
        assert!(errors.lines().any(|l| l == line), "missing {line:?} in:\n{errors}");
    }
}

#[test]
fn names_are_required_valid_and_unique() {
    let errors = invalid(
        r#"
servers:
  - protocol: stdio
    command: a
  - name: "my server"
    protocol: stdio
    command: b
  - name: twice
    protocol: stdio
    command: c
  - name: twice
    protocol: stdio
    command: d
  - just a string
"#,
    );
    assert!(errors.contains("servers[0]: missing `name`"), "{errors}");
    assert!(errors.contains("servers.\"my server\": invalid server name"), "{errors}");
    assert!(
        errors.contains("servers[3]: server \"twice\" is also defined at servers[2]"),
        "{errors}"
    );
    assert!(errors.contains("servers[4]: expected a mapping, found string"), "{errors}");
}

#[test]
fn unknown_keys_are_errors_with_a_suggestion() {
    let errors = invalid("servers:\n  - name: a\n    protocol: stdio\n    comand: a\npolcy: {}\n");
    assert!(errors.contains("servers.a.comand: unknown key, did you mean command?"), "{errors}");
    assert!(errors.contains("polcy: unknown key, did you mean policy?"), "{errors}");
}

#[test]
fn a_decimal_number_where_text_is_read_must_be_quoted() {
    let errors = invalid(
        "servers:\n  - name: a\n    protocol: stdio\n    command: a\n    envs: { V: 1.10 }\n",
    );
    assert_eq!(errors, "servers.a.envs.V: expected a string, found float");
}

#[test]
fn internal_and_builtin_routing_are_reported_as_not_mapped() {
    let config = valid(
        r#"
servers:
  - name: brave
    protocol: sse
    url: "https://mcp.brave.com/sse"
    internal: true
    builtin_type: web_search_preview
    builtin_tool_name: brave_web_search
"#,
    );
    assert_eq!(
        config.warnings,
        [
            "servers.brave.internal: not understood by toolgate yet: this server's tools are \
             shown to clients like any other's",
            "servers.brave.builtin_type: not understood by toolgate yet: requests' built-in \
             tools are not routed to MCP servers",
            "servers.brave.builtin_tool_name: not understood by toolgate yet (see builtin_type)",
        ]
    );
    let errors = invalid(
        "servers:\n  - name: b\n    protocol: stdio\n    command: b\n    builtin_type: web_search\n",
    );
    assert!(errors.starts_with("servers.b.builtin_type: unknown builtin_type \"web_search\""));
}

#[test]
fn nulls_are_left_out_as_serde_does() {
    let config = valid(
        "servers:\n  - name: a\n    protocol: sse\n    url: \"https://a.example.com/sse\"\n    token: ~\n    tools: ~\n",
    );
    assert!(http(&config, "a").headers.is_empty());
}

// === tools ===

#[test]
fn response_formats_become_the_servers_table() {
    let config = valid(
        r#"
servers:
  - name: s
    protocol: stdio
    command: s
    tools:
      search: { response_format: web_search_call }
      find: { response_format: file_search_call }
      "run[1]": { response_format: code_interpreter_call }
      raw: { response_format: passthrough }
      draw: { response_format: image_generation_call }
"#,
    );
    let s = server(&config, "s");
    assert_eq!(s.response_format_for("search"), Some(ResultFormat::WebSearchCall));
    assert_eq!(s.response_format_for("find"), Some(ResultFormat::FileSearchCall));
    // A tool's name is a literal, not a glob.
    assert_eq!(s.response_format_for("run[1]"), Some(ResultFormat::CodeInterpreterCall));
    assert_eq!(s.response_format_for("run1"), None);
    assert_eq!(s.response_format_for("raw"), None);
    assert_eq!(s.response_format_for("draw"), None);
    assert_eq!(
        config.warnings,
        ["servers.s.tools.draw.response_format: not understood by toolgate yet: it makes no \
             image_generation_call items, so this tool's results stay mcp_call items"]
    );
    let errors = invalid(
        "servers:\n  - name: s\n    protocol: stdio\n    command: s\n    tools:\n      x: { response_format: json }\n",
    );
    assert!(
        errors.starts_with("servers.s.tools.x.response_format: unknown response_format \"json\"")
    );
}

#[test]
fn aliases_and_argument_mappings_become_one_arg_map_entry() {
    let config = valid(
        r#"
servers:
  - name: brave
    protocol: sse
    url: "https://mcp.brave.com/sse"
    tools:
      brave_web_search:
        alias: web_search
        arg_mapping:
          renames: { q: query }
          defaults: { count: 10, safe: { level: strict } }
          overrides: {}
  - name: my.tools
    protocol: stdio
    command: t
    tools:
      fetch:
        arg_mapping:
          defaults: { timeout: 30 }
      plain: {}
"#,
    );
    let entry = config.pipeline.iter().find(|e| e.kind == "arg_map").expect("arg_map");
    assert_eq!(entry.path, "servers.*.tools");
    assert_eq!(
        options(&config, "arg_map"),
        json!({ "map": {
            "brave__brave_web_search": {
                "alias": "web_search",
                "hide_original": true,
                "rename": { "q": "query" },
                "defaults": { "count": 10, "safe": { "level": "strict" } },
            },
            // Exposed names use the server's prefix (`my.tools` has prefix `my_tools`).
            "my_tools__fetch": { "defaults": { "timeout": 30 } },
        }})
    );
    // The policy comes first: it decides by the tool's own name, whatever the alias.
    assert_eq!(config.pipeline[0].kind, "policy");
}

#[test]
fn argument_mappings_toolgate_cannot_do_are_refused() {
    let errors = invalid(
        r#"
servers:
  - name: s
    protocol: stdio
    command: s
    tools:
      a:
        arg_mapping:
          renames: { x: y, y: z }
      b:
        arg_mapping:
          renames: { x: target, w: target }
      c:
        arg_mapping:
          renames: { q: query }
          defaults: { q: 1 }
      d:
        arg_mapping:
          overrides: { safe: strict }
      e:
        arg_mapping:
          renames: { v: "" }
          extra: 1
"#,
    );
    let expected = [
        "servers.s.tools.a.arg_mapping.renames.x: \"y\" is itself renamed; toolgate does not chain or swap names",
        "servers.s.tools.b.arg_mapping.renames.w: \"target\" is already the target of renames.x",
        "servers.s.tools.c.arg_mapping.defaults.q: \"q\" is the model's name (renamed to \"query\"); toolgate keys defaults by the server's name",
        "servers.s.tools.d.arg_mapping.overrides: not understood by toolgate yet: it cannot force an argument's value, and ignoring overrides would let the model choose them",
        "servers.s.tools.e.arg_mapping.extra: unknown key (expected one of: renames, defaults, overrides)",
        "servers.s.tools.e.arg_mapping.renames.v: the server's argument name is empty",
    ];
    for line in expected {
        assert!(errors.lines().any(|l| l == line), "missing {line:?} in:\n{errors}");
    }
}

#[test]
fn a_rename_to_itself_is_ignored_with_a_warning() {
    let config = valid(
        "servers:\n  - name: s\n    protocol: stdio\n    command: s\n    tools:\n      t:\n        arg_mapping:\n          renames: { q: q }\n",
    );
    assert!(config.pipeline.iter().all(|entry| entry.kind != "arg_map"));
    assert_eq!(
        config.warnings,
        ["servers.s.tools.t.arg_mapping.renames.q: renames an argument to itself: ignored"]
    );
}

#[test]
fn aliases_must_be_valid_new_and_unique() {
    let errors = invalid(
        r#"
servers:
  - name: a
    protocol: stdio
    command: a
    tools:
      one: { alias: "two words" }
      two: { alias: shared }
      three: { alias: b__four }
  - name: b
    protocol: stdio
    command: b
    tools:
      four: { alias: shared }
"#,
    );
    let expected = [
        "servers.a.tools.one.alias: \"two words\" is not a tool name toolgate can offer (1 to 64 of a-z, A-Z, 0-9, _ and -)",
        "servers.a.tools.three.alias: \"b__four\" is the name of another mapped tool",
        "servers.b.tools.four.alias: \"shared\" is already the alias at servers.a.tools.two.alias",
    ];
    for line in expected {
        assert!(errors.lines().any(|l| l == line), "missing {line:?} in:\n{errors}");
    }
}

// === proxy ===

#[test]
fn the_global_proxy_becomes_proxy_with_credentials_in_its_urls() {
    let config = valid(
        r#"
servers:
  - name: remote
    protocol: streamable
    url: "https://remote.example.com/mcp"
proxy:
  http: "http://proxy.internal:8080"
  https: "http://proxy.internal:8443"
  no_proxy: "localhost, 127.0.0.1,*.internal,10.*"
  username: ops
  password: "${PROXY_PASS}"
"#,
    );
    let proxy = config.proxy.as_ref().expect("[proxy]");
    assert_eq!(proxy.http.as_ref().unwrap().expose(), "http://ops:hunter2@proxy.internal:8080/");
    assert_eq!(proxy.https.as_ref().unwrap().expose(), "http://ops:hunter2@proxy.internal:8443/");
    // `*.internal` is read as `.internal`; `10.*` cannot be read and goes through the proxy.
    assert_eq!(proxy.no_proxy, ["localhost", "127.0.0.1", ".internal"]);
    assert_eq!(http(&config, "remote").proxy, ProxyChoice::Via(proxy.clone()));
    assert!(config.secret_env.contains("PROXY_PASS"));
    assert_eq!(config.warnings.len(), 1, "{:?}", config.warnings);
    assert!(config.warnings[0].starts_with("proxy.no_proxy: \"10.*\" ignored ("));
    assert!(!format!("{config:?}").contains("hunter2"), "a proxy's password is a secret");
}

#[test]
fn a_servers_proxy_overrides_the_global_one_and_null_goes_direct() {
    let config = valid(
        r#"
servers:
  - name: own
    protocol: streamable
    url: "https://own.example.com/mcp"
    proxy: { https: "http://own-proxy:3128" }
  - name: direct
    protocol: streamable
    url: "https://direct.example.com/mcp"
    proxy: null
  - name: local
    protocol: stdio
    command: local
    proxy: { http: "http://x:1" }
proxy:
  https: "http://global:3128"
"#,
    );
    let ProxyChoice::Via(own) = &http(&config, "own").proxy else { panic!("own proxy") };
    assert_eq!(own.https.as_ref().unwrap().expose(), "http://own-proxy:3128");
    assert_eq!(http(&config, "direct").proxy, ProxyChoice::Direct);
    assert_eq!(
        config.warnings,
        [
            "servers.direct.proxy: null: direct, as smg-mcp documents it (smg-mcp itself takes \
             the global proxy here)",
            "servers.local.proxy: ignored: a stdio server makes no HTTP requests",
        ]
    );
}

#[test]
fn a_proxy_that_names_none_leaves_the_variables_and_half_credentials_are_ignored() {
    let config = valid("servers: []\nproxy:\n  no_proxy: localhost\n");
    assert_eq!(config.proxy, None);
    assert!(config.warnings[0].starts_with("proxy: names no proxy (neither http nor https)"));
    let config = valid("servers: []\nproxy:\n  http: \"http://p:1\"\n  username: ops\n");
    assert_eq!(config.proxy.unwrap().http.unwrap().expose(), "http://p:1");
    assert_eq!(
        config.warnings,
        ["proxy: username without password or the other way round: ignored, as smg-mcp does"]
    );
    let errors = invalid("servers: []\nproxy:\n  http: proxy.internal:8080\n");
    assert!(errors.starts_with("proxy.http: invalid proxy URL"), "{errors}");
}

// === pool, inventory, warmup ===

#[test]
fn pool_and_inventory_map_onto_toolgates_and_warmup_is_reported_as_not_mapped() {
    let config = valid(
        r#"
servers:
  - name: brave
    protocol: sse
    url: "https://mcp.brave.com/sse"
pool: { max_connections: 100, idle_timeout: 300 }
inventory: { enable_refresh: true, tool_ttl: 300, refresh_interval: 60, refresh_on_error: true }
warmup:
  - url: "https://mcp.example.com/sse"
    label: example
    token: "${NOT_READ}"
"#,
    );
    assert_eq!(config.llm.pool.max_connections, Some(100));
    assert_eq!(config.llm.pool.idle_timeout, Some(std::time::Duration::from_secs(300)));
    let refresh = config.servers[0].refresh;
    assert_eq!(refresh.ttl(), Some(std::time::Duration::from_secs(300)));
    assert_eq!(refresh.every(), Some(std::time::Duration::from_secs(60)));
    assert!(refresh.on_unknown_tool());
    let warmup = "not mapped yet (toolgate keeps a connection per tenant, and an mcp.yaml names \
                  none: write [pool] warmup entries with a tenant in toolgate.toml)";
    assert_eq!(config.warnings, [format!("warmup[0]: {warmup}: nothing is warmed up")]);

    // enable_refresh: false turns every refresh off.
    let config = valid(
        "servers:\n  - name: a\n    protocol: sse\n    url: https://a.example/sse\n\
         inventory: { enable_refresh: false, tool_ttl: 300, refresh_on_error: true }\n",
    );
    let refresh = config.servers[0].refresh;
    assert_eq!((refresh.ttl(), refresh.every(), refresh.on_unknown_tool()), (None, None, false));
}

// === policy ===

#[test]
fn without_a_policy_smg_mcps_defaults_are_written_as_rules() {
    let config = valid("servers: []\n");
    let options = options(&config, "policy");
    assert_eq!(options["default"], "allow");
    assert_eq!(
        rules(&config),
        [
            "allow annotations={\"read_only\":true}: read-only tools are allowed",
            "ask annotations={\"destructive\":true}: the tool may be destructive (a tool without \
             annotations may be) and no rule of the policy allows it: a person must approve it",
        ]
    );
    assert_eq!(config.pipeline[0].path, "policy");
    assert_eq!(config.pipeline.len(), 1);
}

#[test]
fn tool_policies_come_first_then_servers_then_the_defaults() {
    let config = valid(
        r#"
servers:
  - { name: brave, protocol: sse, url: "https://b.example.com/sse" }
  - { name: internal, protocol: stdio, command: i }
  - { name: external, protocol: sse, url: "https://e.example.com/sse" }
  - { name: scratch, protocol: stdio, command: s }
  - { name: open, protocol: stdio, command: o }
policy:
  default: deny
  servers:
    brave: { trust_level: trusted }
    internal: { trust_level: standard, default: allow }
    external: { trust_level: untrusted, default: { deny_with_reason: "external is off" } }
    scratch: { trust_level: sandboxed }
    open: { trust_level: untrusted }
  tools:
    "internal:delete_all": deny
    "external:read_docs": allow
    "scratch:run[1]":
      deny_with_reason: "no"
"#,
    );
    assert_eq!(options(&config, "policy")["default"], "deny");
    let untrusted = "is untrusted and the tool may be destructive (a tool without annotations \
                     may be): a person must approve it";
    assert_eq!(
        rules(&config),
        [
            "deny servers=[\"internal\"] tools=[\"delete_all\"]: denied by policy.tools.\"internal:delete_all\"",
            "allow servers=[\"external\"] tools=[\"read_docs\"]: allowed by policy.tools.\"external:read_docs\"",
            // A literal name: `[` and `]` are escaped as classes.
            "deny servers=[\"scratch\"] tools=[\"run[[]1[]]\"]: no",
            "allow servers=[\"brave\"]: server `brave` is trusted (policy.servers.brave.trust_level)",
            "deny servers=[\"external\"]: external is off",
            "deny servers=[\"scratch\"] annotations={\"open_world\":true}: server `scratch` is \
             sandboxed: the tool may reach outside (a tool without annotations may)",
            "deny servers=[\"scratch\"] annotations={\"read_only\":false}: server `scratch` is \
             sandboxed: only tools annotated read-only may be called",
            &format!(
                "ask servers=[\"open\"] annotations={{\"destructive\":true}}: server `open` {untrusted}"
            ),
            "allow annotations={\"read_only\":true}: read-only tools are allowed",
            "ask annotations={\"destructive\":true}: the tool may be destructive (a tool without \
             annotations may be) and no rule of the policy allows it: a person must approve it",
        ]
    );
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn a_default_with_a_reason_is_a_last_rule() {
    let config = valid("servers: []\npolicy:\n  default:\n    deny_with_reason: closed\n");
    assert_eq!(options(&config, "policy")["default"], "deny");
    assert_eq!(rules(&config).last().map(String::as_str), Some("deny: closed"));
    let config = valid("servers: []\npolicy:\n  servers:\n    s: { default: deny }\n");
    assert!(
        rules(&config)
            .contains(&"deny servers=[\"s\"]: denied by policy.servers.s.default".to_owned())
    );
}

#[test]
fn defaults_that_smg_ignores_are_reported() {
    let config = valid(
        r#"
servers:
  - { name: t, protocol: stdio, command: t }
  - { name: s, protocol: stdio, command: s }
policy:
  servers:
    t: { trust_level: trusted, default: deny }
    s: { trust_level: sandboxed, default: deny }
    gone: { trust_level: trusted }
  tools:
    "elsewhere:x": deny
"#,
    );
    assert_eq!(
        config.warnings,
        [
            "policy.tools.\"elsewhere:x\": names no server in servers (\"elsewhere\")",
            "policy.servers.t.default: has no effect: a trusted server's tools are all allowed, \
             as in smg-mcp",
            "policy.servers.s.default: has no effect on a sandboxed server, as in smg-mcp",
            "policy.servers.gone: names no server in servers (\"gone\")",
        ]
    );
}

#[test]
fn a_policy_with_a_problem_is_refused_whole() {
    let errors = invalid(
        r#"
servers: []
policy:
  default: ask
  servers:
    a: { trust_level: paranoid }
    b: { default: maybe, extra: 1 }
  tools:
    "no_colon": deny
    ":tool": deny
    "s:t": { deny_because: x }
    "s:u": { deny_with_reason: 3 }
    "s:v": [deny]
"#,
    );
    let expected = [
        "policy.default: unknown decision \"ask\" (expected allow, deny or {deny_with_reason: \"...\"})",
        "policy.tools.no_colon: expected a key \"server:tool\" (smg-mcp ignores any other)",
        "policy.tools.\":tool\": expected a key \"server:tool\" (smg-mcp ignores any other)",
        "policy.tools.\"s:t\": expected allow, deny or {deny_with_reason: \"...\"}, found another mapping",
        "policy.tools.\"s:u\".deny_with_reason: expected a string, found integer",
        "policy.tools.\"s:v\": expected allow, deny or {deny_with_reason: \"...\"}, found sequence",
        "policy.servers.a.trust_level: unknown trust_level \"paranoid\" (expected trusted, standard, untrusted or sandboxed)",
        "policy.servers.b.extra: unknown key (expected one of: trust_level, default)",
        "policy.servers.b.default: unknown decision \"maybe\" (expected allow, deny or {deny_with_reason: \"...\"})",
    ];
    for line in expected {
        assert!(errors.lines().any(|l| l == line), "missing {line:?} in:\n{errors}");
    }
    // What was valid is kept, the policy is not: no part of a policy is dropped.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("mcp.yaml");
    let text = "servers:\n  - { name: a, protocol: stdio, command: a }\npolicy:\n  tools: { \"a:x\": deny, \"y\": deny }\n";
    std::fs::write(&file, text).unwrap();
    let checked = crate::check_file(&file, &env());
    assert_eq!(checked.errors.len(), 1, "{}", checked.errors);
    assert_eq!(checked.config.servers.len(), 1);
    assert!(checked.config.pipeline.is_empty(), "{:?}", checked.config.pipeline);
}

// === YAML itself ===

#[test]
fn yaml_problems_are_reported() {
    let duplicate = invalid("servers: []\nservers: []\n");
    assert!(
        duplicate.starts_with("invalid YAML at line 2, column 1: duplicated key"),
        "{duplicate}"
    );
    let two = invalid("servers: []\n---\nservers: []\n");
    assert_eq!(two, "invalid YAML: 2 documents (separated by ---); the file must hold one");
    let tagged = invalid("servers: !custom []\n");
    assert_eq!(tagged, "servers: unsupported YAML tag !custom");
    let key = invalid("servers: []\n? [a, b]\n: c\n");
    assert_eq!(key, "a key that is not a string, number or boolean");
    let top = invalid("- a\n- b\n");
    assert_eq!(top, "expected a mapping at the top level, found sequence");
}

#[test]
fn anchors_and_aliases_are_expanded() {
    let config = valid(
        r#"
servers:
  - name: a
    protocol: stdio
    command: a
    envs: &shared { MODE: fast }
  - name: b
    protocol: stdio
    command: b
    envs: *shared
"#,
    );
    assert_eq!(stdio(&config, "b").env["MODE"].expose(), "fast");
}

#[test]
fn an_empty_file_defines_no_servers() {
    let config = valid("");
    assert!(config.servers.is_empty());
    assert_eq!(config.warnings, ["no servers: no servers defined"]);
}

#[test]
fn yaml_files_are_known_by_their_extension() {
    assert_eq!(Format::from_path(Path::new("mcp.yaml")), Some(Format::Yaml));
    assert_eq!(Format::from_path(Path::new("conf/mcp.YML")), Some(Format::Yaml));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("mcp.yaml");
    std::fs::write(&file, "servers:\n  - { name: a, protocol: stdio, command: a }\n").unwrap();
    let config = crate::load_file(&file, &env()).expect("loads");
    assert_eq!(config.servers[0].name, "a");
}
