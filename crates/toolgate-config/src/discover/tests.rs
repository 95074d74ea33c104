//! Tests of config discovery: the order of `--config`, `$TOOLGATE_CONFIG`, the current dir and the
//! user dir.

use std::fs;
use std::path::Path;

use tempfile::TempDir;

use super::discover;
use crate::env::FixedEnvironment;

/// A temporary tree with `cwd/` and `home/`, and an environment pointing at them.
struct Tree {
    dir: TempDir,
}

impl Tree {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir must be creatable");
        fs::create_dir_all(dir.path().join("cwd")).expect("cwd must be creatable");
        fs::create_dir_all(dir.path().join("home")).expect("home must be creatable");
        Tree { dir }
    }

    fn path(&self, relative: &str) -> std::path::PathBuf {
        self.dir.path().join(relative)
    }

    fn touch(&self, relative: &str) {
        let path = self.path(relative);
        fs::create_dir_all(path.parent().expect("path must have a parent"))
            .expect("parent must be creatable");
        fs::write(path, "").expect("file must be writable");
    }

    fn env(&self) -> FixedEnvironment {
        FixedEnvironment::new().with_current_dir(self.path("cwd")).with_home_dir(self.path("home"))
    }
}

#[test]
fn nothing_found() {
    let tree = Tree::new();
    assert_eq!(discover(None, &tree.env()), Ok(None));
    assert_eq!(discover(None, &FixedEnvironment::new()), Ok(None));
}

#[test]
fn explicit_path_wins_and_is_resolved_against_the_current_dir() {
    let tree = Tree::new();
    tree.touch("cwd/custom.toml");
    tree.touch("cwd/toolgate.toml");
    tree.touch("named.toml");
    let env = tree.env().with_var("TOOLGATE_CONFIG", tree.path("named.toml").display().to_string());
    assert_eq!(
        discover(Some(Path::new("custom.toml")), &env),
        Ok(Some(tree.path("cwd/custom.toml")))
    );
}

#[test]
fn missing_explicit_path_is_an_error() {
    let tree = Tree::new();
    tree.touch("cwd/toolgate.toml");
    let error = discover(Some(Path::new("nope.toml")), &tree.env())
        .expect_err("a missing --config file must be an error");
    assert_eq!(error.path, tree.path("cwd/nope.toml").display().to_string());
    assert_eq!(error.message, "config file not found");
}

#[test]
fn explicit_directory_is_an_error() {
    let tree = Tree::new();
    let error =
        discover(Some(&tree.path("home")), &tree.env()).expect_err("a directory must be an error");
    assert_eq!(error.message, "is a directory, not a config file");
}

#[test]
fn variable_comes_before_the_current_dir() {
    let tree = Tree::new();
    tree.touch("cwd/toolgate.toml");
    tree.touch("elsewhere/gw.toml");
    let env = tree.env().with_var("TOOLGATE_CONFIG", "../elsewhere/gw.toml");
    assert_eq!(discover(None, &env), Ok(Some(tree.path("cwd/../elsewhere/gw.toml"))));
}

#[test]
fn missing_variable_file_is_an_error() {
    let tree = Tree::new();
    tree.touch("cwd/toolgate.toml");
    let env = tree.env().with_var("TOOLGATE_CONFIG", tree.path("gone.toml").display().to_string());
    let error = discover(None, &env).expect_err("a missing TOOLGATE_CONFIG file must be an error");
    assert_eq!(error.message, "config file not found (named by TOOLGATE_CONFIG)");
}

#[test]
fn empty_variable_is_unset() {
    let tree = Tree::new();
    tree.touch("cwd/toolgate.toml");
    let env = tree.env().with_var("TOOLGATE_CONFIG", "");
    assert_eq!(discover(None, &env), Ok(Some(tree.path("cwd/toolgate.toml"))));
}

#[test]
fn current_dir_comes_before_the_user_config_dir() {
    let tree = Tree::new();
    tree.touch("cwd/toolgate.toml");
    tree.touch("home/.config/toolgate/toolgate.toml");
    assert_eq!(discover(None, &tree.env()), Ok(Some(tree.path("cwd/toolgate.toml"))));
}

#[test]
fn user_config_dir_under_home() {
    let tree = Tree::new();
    tree.touch("home/.config/toolgate/toolgate.toml");
    assert_eq!(
        discover(None, &tree.env()),
        Ok(Some(tree.path("home/.config/toolgate/toolgate.toml")))
    );
}

#[test]
fn xdg_config_home_replaces_dot_config() {
    let tree = Tree::new();
    tree.touch("home/.config/toolgate/toolgate.toml");
    tree.touch("xdg/toolgate/toolgate.toml");
    let env = tree.env().with_var("XDG_CONFIG_HOME", tree.path("xdg").display().to_string());
    assert_eq!(discover(None, &env), Ok(Some(tree.path("xdg/toolgate/toolgate.toml"))));

    // Not there: no fallback to ~/.config, as the XDG spec says.
    let env = tree.env().with_var("XDG_CONFIG_HOME", tree.path("empty").display().to_string());
    assert_eq!(discover(None, &env), Ok(None));
}

#[test]
fn relative_xdg_config_home_is_ignored() {
    let tree = Tree::new();
    tree.touch("home/.config/toolgate/toolgate.toml");
    let env = tree.env().with_var("XDG_CONFIG_HOME", "relative");
    assert_eq!(discover(None, &env), Ok(Some(tree.path("home/.config/toolgate/toolgate.toml"))));
}

#[test]
fn a_directory_named_toolgate_toml_is_skipped() {
    let tree = Tree::new();
    fs::create_dir_all(tree.path("cwd/toolgate.toml")).expect("dir must be creatable");
    tree.touch("home/.config/toolgate/toolgate.toml");
    assert_eq!(
        discover(None, &tree.env()),
        Ok(Some(tree.path("home/.config/toolgate/toolgate.toml")))
    );
}

#[test]
fn each_file_is_found_with_its_origin() {
    use super::{Origin, discover_file};
    let tree = Tree::new();
    tree.touch("home/.config/toolgate/toolgate.toml");
    let origin = |explicit: Option<&Path>, env: &FixedEnvironment| {
        discover_file(explicit, env).expect("found").expect("a file").origin
    };
    assert_eq!(origin(None, &tree.env()), Origin::UserConfig);
    tree.touch("cwd/toolgate.toml");
    assert_eq!(origin(None, &tree.env()), Origin::WorkingDirectory);
    let found = discover_file(None, &tree.env()).expect("found").expect("a file");
    assert!(found.needs_trust());
    assert_eq!(origin(Some(Path::new("toolgate.toml")), &tree.env()), Origin::Explicit);
    let named = tree.env().with_var("TOOLGATE_CONFIG", "toolgate.toml");
    assert_eq!(origin(None, &named), Origin::Variable);

    // Working in the user's own config folder finds the user's own file: no trust needed.
    let at_home = FixedEnvironment::new()
        .with_current_dir(tree.path("home/.config/toolgate"))
        .with_home_dir(tree.path("home"));
    let found = discover_file(None, &at_home).expect("found").expect("a file");
    assert_eq!(found.origin, Origin::UserConfig);
    assert!(!found.needs_trust());
}
