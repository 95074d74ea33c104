//! Why a server did not start, and the one thing to do about it: a pure function from what
//! `doctor` knows (the server's transport, the upstream layer's [`ConnectError`] with the
//! child's last stderr lines, the loader's problems) to a [`Diagnosis`].
//!
//! The child's stderr is read for what the usual launchers print: a shell or `env` that finds
//! no such command, npm's `E404`, uv's and pip's package that is not in the registry, an
//! `EADDRINUSE`. What it says is tried before the transport's own words, which only say that
//! the process ended.

use toolgate_config::TransportConfig;
use toolgate_upstream::{ConnectError, Endpoint};

/// What went wrong, as a script reads it (`code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The command (or the interpreter a script names) is not installed.
    MissingCommand,
    /// The command exists but cannot be run.
    NotExecutable,
    /// npm, uv or pip found no such package.
    PackageNotFound,
    /// The server wanted a port another program holds.
    PortInUse,
    /// An HTTP server wants a sign-in or other credentials.
    NeedsLogin,
    /// Nothing answers at an HTTP server's URL, or its host name does not resolve.
    Unreachable,
    /// The process ended during start-up.
    Exited,
    /// No MCP handshake within the time allowed.
    Timeout,
    /// The config references an environment variable that is not set.
    MissingVariable,
    /// The config has another problem with this server.
    InvalidConfig,
    /// Anything else.
    Other,
}

impl Cause {
    /// Its name in `--json`.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Cause::MissingCommand => "missing_command",
            Cause::NotExecutable => "not_executable",
            Cause::PackageNotFound => "package_not_found",
            Cause::PortInUse => "port_in_use",
            Cause::NeedsLogin => "needs_login",
            Cause::Unreachable => "unreachable",
            Cause::Exited => "exited",
            Cause::Timeout => "timeout",
            Cause::MissingVariable => "missing_variable",
            Cause::InvalidConfig => "invalid_config",
            Cause::Other => "other",
        }
    }

    /// Its name for people.
    pub(crate) fn words(self) -> &'static str {
        match self {
            Cause::MissingCommand => "command not found",
            Cause::NotExecutable => "command cannot be run",
            Cause::PackageNotFound => "package not found",
            Cause::PortInUse => "port in use",
            Cause::NeedsLogin => "needs a login",
            Cause::Unreachable => "unreachable",
            Cause::Exited => "exited during start-up",
            Cause::Timeout => "no answer in time",
            Cause::MissingVariable => "environment variable not set",
            Cause::InvalidConfig => "invalid config",
            Cause::Other => "failed",
        }
    }
}

/// Why one server failed and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Diagnosis {
    pub(crate) cause: Cause,
    /// What the cause is about: the command, package, port, URL or variable.
    pub(crate) subject: Option<String>,
    /// The whole error, as the upstream layer or the loader worded it.
    pub(crate) detail: String,
    /// The one next step.
    pub(crate) next_step: String,
}

/// The server a failure is about.
pub(crate) struct Server<'a> {
    pub(crate) name: &'a str,
    pub(crate) transport: &'a TransportConfig,
    /// Whether toolgate's own config has it (so that `toolgate login NAME` finds it).
    pub(crate) in_toolgate: bool,
}

/// Why `server` did not start, from the upstream layer's error and whether the server said it
/// wants a login.
pub(crate) fn connect_failure(
    server: &Server<'_>,
    error: &ConnectError,
    needs_login: bool,
) -> Diagnosis {
    let detail = error.to_string();
    let diagnosis = |cause, subject: Option<String>, next_step: String| Diagnosis {
        cause,
        subject,
        detail: detail.clone(),
        next_step,
    };
    if needs_login || matches!(error, ConnectError::NeedsLogin { .. }) {
        return diagnosis(Cause::NeedsLogin, None, login_step(server));
    }
    if let ConnectError::Spawn { command, cause } = error {
        return if cause.starts_with("permission denied") {
            let step = format!("make `{command}` executable (chmod +x), or fix the path to it");
            diagnosis(Cause::NotExecutable, Some(command.clone()), step)
        } else {
            diagnosis(Cause::MissingCommand, Some(command.clone()), install_step(command))
        };
    }
    let stderr = match error {
        ConnectError::Failed { stderr, .. }
        | ConnectError::StartupTimeout { stderr, .. }
        | ConnectError::Exited { stderr, .. } => stderr.0.as_slice(),
        _ => &[],
    };
    if let Some(found) = from_stderr(server, stderr) {
        return diagnosis(found.cause, found.subject, found.next_step);
    }
    match error {
        ConnectError::StartupTimeout { timeout, .. } => {
            let waited = toolgate_core::duration::format(*timeout);
            let step = format!(
                "it did not complete the MCP handshake within {waited}: if it is only slow (a \
                 first npx or uvx run downloads the package), try again with a longer \
                 --timeout; else check that it is an MCP server speaking on stdin and stdout"
            );
            diagnosis(Cause::Timeout, None, step)
        }
        ConnectError::Exited { exit, stderr, .. } => {
            let step = match stderr.0.last() {
                Some(line) => {
                    format!("it exited {exit}, saying: {}; fix what it says", line.trim())
                }
                None => {
                    format!("it exited {exit} without a word on stderr; run it by hand to see why")
                }
            };
            diagnosis(Cause::Exited, None, step)
        }
        ConnectError::Failed { cause, endpoint, .. } => match endpoint {
            // The URL as the upstream layer shows it: without credentials or query.
            Endpoint::Url(url) => http_failure(server, url, cause).map_or_else(
                || diagnosis(Cause::Other, None, fix_what_it_says(&detail)),
                |(cause, subject, step)| diagnosis(cause, subject, step),
            ),
            _ if cause.starts_with("the process exited") => {
                let step = match stderr.last() {
                    Some(line) => format!("it exited, saying: {}; fix what it says", line.trim()),
                    None => "it exited without a word on stderr; run it by hand to see why".into(),
                };
                diagnosis(Cause::Exited, None, step)
            }
            _ => diagnosis(Cause::Other, None, fix_what_it_says(&detail)),
        },
        _ => diagnosis(Cause::Other, None, fix_what_it_says(&detail)),
    }
}

/// Why a server the loader left out could not be started: its problems (`messages`, each
/// `path: message`).
pub(crate) fn config_problems(messages: &[String]) -> Diagnosis {
    let detail = messages.join("; ");
    let unset = messages.iter().find_map(|message| {
        let rest = message.split("environment variable ").nth(1)?;
        let name = rest.strip_suffix(" is not set")?;
        Some(name.to_owned())
    });
    match unset {
        Some(name) => Diagnosis {
            cause: Cause::MissingVariable,
            next_step: format!(
                "set {name} in the environment toolgate runs in (the config refers to it)"
            ),
            subject: Some(name),
            detail,
        },
        None => Diagnosis {
            cause: Cause::InvalidConfig,
            subject: None,
            detail,
            next_step: "fix the config as the detail says (`toolgate config check` for \
                        toolgate.toml)"
                .into(),
        },
    }
}

/// A cause read from the child's stderr.
struct Found {
    cause: Cause,
    subject: Option<String>,
    next_step: String,
}

fn from_stderr(server: &Server<'_>, lines: &[String]) -> Option<Found> {
    if lines.is_empty() {
        return None;
    }
    if let Some(command) = lines.iter().rev().find_map(|line| missing_command_in(line)) {
        return Some(Found {
            cause: Cause::MissingCommand,
            next_step: install_step(&command),
            subject: Some(command),
        });
    }
    // Lines joined: uv wraps its sentences to the terminal's width.
    let text = lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
    if let Some((registry, package)) = missing_package(&text, server.transport) {
        let step = match &package {
            Some(package) => format!(
                "check the package name and version: {registry} has no `{package}` (or it is \
                 private and needs a login)"
            ),
            None => format!("check the package name and version: {registry} has no such package"),
        };
        return Some(Found { cause: Cause::PackageNotFound, subject: package, next_step: step });
    }
    if let Some(port) = port_in_use(lines) {
        let (subject, step) = match port {
            Some(port) => (
                Some(port.to_string()),
                format!(
                    "another program listens on port {port}: stop it (`ss -ltnp` or `lsof -i \
                     :{port}` shows which), or give this server another port"
                ),
            ),
            None => (
                None,
                "another program holds the address it wants: stop it, or give this server \
                 another port"
                    .to_owned(),
            ),
        };
        return Some(Found { cause: Cause::PortInUse, subject, next_step: step });
    }
    None
}

/// The command a shell or `env` says it cannot find, in one stderr line: `/usr/bin/env:
/// 'node': No such file or directory`, `sh: 1: uvx: not found`, `bash: npx: command not
/// found`, `zsh: command not found: python`.
fn missing_command_in(line: &str) -> Option<String> {
    let line = line.trim();
    let name = if let Some(rest) = line.split("command not found: ").nth(1) {
        rest
    } else if let Some(head) =
        line.strip_suffix(": command not found").or_else(|| line.strip_suffix(": not found"))
    {
        head.rsplit(": ").next()?
    } else if line.contains("env: ") && line.ends_with(": No such file or directory") {
        let head = line.strip_suffix(": No such file or directory")?;
        head.rsplit("env: ").next()?
    } else {
        return None;
    };
    let name = name.trim().trim_matches(|c| matches!(c, '\'' | '"' | '`' | '‘' | '’'));
    let plausible = !name.is_empty()
        && name.len() <= 128
        && !name.contains(char::is_whitespace)
        && !name.chars().all(|c| c.is_ascii_digit());
    plausible.then(|| name.to_owned())
}

/// The registry that has no package, and the package's name when it can be told: npm's
/// `E404`, uv's `was not found in the package registry` / `No solution found`, pip's `No
/// matching distribution found for`.
fn missing_package(
    text: &str,
    transport: &TransportConfig,
) -> Option<(&'static str, Option<String>)> {
    let args = match transport {
        TransportConfig::Stdio(stdio) => stdio.args.as_slice(),
        _ => &[],
    };
    let npm = text.contains("npm error code E404")
        || text.contains("npm ERR! code E404")
        || text.contains("404 Not Found - GET")
        || text.contains("is not in this registry")
        || text.contains("could not be found or you do not have permission");
    if npm {
        let package = quoted_before(text, "' is not in this registry")
            .or_else(|| quoted_after(text, "The requested resource '"))
            .map(|spec| without_version(&spec))
            .or_else(|| npm_url_package(text))
            .or_else(|| first_positional(args, &["-p", "--package"]));
        return Some(("the npm registry", package));
    }
    let pip = text.contains("No matching distribution found for ");
    let uv = text.contains("was not found in the package registry")
        || text.contains("No solution found when resolving");
    if pip || uv {
        let package = text
            .split("No matching distribution found for ")
            .nth(1)
            .or_else(|| {
                let before = text.split(" was not found in the package registry").next()?;
                before.rsplit("Because ").next().filter(|_| before.contains("Because "))
            })
            .and_then(|rest| rest.split_whitespace().next())
            .map(without_version)
            .or_else(|| first_positional(args, &["--from", "--with"]));
        return Some(("the Python package index", package));
    }
    None
}

/// The text between `'` and `marker`, within the word before `marker`.
fn quoted_before(text: &str, marker: &str) -> Option<String> {
    let head = text.split(marker).next().filter(|_| text.contains(marker))?;
    let start = head.rfind('\'')?;
    Some(head[start + 1..].to_owned())
}

/// The text after `marker` up to the next `'`.
fn quoted_after(text: &str, marker: &str) -> Option<String> {
    let rest = text.split(marker).nth(1)?;
    Some(rest.split('\'').next()?.to_owned())
}

/// `@scope/name` of `404 Not Found - GET https://registry.npmjs.org/@scope%2fname`.
fn npm_url_package(text: &str) -> Option<String> {
    let url = text.split("404 Not Found - GET ").nth(1)?.split_whitespace().next()?;
    let path = url.split("://").nth(1)?.split_once('/')?.1;
    let name = path.replace("%2f", "/").replace("%2F", "/").replace("%40", "@");
    (!name.is_empty()).then_some(name)
}

/// `name` of `name@1.2`, `@scope/name@latest`, `name==1.2`, `name>=1`.
fn without_version(spec: &str) -> String {
    let spec = spec.trim_matches(|c: char| matches!(c, ',' | '.' | '\'' | '"'));
    let spec = spec.split(['=', '<', '>', '~', '!', '[']).next().unwrap_or(spec);
    match spec.rfind('@') {
        Some(at) if at > 0 => spec[..at].to_owned(),
        _ => spec.to_owned(),
    }
}

/// The package a launcher's arguments name: the value of the first of `options` given, else
/// the first argument that is not an option.
fn first_positional(args: &[String], options: &[&str]) -> Option<String> {
    let mut args = args.iter();
    let mut positional = None;
    while let Some(arg) = args.next() {
        if options.iter().any(|option| arg == option) {
            return args.next().map(|value| without_version(value)).or(positional);
        }
        if let Some(value) =
            options.iter().find_map(|o| arg.strip_prefix(&format!("{o}=")).map(str::to_owned))
        {
            return Some(without_version(&value));
        }
        if positional.is_none() && !arg.starts_with('-') {
            positional = Some(without_version(arg));
        }
    }
    positional
}

/// `Some(port)` when the child says an address is in use (`EADDRINUSE`, `address already in
/// use`, `[Errno 98]`), with the port when it says which.
fn port_in_use(lines: &[String]) -> Option<Option<u16>> {
    let said = |line: &str| {
        let lower = line.to_ascii_lowercase();
        lower.contains("eaddrinuse")
            || lower.contains("address already in use")
            || lower.contains("[errno 98]")
            || lower.contains("[errno 48]")
    };
    let at = lines.iter().position(|line| said(line))?;
    let port = port_of(&lines[at]).or_else(|| {
        // Node prints the error's fields after its stack: `  port: 3000`.
        lines[at..].iter().find_map(|line| line.trim().strip_prefix("port: ")?.parse().ok())
    });
    Some(port)
}

/// The last port a line names: `127.0.0.1:3000`, `:::3000`, `('127.0.0.1', 8000)`, `port
/// 3000`.
fn port_of(line: &str) -> Option<u16> {
    let bytes = line.as_bytes();
    let mut found = None;
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let before = &line[..start];
        let follows_port = before.ends_with(':')
            || before.ends_with(", ")
            || before.ends_with("port ")
            || before.ends_with("port: ");
        let ends_word = bytes.get(i).is_none_or(|b| !b.is_ascii_alphanumeric() && *b != b'.');
        if follows_port && ends_word {
            found = line[start..i].parse::<u16>().ok().filter(|p| *p > 0).or(found);
        }
    }
    found
}

/// An HTTP server's failure, from the upstream layer's words for it.
fn http_failure(
    server: &Server<'_>,
    url: &str,
    cause: &str,
) -> Option<(Cause, Option<String>, String)> {
    if cause.contains("answered 401") || cause.contains("answered 403") {
        return Some((Cause::NeedsLogin, None, login_step(server)));
    }
    if cause.contains("cannot resolve") {
        let step = format!("the host name of {url} does not resolve: check the URL");
        return Some((Cause::Unreachable, Some(url.to_owned()), step));
    }
    let unreachable = ["connection refused", "unreachable", "timed out", "reset the connection"];
    if unreachable.iter().any(|words| cause.contains(words)) {
        let step = format!("nothing answers at {url}: start that server, or fix the URL");
        return Some((Cause::Unreachable, Some(url.to_owned()), step));
    }
    if cause.contains("answered 404") || cause.contains("answered 405") {
        let step = format!("{url} is not an MCP endpoint: check its path (often /mcp, or /sse)");
        return Some((Cause::Other, Some(url.to_owned()), step));
    }
    None
}

/// The next step when nothing more is known: the error's first line.
fn fix_what_it_says(detail: &str) -> String {
    format!("fix what the error says: {}", detail.lines().next().unwrap_or_default())
}

/// What to do about a server that wants credentials.
fn login_step(server: &Server<'_>) -> String {
    let name = server.name;
    let headers = match server.transport {
        TransportConfig::Http(http) => http.headers.keys().cloned().collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    if !headers.is_empty() {
        return format!(
            "the server refused the credentials in its headers ({}): renew them",
            headers.join(", ")
        );
    }
    if server.in_toolgate {
        format!("sign in: toolgate login {name}")
    } else {
        format!(
            "sign in: add it to toolgate.toml (toolgate import), then run: toolgate login {name}"
        )
    }
}

/// What to install for a missing `command`.
fn install_step(command: &str) -> String {
    let program = command.rsplit('/').next().unwrap_or(command);
    let what = match program {
        "npx" | "npm" | "node" | "nodejs" | "corepack" => {
            Some("Node.js (it provides node, npm and npx: https://nodejs.org)")
        }
        "uvx" | "uv" => Some("uv (it provides uv and uvx: https://docs.astral.sh/uv/)"),
        "python" | "python3" | "pip" | "pip3" => Some("Python 3 (https://www.python.org)"),
        "docker" => Some("Docker (https://docs.docker.com/get-docker/)"),
        "bun" | "bunx" => Some("Bun (https://bun.sh)"),
        "deno" => Some("Deno (https://deno.com)"),
        _ => None,
    };
    match what {
        Some(what) => format!("install {what}, or put the folder that has `{program}` on PATH"),
        None if command.contains('/') => format!(
            "fix the path: `{command}` does not exist, or the interpreter on its first line \
             (#!) is not installed"
        ),
        None => format!("install `{program}`, or give its full path in the config"),
    }
}

#[cfg(test)]
mod tests;
