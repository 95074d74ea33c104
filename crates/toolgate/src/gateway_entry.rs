//! toolgate's own entry in an MCP client's config file, the one `toolgate install` writes: its
//! name, what it runs, and how a server read from a client's file is recognised as it (so
//! that `toolgate import` never imports toolgate into itself).

use std::path::Path;

use toolgate_config::{Secret, ServerConfig, TransportConfig};

/// The entry's name in the client's file.
pub(crate) const NAME: &str = "toolgate";

/// What the client runs to reach its servers through toolgate: `toolgate serve --stdio
/// --config FILE`, with the variables standing for the secrets that moved out of the
/// client's servers.
#[derive(Debug, Clone)]
pub(crate) struct GatewayEntry {
    pub(crate) command: String,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, Secret)>,
}

impl GatewayEntry {
    /// The entry running the binary at `exe` with the config at `config` (both absolute).
    pub(crate) fn new(exe: &Path, config: &Path, env: Vec<(String, Secret)>) -> GatewayEntry {
        GatewayEntry {
            command: exe.display().to_string(),
            args: vec![
                "serve".into(),
                "--stdio".into(),
                "--config".into(),
                config.display().to_string(),
            ],
            env,
        }
    }
}

/// Whether `server` is toolgate's own entry: a toolgate binary run as `serve`.
pub(crate) fn is_gateway(server: &ServerConfig) -> bool {
    match &server.transport {
        TransportConfig::Stdio(stdio) => {
            is_toolgate_command(&stdio.command) && stdio.args.iter().any(|arg| arg == "serve")
        }
        _ => false,
    }
}

/// Whether `command` runs a program called toolgate.
pub(crate) fn is_toolgate_command(command: &str) -> bool {
    Path::new(command)
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name == "toolgate" || name == "toolgate.exe")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_toolgate_binary_run_as_serve_is_the_gateway() {
        let stdio = |command: &str, args: &[&str]| {
            ServerConfig::new(
                "x",
                TransportConfig::Stdio(toolgate_config::StdioConfig::new(
                    command,
                    args.iter().map(|a| (*a).to_owned()).collect(),
                )),
            )
        };
        assert!(is_gateway(&stdio("/opt/bin/toolgate", &["serve", "--stdio"])));
        assert!(is_gateway(&stdio("toolgate", &["--config", "a.toml", "serve"])));
        assert!(!is_gateway(&stdio("toolgate", &["tools"])));
        assert!(!is_gateway(&stdio("/usr/bin/toolgate-fixture", &["serve"])));
        assert!(!is_gateway(&stdio("npx", &["toolgate", "serve"])));
    }
}
