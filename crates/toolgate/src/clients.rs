//! The MCP clients whose config files `toolgate import` knows where to find: each one's name,
//! aliases and standard paths (user-wide under the home directory, and per project under the
//! current directory), on Linux and macOS.

use std::path::{Path, PathBuf};

/// Where a config file is, relative to what.
#[derive(Debug, Clone, Copy)]
enum Base {
    /// The home directory.
    Home,
    /// The current directory (a project's own file).
    Project,
}

/// One of a client's config files.
#[derive(Debug, Clone, Copy)]
struct Place {
    base: Base,
    /// On Linux (and any other Unix but macOS).
    linux: &'static str,
    /// On macOS.
    macos: &'static str,
}

const fn both(base: Base, path: &'static str) -> Place {
    Place { base, linux: path, macos: path }
}

/// An MCP client.
#[derive(Debug)]
pub(crate) struct Client {
    /// The name given on the command line, also the suffix of a renamed server.
    pub(crate) name: &'static str,
    /// Other names accepted for it.
    aliases: &'static [&'static str],
    /// Its name for people.
    pub(crate) title: &'static str,
    places: &'static [Place],
}

/// Every client, in the order their servers are imported (the first keeps a shared name).
pub(crate) const CLIENTS: &[Client] = &[
    Client {
        name: "claude-desktop",
        aliases: &["claude", "claude_desktop"],
        title: "Claude Desktop",
        places: &[Place {
            base: Base::Home,
            linux: ".config/Claude/claude_desktop_config.json",
            macos: "Library/Application Support/Claude/claude_desktop_config.json",
        }],
    },
    Client {
        name: "claude-code",
        aliases: &["claude_code"],
        title: "Claude Code",
        places: &[both(Base::Home, ".claude.json"), both(Base::Project, ".mcp.json")],
    },
    Client {
        name: "cursor",
        aliases: &[],
        title: "Cursor",
        places: &[both(Base::Home, ".cursor/mcp.json"), both(Base::Project, ".cursor/mcp.json")],
    },
    Client {
        name: "vscode",
        aliases: &["code", "vs-code"],
        title: "VS Code",
        places: &[
            Place {
                base: Base::Home,
                linux: ".config/Code/User/mcp.json",
                macos: "Library/Application Support/Code/User/mcp.json",
            },
            both(Base::Project, ".vscode/mcp.json"),
        ],
    },
    Client {
        name: "windsurf",
        aliases: &[],
        title: "Windsurf",
        places: &[both(Base::Home, ".codeium/windsurf/mcp_config.json")],
    },
    Client {
        name: "gemini",
        aliases: &["gemini-cli"],
        title: "Gemini CLI",
        places: &[
            both(Base::Home, ".gemini/settings.json"),
            both(Base::Project, ".gemini/settings.json"),
        ],
    },
    Client {
        name: "zed",
        aliases: &[],
        title: "Zed",
        places: &[both(Base::Home, ".config/zed/settings.json")],
    },
    Client {
        name: "continue",
        aliases: &[],
        title: "Continue",
        places: &[both(Base::Home, ".continue/config.yaml")],
    },
    Client {
        name: "goose",
        aliases: &[],
        title: "goose",
        places: &[both(Base::Home, ".config/goose/config.yaml")],
    },
    Client {
        name: "codex",
        aliases: &[],
        title: "Codex",
        places: &[both(Base::Home, ".codex/config.toml")],
    },
];

/// The client called `name` (or one of its aliases), ignoring case.
pub(crate) fn find(name: &str) -> Option<&'static Client> {
    CLIENTS.iter().find(|client| {
        client.name.eq_ignore_ascii_case(name)
            || client.aliases.iter().any(|alias| alias.eq_ignore_ascii_case(name))
    })
}

/// Every client's name, for messages.
pub(crate) fn names() -> String {
    CLIENTS.iter().map(|client| client.name).collect::<Vec<_>>().join(", ")
}

impl Client {
    /// Its config files' standard paths on this system, user-wide first; those under an
    /// unknown directory are left out.
    pub(crate) fn paths(&self, home: Option<&Path>, project: Option<&Path>) -> Vec<PathBuf> {
        self.places
            .iter()
            .filter_map(|place| {
                let base = match place.base {
                    Base::Home => home?,
                    Base::Project => project?,
                };
                let relative = if cfg!(target_os = "macos") { place.macos } else { place.linux };
                Some(base.join(relative))
            })
            .collect()
    }

    /// Those of [`Client::paths`] that exist.
    pub(crate) fn existing(&self, home: Option<&Path>, project: Option<&Path>) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> =
            self.paths(home, project).into_iter().filter(|path| path.is_file()).collect();
        // A project directory that is the home directory names the same file twice.
        found.dedup();
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_find_their_client() {
        assert_eq!(find("Cursor").map(|c| c.name), Some("cursor"));
        assert_eq!(find("code").map(|c| c.name), Some("vscode"));
        assert_eq!(find("gemini-cli").map(|c| c.name), Some("gemini"));
        assert!(find("notepad").is_none());
    }

    #[test]
    fn paths_are_under_home_and_project() {
        let client = find("claude-code").expect("known");
        let paths = client.paths(Some(Path::new("/h")), Some(Path::new("/p")));
        assert_eq!(paths, [PathBuf::from("/h/.claude.json"), PathBuf::from("/p/.mcp.json")]);
        assert_eq!(client.paths(Some(Path::new("/h")), None).len(), 1);
    }
}
