//! Paths as the reports record them: without the directories of the machine that ran them.
//!
//! Reports are committed (`bench/results/latest`), and a repository must not name one
//! machine's folders. So the target folder becomes `$CARGO_TARGET_DIR`, the repository's root
//! `.`, the temporary folder `$TMPDIR`, and the home folder `~`; the rest of each path stays,
//! so a reader still sees which binary or config a command used.

use std::path::{Path, PathBuf};

/// `text` with the machine's own folders replaced by their names.
pub(crate) fn portable(text: &str) -> String {
    replace_folders(text, &this_machine())
}

/// The folders to replace on this machine, each with its name.
fn this_machine() -> Vec<(PathBuf, &'static str)> {
    let mut folders = Vec::new();
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        folders.push((PathBuf::from(target), "$CARGO_TARGET_DIR"));
    }
    // Compiled in: the harness runs from the checkout it was built from (bench/run).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    folders.push((root.canonicalize().unwrap_or(root), "."));
    folders.push((std::env::temp_dir(), "$TMPDIR"));
    if let Some(home) = std::env::var_os("HOME") {
        folders.push((PathBuf::from(home), "~"));
    }
    folders
}

/// `text` with each absolute folder of `folders` (followed by `/`) replaced by its name; a
/// folder inside another is replaced first, so the target folder under the home folder
/// becomes `$CARGO_TARGET_DIR`, not `~/...`.
fn replace_folders(text: &str, folders: &[(PathBuf, &str)]) -> String {
    let mut folders: Vec<(String, &str)> = folders
        .iter()
        .filter(|(path, _)| path.is_absolute() && path.parent().is_some())
        .map(|(path, name)| {
            (format!("{}/", path.display().to_string().trim_end_matches('/')), *name)
        })
        .collect();
    folders.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    let mut text = text.to_owned();
    for (path, name) in folders {
        text = text.replace(&path, &format!("{name}/"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folders() -> Vec<(PathBuf, &'static str)> {
        vec![
            (PathBuf::from("/home/me"), "~"),
            (PathBuf::from("/home/me/.cache/target/"), "$CARGO_TARGET_DIR"),
            (PathBuf::from("/src/toolgate"), "."),
            (PathBuf::from("/tmp"), "$TMPDIR"),
            (PathBuf::from("relative"), "never"),
            (PathBuf::from("/"), "never"),
        ]
    }

    #[test]
    fn each_folder_becomes_its_name_the_innermost_first() {
        let text = "/home/me/.cache/target/release/toolgate serve --config \
                    /tmp/bench-1/toolgate.toml -- /src/toolgate/bench/.peers/bin/x /home/me/y";
        assert_eq!(
            replace_folders(text, &folders()),
            "$CARGO_TARGET_DIR/release/toolgate serve --config $TMPDIR/bench-1/toolgate.toml \
             -- ./bench/.peers/bin/x ~/y"
        );
    }

    #[test]
    fn only_whole_folders_are_replaced() {
        assert_eq!(
            replace_folders("/tmpfs/x /src/toolgate2/y", &folders()),
            "/tmpfs/x /src/toolgate2/y"
        );
        assert_eq!(replace_folders("relative/x /usr/bin/y", &folders()), "relative/x /usr/bin/y");
    }
}
