//! The vault's key in a real Secret Service (gnome-keyring on a session bus of the test's own):
//! kept there, not on disk, so that the token files open only with the keyring; a key file
//! where there is no keyring, where `TOOLGATE_KEYRING=off` says so, or where one already is.
//! Each step is a process of its own (`src/bin/vault_key.rs`), as toolgate's are, with the
//! bus in its environment or not.

use std::path::Path;

use toolgate_testkit::secret_service::SecretService;

/// Runs `vault_key` on `tokens` and `key_file` (saving `subject` when given) with `env`:
/// where the key was, and the subject read back.
fn run(tokens: &Path, key_file: &Path, subject: Option<&str>, env: &[(&str, &str)]) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate-vault-key"))
        .arg(tokens)
        .arg(key_file)
        .args(subject)
        .env_remove("TOOLGATE_KEYRING")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .envs(env.iter().copied())
        .output()
        .expect("run vault_key");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[tokio::test]
async fn the_key_is_kept_in_the_keyring_where_there_is_one_and_in_a_file_elsewhere() {
    let service = SecretService::start().await;
    let bus = [("DBUS_SESSION_BUS_ADDRESS", service.address())];
    let home = tempfile::tempdir().expect("temp dir");
    let tokens = home.path().join("state/toolgate/oauth");
    let key_file = home.path().join("config/toolgate/oauth.key");

    assert_eq!(run(&tokens, &key_file, Some("ada"), &bus), "the system keyring ada");
    assert!(!key_file.exists(), "no key file beside a keyring");
    // Another process on the same account finds the same key there.
    assert_eq!(run(&tokens, &key_file, None, &bus), "the system keyring ada");
    // Without the keyring (no bus: a copy of the files elsewhere), the tokens do not open: a
    // fresh key file is made, and it is not theirs.
    let without = run(&tokens, &key_file, None, &[]);
    assert!(
        without.starts_with("a key file error:") && without.contains("cannot be decrypted"),
        "{without}"
    );

    // `TOOLGATE_KEYRING=off`: a key file, even with the bus there.
    let other = home.path().join("config/other.key");
    let off = [("DBUS_SESSION_BUS_ADDRESS", service.address()), ("TOOLGATE_KEYRING", "off")];
    assert_eq!(run(&home.path().join("off"), &other, Some("bo"), &off), "a key file bo");
    assert!(other.exists());
    // A key file that exists is used even with a keyring, so earlier tokens keep opening.
    assert_eq!(run(&home.path().join("off"), &other, None, &bus), "a key file bo");

    // No session bus at all (a server, a container): a key file, at once.
    let bare = home.path().join("config/bare.key");
    let none = [("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")];
    assert_eq!(run(&home.path().join("bare"), &bare, Some("cy"), &none), "a key file cy");
}
