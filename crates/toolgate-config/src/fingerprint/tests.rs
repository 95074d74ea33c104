//! The digest changes with the config and with every file it imports, and with nothing else.

use std::fs;

use super::fingerprint;
use crate::env::FixedEnvironment;

struct Checkout {
    dir: tempfile::TempDir,
}

impl Checkout {
    fn new(toml: &str) -> Checkout {
        let dir = tempfile::tempdir().expect("temp dir");
        fs::write(dir.path().join("toolgate.toml"), toml).expect("write");
        Checkout { dir }
    }

    fn write(&self, name: &str, text: &str) {
        fs::write(self.dir.path().join(name), text).expect("write");
    }

    fn digest(&self) -> String {
        let env = FixedEnvironment::new().with_var("SUB", "sub");
        fingerprint(self.dir.path(), &env).expect("fingerprint").digest
    }
}

#[test]
fn the_digest_follows_the_config_and_its_imports() {
    let checkout = Checkout::new("import = [\"servers.json\", \"${SUB}/more.json\"]\n");
    checkout.write("servers.json", "{\"mcpServers\": {}}");
    let first = checkout.digest();
    assert!(first.starts_with("sha256:") && first.len() == "sha256:".len() + 64, "{first}");
    assert_eq!(checkout.digest(), first, "the same files give the same digest");

    let env = FixedEnvironment::new().with_var("SUB", "sub");
    let files = fingerprint(checkout.dir.path(), &env).expect("fingerprint").files;
    let names: Vec<_> = files
        .iter()
        .map(|f| f.strip_prefix(checkout.dir.path()).expect("inside"))
        .map(|f| f.display().to_string())
        .collect();
    assert_eq!(names, ["toolgate.toml", "servers.json", "sub/more.json"]);

    // An imported file changes: the trust given to the first version does not hold.
    checkout.write("servers.json", "{\"mcpServers\": {\"x\": {\"command\": \"evil\"}}}");
    let changed = checkout.digest();
    assert_ne!(changed, first);

    // An import that was missing appears.
    fs::create_dir(checkout.dir.path().join("sub")).expect("mkdir");
    checkout.write("sub/more.json", "{}");
    assert_ne!(checkout.digest(), changed);

    // The config itself changes.
    let before = checkout.digest();
    checkout.write("toolgate.toml", "import = [\"servers.json\", \"${SUB}/more.json\"]\n# x\n");
    assert_ne!(checkout.digest(), before);

    // Other files in the folder do not count.
    let before = checkout.digest();
    checkout.write("README.md", "hello");
    assert_eq!(checkout.digest(), before);
}

#[test]
fn a_config_that_cannot_be_read_has_no_fingerprint() {
    let dir = tempfile::tempdir().expect("temp dir");
    let error = fingerprint(&dir.path().join("toolgate.toml"), &FixedEnvironment::new())
        .expect_err("no file");
    assert!(error.message.contains("file not found"), "{error}");
}
