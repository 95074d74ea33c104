//! Whether an MCP client is installed, and the evidence: a program of its on PATH, or a
//! folder it keeps under the home directory. Only looked at, never run.

use std::path::{Path, PathBuf};

/// What shows that one client is installed.
struct Signs {
    /// The client's name in [`crate::clients::CLIENTS`].
    client: &'static str,
    /// Programs it puts on PATH.
    programs: &'static [&'static str],
    /// Folders it keeps under the home directory: (Linux, macOS).
    folders: &'static [(&'static str, &'static str)],
}

const fn same(path: &'static str) -> (&'static str, &'static str) {
    (path, path)
}

const SIGNS: &[Signs] = &[
    Signs {
        client: "claude-desktop",
        programs: &[],
        folders: &[(".config/Claude", "Library/Application Support/Claude")],
    },
    Signs { client: "claude-code", programs: &["claude"], folders: &[same(".claude")] },
    Signs { client: "cursor", programs: &["cursor"], folders: &[same(".cursor")] },
    Signs {
        client: "vscode",
        programs: &["code"],
        folders: &[(".config/Code", "Library/Application Support/Code")],
    },
    Signs { client: "windsurf", programs: &["windsurf"], folders: &[same(".codeium/windsurf")] },
    Signs { client: "gemini", programs: &["gemini"], folders: &[same(".gemini")] },
    Signs { client: "zed", programs: &["zed", "zeditor"], folders: &[same(".config/zed")] },
    Signs { client: "continue", programs: &[], folders: &[same(".continue")] },
    Signs { client: "goose", programs: &["goose"], folders: &[same(".config/goose")] },
    Signs { client: "codex", programs: &["codex"], folders: &[same(".codex")] },
];

/// One piece of evidence that a client is installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Evidence {
    /// Its program, found on PATH.
    Program(PathBuf),
    /// A folder it keeps.
    Folder(PathBuf),
}

impl std::fmt::Display for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Evidence::Program(path) => write!(f, "program {}", path.display()),
            Evidence::Folder(path) => write!(f, "folder {}", path.display()),
        }
    }
}

/// The evidence that `client` is installed, given the home directory and the folders of PATH;
/// empty when there is none.
pub(crate) fn installed(client: &str, home: Option<&Path>, path: &[PathBuf]) -> Vec<Evidence> {
    let Some(signs) = SIGNS.iter().find(|signs| signs.client == client) else {
        return Vec::new();
    };
    let programs = signs
        .programs
        .iter()
        .filter_map(|program| find_program(program, path))
        .map(Evidence::Program);
    let folders = home.into_iter().flat_map(|home| {
        signs.folders.iter().filter_map(move |(linux, macos)| {
            let relative = if cfg!(target_os = "macos") { macos } else { linux };
            let folder = home.join(relative);
            folder.is_dir().then_some(Evidence::Folder(folder))
        })
    });
    programs.chain(folders).collect()
}

/// The first executable file called `name` in the folders of `path`.
pub(crate) fn find_program(name: &str, path: &[PathBuf]) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    path.iter().map(|dir| dir.join(name)).find(|candidate| {
        std::fs::metadata(candidate)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    })
}

/// The folders of `$PATH`, in order.
pub(crate) fn path_folders() -> Vec<PathBuf> {
    std::env::var_os("PATH").map(|path| std::env::split_paths(&path).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executable(path: &Path) {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn every_client_has_signs_and_every_sign_a_client() {
        for client in crate::clients::CLIENTS {
            assert!(SIGNS.iter().any(|s| s.client == client.name), "{} has no signs", client.name);
        }
        for signs in SIGNS {
            assert!(crate::clients::find(signs.client).is_some(), "{} is no client", signs.client);
        }
    }

    #[test]
    fn a_program_on_path_or_a_folder_under_home_is_evidence() {
        let dir = tempfile::tempdir().unwrap();
        let (home, bin, other) =
            (dir.path().join("home"), dir.path().join("bin"), dir.path().join("o"));
        for folder in [&home, &bin, &other] {
            std::fs::create_dir_all(folder).unwrap();
        }
        let path = vec![other.clone(), bin.clone()];
        assert!(installed("codex", Some(&home), &path).is_empty(), "nothing yet");

        executable(&bin.join("codex"));
        std::fs::write(other.join("gemini"), "not executable").unwrap();
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        std::fs::create_dir_all(home.join(".continue")).unwrap();
        assert_eq!(installed("codex", Some(&home), &path), [Evidence::Program(bin.join("codex"))]);
        assert_eq!(
            installed("gemini", Some(&home), &path),
            [Evidence::Folder(home.join(".gemini"))],
            "a file that is not executable is no program"
        );
        assert!(installed("continue", None, &path).is_empty(), "no home, no folder");
        executable(&other.join("zeditor"));
        assert_eq!(
            installed("zed", Some(&home), &path),
            [Evidence::Program(other.join("zeditor"))]
        );
        assert_eq!(find_program("codex", &path), Some(bin.join("codex")));
        assert_eq!(find_program("cursor", &path), None);
    }
}
