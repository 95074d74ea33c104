//! The vault: files 0600 under a 0700 folder, encrypted, bound to their entry and server URL.

use std::os::unix::fs::PermissionsExt as _;
use std::sync::Arc;

use rmcp::transport::auth::{CredentialStore as _, StoredCredentials};

use super::*;

fn vault(dir: &Path) -> Arc<Vault> {
    Arc::new(
        Vault::open_with_key_file(&dir.join("state/oauth"), &dir.join("config/oauth.key"))
            .expect("opens"),
    )
}

fn credentials(token: &str) -> StoredCredentials {
    let response = serde_json::json!({
        "access_token": token, "token_type": "Bearer", "expires_in": 3600,
        "refresh_token": "refresh-secret-value"
    });
    StoredCredentials::new(
        "client-1".into(),
        Some(serde_json::from_value(response).expect("a token response")),
        vec!["read".into()],
        Some(now()),
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("exists").permissions().mode() & 0o777
}

#[tokio::test]
async fn tokens_are_kept_encrypted_in_private_files_and_come_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let vault = vault(dir.path());
    let entry = vault.entry("acme".into(), "https://mcp.acme.test/mcp".into());
    assert!(entry.load().await.expect("loads").is_none());
    entry.save(credentials("access-secret-value")).await.expect("saves");

    let loaded = entry.load().await.expect("loads").expect("saved");
    let token = loaded.token_response.expect("a token");
    assert_eq!(oauth2::TokenResponse::access_token(&token).secret(), "access-secret-value");

    assert_eq!(mode(&dir.path().join("state/oauth")), 0o700);
    assert_eq!(mode(&dir.path().join("config/oauth.key")), 0o600);
    let files: Vec<_> = std::fs::read_dir(dir.path().join("state/oauth"))
        .expect("listed")
        .map(|f| f.expect("entry").path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(mode(&files[0]), 0o600);
    let on_disk = std::fs::read_to_string(&files[0]).expect("read");
    for secret in ["access-secret-value", "refresh-secret-value", "client-1"] {
        assert!(!on_disk.contains(secret), "{secret} is on disk in clear: {on_disk}");
    }
    // Nothing of the key file is in the token folder, and a second open reads the same key.
    let again = super::Vault::open_with_key_file(
        &dir.path().join("state/oauth"),
        &dir.path().join("config/oauth.key"),
    )
    .expect("opens");
    assert!(again.read("acme").expect("reads").is_some());
}

#[tokio::test]
async fn another_key_another_entry_or_another_url_reads_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let vault = vault(dir.path());
    let acme = vault.entry("acme".into(), "https://mcp.acme.test/mcp".into());
    acme.save(credentials("acme-token")).await.expect("saves");

    // The same name for another server URL: the tokens are not for it.
    let moved = vault.entry("acme".into(), "https://evil.test/mcp".into());
    assert!(moved.load().await.expect("loads").is_none());

    // The file copied over another entry's name does not open as that entry.
    let globex = vault.entry("globex".into(), "https://mcp.acme.test/mcp".into());
    std::fs::copy(vault.path("acme"), vault.path("globex")).expect("copied");
    assert!(matches!(vault.read("globex"), Err(VaultError::Undecryptable { .. })));
    assert!(globex.load().await.is_err(), "a tampered file is an error, not a login");

    // Another key opens nothing.
    let other =
        Vault::open_with_key_file(&dir.path().join("state/oauth"), &dir.path().join("other.key"))
            .expect("opens");
    assert!(matches!(other.read("acme"), Err(VaultError::Undecryptable { .. })));
}

#[test]
fn files_others_can_read_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let vault = vault(dir.path());
    let entry = vault.entry("acme".into(), "https://a.test/mcp".into());
    entry.update(|record| record.subject = Some("ada".into())).expect("saves");
    std::fs::set_permissions(vault.path("acme"), std::fs::Permissions::from_mode(0o644))
        .expect("chmod");
    let error = vault.read("acme").unwrap_err().to_string();
    assert!(error.contains("readable by others"), "{error}");

    let key = dir.path().join("loose.key");
    std::fs::write(&key, [7u8; 32]).expect("write");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    assert!(matches!(
        Vault::open_with_key_file(&dir.path().join("v"), &key),
        Err(VaultError::Exposed { .. })
    ));
    std::fs::write(&key, [7u8; 3]).expect("write");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    assert!(matches!(
        Vault::open_with_key_file(&dir.path().join("v"), &key),
        Err(VaultError::BadKey { .. })
    ));
}

#[test]
fn records_are_listed_and_removed_by_entry() {
    let dir = tempfile::tempdir().expect("temp dir");
    let vault = vault(dir.path());
    for name in ["b", "a", "a/user:ada@acme"] {
        vault.entry(name.into(), "https://x.test/mcp".into()).update(|_| {}).expect("saves");
    }
    let names: Vec<_> = vault.records().expect("listed").into_iter().map(|r| r.entry).collect();
    assert_eq!(names, ["a", "a/user:ada@acme", "b"]);
    assert!(vault.remove("a").expect("removes"));
    assert!(!vault.remove("a").expect("nothing left"));
    assert_eq!(vault.records().expect("listed").len(), 2);
    assert_eq!(entry_name("a", Some("user:ada@acme")), "a/user:ada@acme");
}

#[tokio::test]
async fn a_refresh_in_another_process_waits_for_this_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Two vaults on the same files, as two toolgate processes have: their in-process locks
    // are separate, so only the lock file can keep them apart.
    let first = vault(dir.path());
    let second = vault(dir.path());
    let url = "https://mcp.acme.test/mcp".to_owned();
    let ours = first.entry("acme".into(), url.clone());
    let theirs = second.entry("acme".into(), url.clone());
    let held = ours.acquire_refresh_guard().await.expect("locked").expect("a guard");
    let mut waiting =
        tokio::spawn(async move { theirs.acquire_refresh_guard().await.map(|g| g.is_some()) });
    // The other process's refresh cannot begin while ours runs (a lock that did not hold
    // would let it through at once)...
    let early = tokio::time::timeout(std::time::Duration::from_millis(200), &mut waiting).await;
    assert!(early.is_err(), "the second refresh began while the first held its lock");
    // ...and begins once it ends. Another entry is never held up.
    let other = first.entry("globex".into(), url);
    assert!(other.acquire_refresh_guard().await.expect("locked").is_some());
    drop(held);
    assert!(waiting.await.expect("joined").expect("locked"), "the second refresh went ahead");
}
