//! The servers `doctor` tries: toolgate's own config's, then those of every client file
//! found, each definition once with every place it was found, toolgate's own entry left out.
//! A server the loader left out for a problem is kept too, with its problems, to be reported.

use std::path::Path;

use toolgate_config::{ConfigError, ServerConfig, TransportConfig};

/// What `from` says for toolgate's own config.
pub(crate) const TOOLGATE_CONFIG: &str = "toolgate.toml";

/// One server to report.
#[derive(Debug)]
pub(crate) struct Candidate {
    pub(crate) name: String,
    /// Its definition; `None` when the loader left it out for `problems`.
    pub(crate) config: Option<ServerConfig>,
    pub(crate) problems: Vec<String>,
    /// Where it was found: clients' names, or [`TOOLGATE_CONFIG`].
    pub(crate) from: Vec<String>,
    /// Whether one of its places is a file the user chose (toolgate's config, or a client's
    /// file under the home directory): a server found only in a project's own file (written
    /// by whoever wrote the working directory) is not started unless asked.
    pub(crate) chosen: bool,
}

impl Candidate {
    /// Whether toolgate's own config has it.
    pub(crate) fn in_toolgate(&self) -> bool {
        self.from.iter().any(|from| from == TOOLGATE_CONFIG)
    }
}

/// The servers found so far, each definition once.
#[derive(Debug, Default)]
pub(crate) struct Candidates(pub(crate) Vec<Candidate>);

impl Candidates {
    /// Adds the servers one file defines (`servers`, valid; `errors`, the problems of the
    /// others) found at `label`. Returns how many servers it has, and whether toolgate is
    /// installed in it (an entry that is toolgate itself, which is not added).
    pub(crate) fn add_file(
        &mut self,
        label: &str,
        chosen: bool,
        servers: &[ServerConfig],
        errors: &[ConfigError],
    ) -> (usize, bool) {
        let mut count = 0;
        let mut toolgate = false;
        for server in servers {
            if is_toolgate(server) {
                toolgate = true;
                continue;
            }
            count += 1;
            self.add(label, chosen, server);
        }
        let mut left_out: Vec<(String, Vec<String>)> = Vec::new();
        for error in errors {
            let Some(name) = server_of(&error.path) else { continue };
            match left_out.iter_mut().find(|(n, _)| *n == name) {
                Some((_, messages)) => messages.push(error.to_string()),
                None => left_out.push((name, vec![error.to_string()])),
            }
        }
        for (name, problems) in left_out {
            if name.eq_ignore_ascii_case("toolgate") {
                toolgate = true;
                continue;
            }
            count += 1;
            self.add_left_out(label, chosen, name, problems);
        }
        (count, toolgate)
    }

    fn add(&mut self, label: &str, chosen: bool, server: &ServerConfig) {
        let same = self.0.iter_mut().find(|c| {
            c.name == server.name && c.config.as_ref().is_some_and(|s| same_definition(s, server))
        });
        match same {
            Some(candidate) => candidate.found_in(label, chosen),
            None => self.0.push(Candidate {
                name: server.name.clone(),
                config: Some(server.clone()),
                problems: Vec::new(),
                from: vec![label.to_owned()],
                chosen,
            }),
        }
    }

    fn add_left_out(&mut self, label: &str, chosen: bool, name: String, problems: Vec<String>) {
        let same = self
            .0
            .iter_mut()
            .find(|c| c.name == name && c.config.is_none() && c.problems == problems);
        match same {
            Some(candidate) => candidate.found_in(label, chosen),
            None => self.0.push(Candidate {
                name,
                config: None,
                problems,
                from: vec![label.to_owned()],
                chosen,
            }),
        }
    }
}

impl Candidate {
    fn found_in(&mut self, label: &str, chosen: bool) {
        if !self.from.iter().any(|from| from == label) {
            self.from.push(label.to_owned());
        }
        self.chosen |= chosen;
    }
}

/// Whether `server` is toolgate itself: named `toolgate`, or running a program called
/// `toolgate`.
pub(crate) fn is_toolgate(server: &ServerConfig) -> bool {
    if server.name.eq_ignore_ascii_case("toolgate") {
        return true;
    }
    match &server.transport {
        TransportConfig::Stdio(stdio) => Path::new(&stdio.command)
            .file_stem()
            .is_some_and(|stem| stem.eq_ignore_ascii_case("toolgate")),
        _ => false,
    }
}

/// Whether two servers are one definition: the same program with the same arguments,
/// variables and folder, or the same URL, transport and headers. Settings toolgate adds
/// (timeouts, filters, what the loader withholds) do not count.
fn same_definition(a: &ServerConfig, b: &ServerConfig) -> bool {
    match (&a.transport, &b.transport) {
        (TransportConfig::Stdio(a), TransportConfig::Stdio(b)) => {
            a.command == b.command && a.args == b.args && a.env == b.env && a.cwd == b.cwd
        }
        (TransportConfig::Http(a), TransportConfig::Http(b)) => {
            a.url == b.url && a.transport == b.transport && a.headers == b.headers
        }
        _ => false,
    }
}

/// The tables servers are kept under, in toolgate.toml and the clients' dialects.
const SERVER_TABLES: &[&str] =
    &["servers", "mcpServers", "context_servers", "mcp_servers", "extensions"];

/// The server a problem's path is about (`mcpServers.github.env.TOKEN` is about `github`;
/// `servers."a.b".url` about `a.b`); `None` for a problem of the file as a whole.
pub(crate) fn server_of(path: &str) -> Option<String> {
    // A problem in a file toolgate.toml imports starts with that file's name.
    let path = path.rsplit_once(": ").map_or(path, |(_, path)| path);
    let rest = SERVER_TABLES
        .iter()
        .find_map(|table| path.strip_prefix(table).and_then(|rest| rest.strip_prefix('.')))?;
    if let Some(quoted) = rest.strip_prefix('"') {
        let mut name = String::new();
        let mut chars = quoted.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return Some(name),
                '\\' => name.push(chars.next()?),
                c => name.push(c),
            }
        }
        return None;
    }
    let name = rest.split(['.', '[']).next()?;
    (!name.is_empty()).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use toolgate_config::{FixedEnvironment, Format};

    use super::*;

    fn servers(json: &str) -> (Vec<ServerConfig>, Vec<ConfigError>) {
        let env = FixedEnvironment::new().with_var("SET", "1");
        match toolgate_config::parse_str(json, Format::Json, Path::new("/"), &env) {
            Ok(config) => (config.servers, Vec::new()),
            Err(errors) => (Vec::new(), errors.errors().to_vec()),
        }
    }

    #[test]
    fn a_problem_path_names_its_server() {
        assert_eq!(server_of("mcpServers.github.env.TOKEN").as_deref(), Some("github"));
        assert_eq!(server_of("servers.\"a.b\".url").as_deref(), Some("a.b"));
        assert_eq!(server_of("context_servers.z[2]").as_deref(), Some("z"));
        assert_eq!(server_of("extensions.dev").as_deref(), Some("dev"));
        assert_eq!(server_of("mcp_servers.docs.env_vars").as_deref(), Some("docs"));
        assert_eq!(server_of("more.toml: servers.imported.command").as_deref(), Some("imported"));
        assert_eq!(server_of("gateway.listen"), None);
        assert_eq!(server_of(""), None);
    }

    #[test]
    fn one_definition_in_two_files_is_one_candidate_and_toolgate_is_left_out() {
        let mut candidates = Candidates::default();
        let (a, _) = servers(
            r#"{"mcpServers": {"fs": {"command": "npx", "args": ["fs"]},
                "toolgate": {"command": "/opt/bin/toolgate", "args": ["serve", "--stdio"]}}}"#,
        );
        let (b, _) = servers(
            r#"{"mcpServers": {"fs": {"command": "npx", "args": ["fs"]},
                "fs2": {"command": "npx", "args": ["other"]},
                "gate": {"command": "toolgate"}}}"#,
        );
        assert_eq!(candidates.add_file("cursor", false, &a, &[]), (1, true));
        assert_eq!(candidates.add_file("claude-desktop", true, &b, &[]), (2, true));
        let names: Vec<_> =
            candidates.0.iter().map(|c| (c.name.as_str(), c.from.join(","))).collect();
        assert_eq!(
            names,
            [("fs", "cursor,claude-desktop".to_owned()), ("fs2", "claude-desktop".into())]
        );
        assert!(candidates.0[0].chosen, "a chosen file makes it chosen");
    }

    #[test]
    fn a_server_left_out_for_a_problem_is_kept_with_it() {
        let mut candidates = Candidates::default();
        let (valid, errors) = servers(
            r#"{"mcpServers": {"gh": {"command": "gh-mcp", "env": {"T": "${UNSET_VAR}"}},
                "ok": {"command": "x"}}}"#,
        );
        assert!(valid.is_empty());
        assert_eq!(candidates.add_file("gemini", true, &valid, &errors), (1, false));
        let gh = &candidates.0[0];
        assert_eq!(gh.name, "gh");
        assert!(gh.config.is_none());
        assert!(
            gh.problems[0].contains("environment variable UNSET_VAR is not set"),
            "{:?}",
            gh.problems
        );
    }
}
