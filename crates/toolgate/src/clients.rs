//! The MCP clients whose config files `toolgate import` and `toolgate install` know: each one's
//! name, aliases, standard paths (user-wide under the home directory, and per project under the
//! current directory) on Linux and macOS, and how its file holds servers.

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

impl Place {
    /// Where it is on this system (none under an unknown directory).
    fn path(&self, home: Option<&Path>, project: Option<&Path>) -> Option<PathBuf> {
        let base = match self.base {
            Base::Home => home?,
            Base::Project => project?,
        };
        let relative = if cfg!(target_os = "macos") { self.macos } else { self.linux };
        Some(base.join(relative))
    }
}

const fn both(base: Base, path: &'static str) -> Place {
    Place { base, linux: path, macos: path }
}

/// How a client's file holds its MCP servers, for `toolgate install` to edit it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// A JSON object (comments allowed) of servers by name under a top-level key.
    Json { key: &'static str, shape: JsonShape },
    /// Codex's `config.toml`: `[mcp_servers.NAME]`.
    CodexToml,
    /// goose's `config.yaml`: the `extensions` map, by name.
    GooseYaml,
    /// Continue's `config.yaml`: the `mcpServers` list, each with its `name`.
    ContinueYaml,
}

/// How a JSON client writes one local server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonShape {
    /// `{"command", "args", "env"}` (Claude Desktop, Cursor, Windsurf, Gemini CLI).
    Plain,
    /// The same with `"type": "stdio"` (VS Code, Claude Code).
    Typed,
    /// Zed's `{"source": "custom", "command", "args", "env"}`.
    Zed,
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
    pub(crate) layout: Layout,
}

const fn json(key: &'static str, shape: JsonShape) -> Layout {
    Layout::Json { key, shape }
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
        layout: json("mcpServers", JsonShape::Plain),
    },
    Client {
        name: "claude-code",
        aliases: &["claude_code"],
        title: "Claude Code",
        places: &[both(Base::Home, ".claude.json"), both(Base::Project, ".mcp.json")],
        layout: json("mcpServers", JsonShape::Typed),
    },
    Client {
        name: "cursor",
        aliases: &[],
        title: "Cursor",
        places: &[both(Base::Home, ".cursor/mcp.json"), both(Base::Project, ".cursor/mcp.json")],
        layout: json("mcpServers", JsonShape::Plain),
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
        layout: json("servers", JsonShape::Typed),
    },
    Client {
        name: "windsurf",
        aliases: &[],
        title: "Windsurf",
        places: &[both(Base::Home, ".codeium/windsurf/mcp_config.json")],
        layout: json("mcpServers", JsonShape::Plain),
    },
    Client {
        name: "gemini",
        aliases: &["gemini-cli"],
        title: "Gemini CLI",
        places: &[
            both(Base::Home, ".gemini/settings.json"),
            both(Base::Project, ".gemini/settings.json"),
        ],
        layout: json("mcpServers", JsonShape::Plain),
    },
    Client {
        name: "zed",
        aliases: &[],
        title: "Zed",
        places: &[both(Base::Home, ".config/zed/settings.json")],
        layout: json("context_servers", JsonShape::Zed),
    },
    Client {
        name: "continue",
        aliases: &[],
        title: "Continue",
        places: &[both(Base::Home, ".continue/config.yaml")],
        layout: Layout::ContinueYaml,
    },
    Client {
        name: "goose",
        aliases: &[],
        title: "goose",
        places: &[both(Base::Home, ".config/goose/config.yaml")],
        layout: Layout::GooseYaml,
    },
    Client {
        name: "codex",
        aliases: &[],
        title: "Codex",
        places: &[both(Base::Home, ".codex/config.toml")],
        layout: Layout::CodexToml,
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
        self.places.iter().filter_map(|place| place.path(home, project)).collect()
    }

    /// The file `toolgate install` edits: the user-wide one, or with `project_scope` the
    /// project's own (none when the client has no such file, or its base is unknown).
    pub(crate) fn install_path(
        &self,
        home: Option<&Path>,
        project: Option<&Path>,
        project_scope: bool,
    ) -> Option<PathBuf> {
        let place = self
            .places
            .iter()
            .find(|place| matches!(place.base, Base::Project) == project_scope)?;
        place.path(home, project)
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
        let (home, project) = (Some(Path::new("/h")), Some(Path::new("/p")));
        assert_eq!(
            client.install_path(home, project, false),
            Some(PathBuf::from("/h/.claude.json"))
        );
        assert_eq!(client.install_path(home, project, true), Some(PathBuf::from("/p/.mcp.json")));
        assert_eq!(find("zed").expect("known").install_path(home, project, true), None);
    }
}
