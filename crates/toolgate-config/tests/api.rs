//! The public API beyond the golden fixtures: secret handling, loading and discovery together,
//! formats, tool filters.

use std::fs;
use std::path::Path;

use toolgate_config::{
    ConfigErrors, FixedEnvironment, Format, HttpTransport, Loaded, TransportConfig, load_with,
    parse_str,
};

fn env() -> FixedEnvironment {
    FixedEnvironment::new()
        .with_var("TOKEN", "tok-123")
        .with_var("PAT", "pat-456")
        .with_home_dir("/home/ada")
        .with_current_dir("/work")
}

fn toml(text: &str) -> Result<toolgate_config::Config, ConfigErrors> {
    parse_str(text, Format::Toml, Path::new("/etc/toolgate"), &env())
}

#[test]
fn secrets_are_interpolated_but_never_shown() {
    let config = toml(
        r#"
        [servers.remote]
        url = "https://mcp.example.com/mcp"
        headers = { Authorization = "Bearer ${TOKEN}" }

        [servers.local]
        command = "x"
        env = { PAT = "${PAT}" }
        "#,
    )
    .expect("config must load");
    let [local, remote] = &config.servers[..] else { panic!("two servers expected") };
    let TransportConfig::Http(http) = &remote.transport else { panic!("http expected") };
    assert_eq!(http.headers["Authorization"].expose(), "Bearer tok-123");
    let TransportConfig::Stdio(stdio) = &local.transport else { panic!("stdio expected") };
    assert_eq!(stdio.env["PAT"].expose(), "pat-456");

    let debug = format!("{config:?} {config:#?}");
    assert!(!debug.contains("tok-123") && !debug.contains("pat-456"), "{debug}");
}

#[test]
fn errors_about_secret_fields_do_not_echo_them() {
    let errors = toml(
        r#"
        [servers.remote]
        url = "https://user:${TOKEN}@exa mple.com/${MISSING}"
        headers = { Authorization = "Bearer ${TOKEN}\u0001", X-Two = "${TOKEN}${NOPE}" }
        "#,
    )
    .expect_err("config must fail");
    let text = errors.to_string();
    assert!(!text.contains("tok-123"), "{text}");
    assert!(text.contains("servers.remote.headers.X-Two: environment variable NOPE is not set"));
    assert!(text.contains("servers.remote.headers.Authorization: invalid header value"));
    assert!(text.contains("servers.remote.url: environment variable MISSING is not set"));
}

#[test]
fn config_errors_display_one_per_line() {
    let errors = toml("x = 1\n[servers.a]\n").expect_err("config must fail");
    assert_eq!(errors.len(), 2);
    assert_eq!(
        errors.to_string(),
        "x: unknown key (expected one of: import, gateway, servers, pipeline, audit, admin, agent, llm, pool, scripts, auth, tenants, proxy, telemetry, state, inventory)\n\
         servers.a: needs either command (a local process) or url (a remote server)"
    );
    assert_eq!(errors.errors()[0].path, "x");
    assert_eq!(errors.file(), None);
    let boxed: Box<dyn std::error::Error> = Box::new(errors);
    assert!(boxed.to_string().starts_with("x: "));
}

#[test]
fn servers_are_sorted_by_name() {
    let config = toml("[servers.b]\ncommand = \"b\"\n[servers.a]\nurl = \"http://a/\"\n")
        .expect("config must load");
    let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(config.servers[0].transport.kind(), "auto");
}

#[test]
fn relative_cwd_is_relative_to_the_base_dir() {
    let config = toml("[servers.a]\ncommand = \"a\"\ncwd = \"data\"\n").expect("config must load");
    let TransportConfig::Stdio(stdio) = &config.servers[0].transport else { panic!() };
    assert_eq!(stdio.cwd.as_deref(), Some(Path::new("/etc/toolgate/data")));
}

#[test]
fn whole_json_file() {
    let text = r#"{"mcpServers": {"s": {"type": "sse", "url": "https://x.example/sse"}}}"#;
    let config = parse_str(text, Format::Json, Path::new("/"), &env()).expect("config must load");
    let TransportConfig::Http(http) = &config.servers[0].transport else { panic!() };
    assert_eq!(http.transport, HttpTransport::Sse);
}

#[test]
fn compiled_tool_filter() {
    let config = toml("[servers.a]\ncommand = \"a\"\nallow_tools = [\"read_*\"]\ndeny_tools = [\"read_secret\"]\n")
        .expect("config must load");
    let filter = config.servers[0].tools.compile().expect("validated filter must compile");
    assert!(filter.matches("read_file"));
    assert!(!filter.matches("read_secret"));
    assert!(!filter.matches("write_file"));
}

#[test]
fn format_detection() {
    assert_eq!(Format::from_path(Path::new("a/toolgate.toml")), Some(Format::Toml));
    assert_eq!(Format::from_path(Path::new(".mcp.json")), Some(Format::Json));
    assert_eq!(Format::from_path(Path::new("x.mcp.json")), Some(Format::Json));
    assert_eq!(Format::from_path(Path::new("mcp.JSONC")), Some(Format::Json));
    assert_eq!(Format::from_path(Path::new("config")), None);
    assert_eq!(Format::sniff("  {\"mcpServers\": {}}"), Format::Json);
    assert_eq!(Format::sniff("[servers.x]"), Format::Toml);
}

#[test]
fn load_discovers_and_reads() {
    let dir = tempfile::tempdir().expect("temp dir must be creatable");
    let env = env().with_current_dir(dir.path()).with_home_dir(dir.path().join("home"));
    assert_eq!(load_with(None, &env), Ok(None));

    fs::write(dir.path().join("toolgate.toml"), "[servers.a]\ncommand = \"a\"\n")
        .expect("config must be writable");
    let Loaded { path, config } =
        load_with(None, &env).expect("config must load").expect("config must be found");
    assert_eq!(path, dir.path().join("toolgate.toml"));
    assert_eq!(config.servers[0].name, "a");

    // Claude Code's .mcp.json, named relative to the current dir.
    fs::write(dir.path().join(".mcp.json"), r#"{"mcpServers": {"b": {"command": "b"}}}"#)
        .expect("config must be writable");
    let loaded = load_with(Some(Path::new(".mcp.json")), &env)
        .expect("config must load")
        .expect("config must be found");
    assert_eq!(loaded.config.servers[0].name, "b");

    let errors = load_with(Some(Path::new("missing.toml")), &env).expect_err("must fail");
    assert_eq!(
        errors.to_string(),
        format!("{}: config file not found", dir.path().join("missing.toml").display())
    );
}

#[test]
fn clients_config_files_load_where_the_clients_keep_them() {
    let dir = tempfile::tempdir().expect("temp dir must be creatable");
    let home = dir.path().join("home");
    let env = env().with_current_dir(dir.path()).with_home_dir(&home);
    fs::create_dir_all(home.join(".codex")).expect("dir must be creatable");
    fs::create_dir_all(home.join(".config/goose")).expect("dir must be creatable");
    let codex = "model = \"o3\"\n[mcp_servers.docs]\ncommand = \"docs\"\n";
    fs::write(home.join(".codex/config.toml"), codex).expect("config must be writable");
    let goose = "GOOSE_MODE: auto\nextensions:\n  fetch: { type: stdio, cmd: uvx }\n";
    fs::write(home.join(".config/goose/config.yaml"), goose).expect("config must be writable");

    // `import = ["~/.codex/config.toml"]` in a toolgate.toml.
    fs::write(
        dir.path().join("toolgate.toml"),
        "import = [\"~/.codex/config.toml\"]\n[servers.own]\ncommand = \"own\"\n",
    )
    .expect("config must be writable");
    let loaded = load_with(None, &env).expect("config must load").expect("config must be found");
    let names: Vec<&str> = loaded.config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["docs", "own"]);
    assert!(loaded.config.warnings.iter().any(
        |w| w == "~/.codex/config.toml: model: ignored (a Codex setting, not an MCP server's)"
    ));

    // `--config ~/.config/goose/config.yaml`, and Codex's file as a whole config.
    let goose = load_with(Some(&home.join(".config/goose/config.yaml")), &env)
        .expect("config must load")
        .expect("config must be found");
    assert_eq!(goose.config.servers[0].name, "fetch");
    let codex = load_with(Some(&home.join(".codex/config.toml")), &env)
        .expect("config must load")
        .expect("config must be found");
    assert_eq!(codex.config.servers[0].name, "docs");
}

#[test]
fn errors_carry_their_file() {
    let dir = tempfile::tempdir().expect("temp dir must be creatable");
    let path = dir.path().join("toolgate.toml");
    fs::write(&path, "[gateway]\nlisten = \"nope\"\n").expect("config must be writable");
    let errors = toolgate_config::load_file(&path, &env()).expect_err("must fail");
    assert_eq!(errors.file(), Some(path.as_path()));
    assert_eq!(errors.len(), 1);
}

#[test]
fn load_with_the_real_environment() {
    // Reads the process environment but changes nothing.
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid/minimal_stdio.toml");
    let loaded = toolgate_config::load(Some(&path))
        .expect("fixture must load")
        .expect("explicit path must be found");
    assert_eq!(loaded.config.servers.len(), 1);
}

#[test]
fn unknown_extension_is_sniffed() {
    let dir = tempfile::tempdir().expect("temp dir must be creatable");
    let json = dir.path().join("claude_config");
    fs::write(&json, r#"{"mcpServers": {"j": {"command": "j"}}}"#).expect("must be writable");
    let toml = dir.path().join("gateway.conf");
    fs::write(&toml, "[servers.t]\ncommand = \"t\"\n").expect("must be writable");
    for (path, name) in [(json, "j"), (toml, "t")] {
        let config = toolgate_config::load_file(&path, &env()).expect("config must load");
        assert_eq!(config.servers[0].name, name);
    }
}

#[test]
fn check_file_keeps_what_is_valid_beside_every_problem() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("toolgate.toml");
    fs::write(
        &path,
        "[servers.good]\ncommand = \"x\"\n[servers.bad]\ncomand = \"x\"\n\
         [[pipeline]]\nkind = \"policy\"\nmode = \"audit\"\n[[pipeline]]\nkind = 3\n\
         [admin]\nlisten = \"nope\"\n",
    )
    .expect("write");
    let checked = toolgate_config::check_file(&path, &env());
    assert_eq!(checked.path, path);
    let paths: Vec<_> = checked.errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        ["servers.bad.comand", "servers.bad", "pipeline[1].kind", "admin.listen", "admin"]
    );
    assert_eq!(checked.errors.file(), Some(path.as_path()));
    let names: Vec<_> = checked.config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["good"]);
    assert_eq!(checked.config.pipeline.len(), 1);
    assert_eq!(checked.config.pipeline[0].mode, toolgate_config::Mode::Audit);
    assert_eq!(checked.config.admin, None);
    assert!(checked.clone().into_result().is_err());

    fs::write(&path, "[servers.good]\ncommand = \"x\"\n").expect("write");
    let valid = toolgate_config::check_file(&path, &env());
    assert!(valid.errors.is_empty());
    assert_eq!(valid.into_result().expect("valid").servers.len(), 1);
}

#[test]
fn http_servers_keep_connections_alive_unless_pool_is_false() {
    let config = toml(
        r#"
        [servers.kept]
        url = "http://127.0.0.1:9/mcp"

        [servers.single]
        url = "http://127.0.0.1:9/sse"
        transport = "sse"
        pool = false
        "#,
    )
    .expect("config must load");
    let pools: Vec<(&str, bool)> = config
        .servers
        .iter()
        .map(|server| match &server.transport {
            TransportConfig::Http(http) => (server.name.as_str(), http.pool),
            _ => panic!("{} is a url server", server.name),
        })
        .collect();
    assert_eq!(pools, [("kept", true), ("single", false)]);

    // Client JSON files have no such key: their servers keep the default.
    let json = parse_str(
        r#"{"mcpServers": {"remote": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}"#,
        Format::Json,
        Path::new("/etc/toolgate"),
        &env(),
    )
    .expect("config must load");
    let TransportConfig::Http(http) = &json.servers[0].transport else { panic!("http expected") };
    assert!(http.pool);
}

#[test]
fn audit_required_is_read_and_needs_a_file() {
    let config = toml("[audit]\nfile = \"audit.jsonl\"\nrequired = true\n").expect("valid");
    assert!(config.audit.required);
    let config = toml("[audit]\nfile = \"audit.jsonl\"\n").expect("valid");
    assert!(!config.audit.required, "off unless asked");
    let errors = toml("[audit]\nrequired = true\n").expect_err("no file").to_string();
    assert!(errors.contains("audit.required: needs `file`"), "{errors}");
    let errors = toml("[audit]\nfile = \"a\"\nrequired = \"yes\"\n").expect_err("no bool");
    assert!(errors.to_string().contains("audit.required"), "{errors}");
}
