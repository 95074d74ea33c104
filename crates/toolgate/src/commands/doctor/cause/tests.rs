//! The classifier against what launchers really print: npm 11's E404, uvx's unresolvable
//! package, Node's EADDRINUSE stack, the shells' and `env`'s missing commands, and the
//! upstream layer's own errors.

use std::path::Path;
use std::time::Duration;

use toolgate_config::{FixedEnvironment, Format, ServerConfig};
use toolgate_upstream::{ConnectError, Endpoint, ExitReason, StderrTail};

use super::*;

fn server(toml: &str) -> ServerConfig {
    let text = format!("[servers.s]\n{toml}\n");
    toolgate_config::parse_str(&text, Format::Toml, Path::new("/"), &FixedEnvironment::new())
        .expect("valid")
        .servers
        .remove(0)
}

fn diagnose(config: &ServerConfig, error: &ConnectError) -> Diagnosis {
    let server = Server { name: &config.name, transport: &config.transport, in_toolgate: true };
    connect_failure(&server, error, false)
}

fn tail(text: &str) -> StderrTail {
    StderrTail(text.lines().map(str::to_owned).collect())
}

fn exited(command: &str, status: i32, stderr: &str) -> ConnectError {
    ConnectError::Exited {
        endpoint: Endpoint::Command(command.into()),
        exit: ExitReason::Status(status),
        stderr: tail(stderr),
    }
}

/// npm 11.19's output for `npx -y @modelcontextprotocol/server-doesnotexist`.
const NPM_11_E404: &str = "\
npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-doesnotexist
npm error 404
npm error 404  The requested resource '@modelcontextprotocol/server-doesnotexist@*' could not be found or you do not have permission to access it.
npm error 404
npm error 404 Note that you can also install from a
npm error 404 tarball, folder, http url, or git url.
npm error A complete log of this run can be found in: /home/ada/.npm/_logs/2026-11-29T20_20_05_030Z-debug-0.log";

/// npm 10's wording of the same.
const NPM_10_E404: &str = "\
npm ERR! code E404
npm ERR! 404 Not Found - GET https://registry.npmjs.org/mcp-nope - Not found
npm ERR! 404
npm ERR! 404  'mcp-nope@latest' is not in this registry.";

/// uv 0.9's output for `uvx mcp-server-nope`, wrapped as it wraps on a terminal.
const UVX_NOT_FOUND: &str = "  × No solution found when resolving tool dependencies:
  ╰─▶ Because mcp-server-nope was not found in the package registry and you require
      mcp-server-nope, we can conclude that your requirements are unsatisfiable.";

/// Node 20's uncaught `listen` error (its last twelve lines, as the upstream layer keeps).
const NODE_EADDRINUSE: &str = "\
Error: listen EADDRINUSE: address already in use 127.0.0.1:33503
    at Server.setupListenHandle [as _listen2] (node:net:1908:16)
    at listenInCluster (node:net:1965:12)
    at doListen (node:net:2139:7)
    at process.processTicksAndRejections (node:internal/process/task_queues:83:21)
Emitted 'error' event on Server instance at:
    at emitErrorNT (node:net:1944:8)
    at process.processTicksAndRejections (node:internal/process/task_queues:82:21) {
  code: 'EADDRINUSE',
  errno: -98,
  syscall: 'listen',
  address: '127.0.0.1',
  port: 33503
}

Node.js v20.20.2";

#[test]
fn npm_11_e404_names_the_package() {
    let config =
        server("command = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-doesnotexist\"]");
    let d = diagnose(&config, &exited("npx", 1, NPM_11_E404));
    assert_eq!(d.cause, Cause::PackageNotFound);
    assert_eq!(d.subject.as_deref(), Some("@modelcontextprotocol/server-doesnotexist"));
    assert!(
        d.next_step.contains("npm registry has no `@modelcontextprotocol/server-doesnotexist`"),
        "{}",
        d.next_step
    );
    assert!(d.detail.contains("exited with status 1"), "{}", d.detail);
}

#[test]
fn npm_10_e404_and_the_registry_url_name_the_package_too() {
    let config = server("command = \"npx\"\nargs = [\"mcp-nope@latest\"]");
    let d = diagnose(&config, &exited("npx", 1, NPM_10_E404));
    assert_eq!((d.cause, d.subject.as_deref()), (Cause::PackageNotFound, Some("mcp-nope")));
    let only_url =
        "npm error 404 Not Found - GET https://registry.npmjs.org/@acme%2fmcp - Not found";
    let d = diagnose(&config, &exited("npx", 1, only_url));
    assert_eq!(d.subject.as_deref(), Some("@acme/mcp"));
    let neither = "npm error code E404";
    let config =
        server("command = \"npx\"\nargs = [\"--yes\", \"--package=@acme/tool@2\", \"tool\"]");
    let d = diagnose(&config, &exited("npx", 1, neither));
    assert_eq!(d.subject.as_deref(), Some("@acme/tool"), "from --package");
}

#[test]
fn uvx_and_pip_name_the_package() {
    let config = server("command = \"uvx\"\nargs = [\"mcp-server-nope\"]");
    let d = diagnose(&config, &exited("uvx", 1, UVX_NOT_FOUND));
    assert_eq!(d.cause, Cause::PackageNotFound);
    assert_eq!(d.subject.as_deref(), Some("mcp-server-nope"));
    assert!(d.next_step.contains("Python package index"), "{}", d.next_step);

    let config = server("command = \"uvx\"\nargs = [\"--from\", \"acme-mcp==1.2\", \"acme\"]");
    let d = diagnose(
        &config,
        &exited("uvx", 1, "  × No solution found when resolving tool dependencies:"),
    );
    assert_eq!(d.subject.as_deref(), Some("acme-mcp"), "from --from, without the version");

    let pip = "ERROR: Could not find a version that satisfies the requirement mcp-x (from versions: none)\n\
               ERROR: No matching distribution found for mcp-x";
    let d = diagnose(&config, &exited("python", 1, pip));
    assert_eq!((d.cause, d.subject.as_deref()), (Cause::PackageNotFound, Some("mcp-x")));
}

#[test]
fn node_eaddrinuse_names_the_port() {
    let config = server("command = \"node\"\nargs = [\"server.js\"]");
    let d = diagnose(&config, &exited("node", 1, NODE_EADDRINUSE));
    assert_eq!((d.cause, d.subject.as_deref()), (Cause::PortInUse, Some("33503")));
    assert!(d.next_step.contains("port 33503"), "{}", d.next_step);
    // Only the fields of Node's error in the tail: the port still comes from them.
    let fields = "  code: 'EADDRINUSE',\n  errno: -98,\n  syscall: 'listen',\n  port: 8080\n}";
    assert_eq!(diagnose(&config, &exited("node", 1, fields)).subject.as_deref(), Some("8080"));
    let python = "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000): address already in use";
    assert_eq!(diagnose(&config, &exited("python", 1, python)).subject.as_deref(), Some("8000"));
    let unknown = "OSError: [Errno 98] Address already in use";
    let d = diagnose(&config, &exited("python", 1, unknown));
    assert_eq!((d.cause, d.subject), (Cause::PortInUse, None));
}

#[test]
fn a_missing_command_says_what_to_install() {
    let config = server("command = \"npx\"\nargs = [\"-y\", \"x\"]");
    let spawn = ConnectError::Spawn { command: "npx".into(), cause: "command not found".into() };
    let d = diagnose(&config, &spawn);
    assert_eq!((d.cause, d.subject.as_deref()), (Cause::MissingCommand, Some("npx")));
    assert!(d.next_step.starts_with("install Node.js"), "{}", d.next_step);
    let for_ = |command: &str| {
        let spawn =
            ConnectError::Spawn { command: command.into(), cause: "command not found".into() };
        diagnose(&config, &spawn).next_step
    };
    assert!(for_("uvx").starts_with("install uv "), "{}", for_("uvx"));
    assert!(for_("python3").starts_with("install Python"));
    assert!(for_("docker").starts_with("install Docker"));
    assert!(for_("/opt/x/mcp-thing").starts_with("fix the path: `/opt/x/mcp-thing`"));
    assert!(for_("mcp-thing").starts_with("install `mcp-thing`"));
    let denied = ConnectError::Spawn {
        command: "./s.sh".into(),
        cause: "permission denied (is it executable?)".into(),
    };
    assert_eq!(diagnose(&config, &denied).cause, Cause::NotExecutable);
}

#[test]
fn a_command_a_script_or_shell_cannot_find_is_a_missing_command() {
    let config = server("command = \"mcp-server-everything\"");
    for (stderr, command) in [
        ("/usr/bin/env: 'node': No such file or directory", "node"),
        ("env: node: No such file or directory", "node"),
        ("sh: 1: uvx: not found", "uvx"),
        ("bash: line 1: docker: command not found", "docker"),
        ("zsh: command not found: python3", "python3"),
    ] {
        let d = diagnose(&config, &exited("mcp-server-everything", 127, stderr));
        assert_eq!(
            (d.cause, d.subject.as_deref()),
            (Cause::MissingCommand, Some(command)),
            "{stderr}"
        );
    }
    assert_eq!(missing_command_in("Error: file not found: config.json"), None);
}

#[test]
fn an_exit_or_a_timeout_says_what_it_knows() {
    let config = server("command = \"sh\"");
    let d = diagnose(&config, &exited("sh", 3, "starting\nmissing API key"));
    assert_eq!(d.cause, Cause::Exited);
    assert_eq!(d.next_step, "it exited with status 3, saying: missing API key; fix what it says");
    let quiet = exited("sh", 0, "");
    assert!(diagnose(&config, &quiet).next_step.contains("without a word"));
    let closed = ConnectError::Failed {
        endpoint: Endpoint::Command("sh".into()),
        cause: "the process exited (or closed its output) before completing the MCP handshake"
            .into(),
        stderr: tail("bye"),
    };
    assert_eq!(diagnose(&config, &closed).cause, Cause::Exited, "its status unknown");
    let slow = ConnectError::StartupTimeout {
        endpoint: Endpoint::Command("sh".into()),
        timeout: Duration::from_secs(30),
        stderr: tail("downloading..."),
    };
    let d = diagnose(&config, &slow);
    assert_eq!(d.cause, Cause::Timeout);
    assert!(
        d.next_step.contains("within 30s") && d.next_step.contains("--timeout"),
        "{}",
        d.next_step
    );
}

#[test]
fn http_failures_say_login_or_where() {
    let url = "http://127.0.0.1:9/mcp";
    let failed = |cause: &str| ConnectError::Failed {
        endpoint: Endpoint::Url(url.into()),
        cause: cause.into(),
        stderr: StderrTail::default(),
    };
    let config = server(&format!("url = {url:?}"));
    let d = diagnose(&config, &failed("connection refused"));
    assert_eq!((d.cause, d.subject.as_deref()), (Cause::Unreachable, Some(url)));
    assert!(d.next_step.contains(url));
    let d = diagnose(&config, &failed("cannot resolve host `nowhere.invalid`"));
    assert!(d.next_step.contains("does not resolve"), "{}", d.next_step);
    let d = diagnose(
        &config,
        &failed(
            "the server answered 401 Unauthorized (it wants credentials: set `headers`, such as Authorization)",
        ),
    );
    assert_eq!((d.cause, d.next_step.as_str()), (Cause::NeedsLogin, "sign in: toolgate login s"));
    let needs = ConnectError::NeedsLogin { server: "s".into() };
    let client_only = Server { name: "s", transport: &config.transport, in_toolgate: false };
    let d = connect_failure(&client_only, &needs, false);
    assert!(d.next_step.ends_with("then run: toolgate login s"), "{}", d.next_step);
    let with_header =
        server(&format!("url = {url:?}\nheaders = {{ Authorization = \"Bearer abc\" }}"));
    let d = diagnose(&with_header, &failed("the server answered 403 Forbidden"));
    assert!(
        d.next_step.contains("(Authorization)") && !d.next_step.contains("abc"),
        "{}",
        d.next_step
    );
    let d = diagnose(&config, &failed("the server answered 500 (the server failed)"));
    assert_eq!(d.cause, Cause::Other);
    assert!(d.next_step.contains("500"), "{}", d.next_step);
}

#[test]
fn a_config_problem_names_the_variable() {
    let d = config_problems(&[
        "mcpServers.gh.env.TOKEN: environment variable GITHUB_PAT is not set".into(),
    ]);
    assert_eq!((d.cause, d.subject.as_deref()), (Cause::MissingVariable, Some("GITHUB_PAT")));
    assert!(d.next_step.starts_with("set GITHUB_PAT "));
    let d = config_problems(&["servers.x.url: not a URL".into()]);
    assert_eq!(d.cause, Cause::InvalidConfig);
}
