//! Tokens at rest: one file per sign-in (a server, and the caller for per-caller sign-ins),
//! created 0600 in a folder of its own (0700), each encrypted with XChaCha20-Poly1305 under a
//! key kept in another file, elsewhere (the binary puts the tokens under the user's state
//! folder and the key under the config folder). A copied token folder is useless without the
//! key; a file moved to another entry's name fails to decrypt (the entry's name is the
//! associated data); a file whose server URL is not the configured one is not used.
//!
//! The operating system's keyring is not used yet: on the Linux servers a shared gateway runs
//! on there is usually none, and the file works everywhere.

use std::collections::HashMap;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex as StdMutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Why the vault could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VaultError {
    /// A file or folder could not be read or written.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// The key file exists but is not a key.
    #[error("{}: not a token key (32 bytes expected)", path.display())]
    BadKey { path: PathBuf },
    /// A token file is readable by others than its owner.
    #[error("{}: readable by others (mode {mode:o}); run `chmod 600` on it or log in again", path.display())]
    Exposed { path: PathBuf, mode: u32 },
    /// A token file does not decrypt with this key (another key, another entry, or damage).
    #[error("{}: cannot be decrypted with this key; log in again", path.display())]
    Undecryptable { path: PathBuf },
}

/// The encrypted token files, and the key that opens them.
pub struct Vault {
    dir: PathBuf,
    cipher: XChaCha20Poly1305,
    /// Where the key is.
    place: crate::keyring::KeyPlace,
    /// One lock per entry, held across a refresh and its save within this process.
    refreshing: StdMutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault").field("dir", &self.dir).finish_non_exhaustive()
    }
}

/// What one file holds, once decrypted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// The entry's name (see [`entry_name`]).
    pub entry: String,
    /// The server the tokens are for; another URL's tokens are never sent.
    pub url: String,
    /// What rmcp's authorization client keeps: client id, token response, scopes, issuer.
    pub credentials: Option<StoredCredentials>,
    /// Who signed in, as the token or the authorization server says (for `toolgate servers`).
    #[serde(default)]
    pub subject: Option<String>,
    /// Scopes a server asked for that the stored tokens lack (a step-up waiting for a login).
    #[serde(default)]
    pub wanted_scopes: Vec<String>,
    /// The server's `WWW-Authenticate` challenge at sign-in: later processes discover the
    /// authorization server from it, as the sign-in did (its resource metadata may be at a
    /// place only the challenge names).
    #[serde(default)]
    pub challenge: Option<String>,
    /// When the record was written, in seconds since the Unix epoch.
    pub saved_at: u64,
}

impl Record {
    /// Whether it holds tokens (not only a registered client, or scopes waiting for a login).
    pub fn has_tokens(&self) -> bool {
        self.credentials.as_ref().is_some_and(|c| c.token_response.is_some())
    }

    /// When its access token expires, in seconds since the Unix epoch, when the server said.
    pub fn expires_at(&self) -> Option<u64> {
        use oauth2::TokenResponse as _;
        let credentials = self.credentials.as_ref()?;
        let ttl = credentials.token_response.as_ref()?.expires_in()?;
        Some(credentials.token_received_at? + ttl.as_secs())
    }

    /// Whether it holds a refresh token: the access token renews without a person.
    pub fn renews(&self) -> bool {
        use oauth2::TokenResponse as _;
        self.credentials
            .as_ref()
            .and_then(|c| c.token_response.as_ref())
            .is_some_and(|t| t.refresh_token().is_some())
    }

    /// The scopes granted.
    pub fn scopes(&self) -> &[String] {
        self.credentials.as_ref().map(|c| c.granted_scopes.as_slice()).unwrap_or_default()
    }
}

/// The sealed form on disk.
#[derive(Serialize, Deserialize)]
struct Sealed {
    v: u8,
    /// The entry's name, also the associated data of the encryption: a file copied over
    /// another entry's does not decrypt as that entry.
    entry: String,
    nonce: String,
    data: String,
}

/// The name of a sign-in: the server's, and the caller's for per-caller sign-ins.
pub fn entry_name(server: &str, principal: Option<&str>) -> String {
    match principal {
        Some(principal) => format!("{server}/{principal}"),
        None => server.to_owned(),
    }
}

impl Vault {
    /// Opens the vault in `dir` (created 0700 when missing), its key kept in the operating
    /// system's keyring where there is one (see [`crate::keyring`]), else in `key_file`
    /// (created 0600 with a fresh random key when missing, its folder 0700). A `key_file` that
    /// exists is used whatever else there is.
    pub fn open(dir: &Path, key_file: &Path) -> Result<Vault, VaultError> {
        if !key_file.exists()
            && let Some(key) = crate::keyring::key(key_file)
        {
            create_private_dir(dir)?;
            return Ok(Vault::with_key(dir, key, crate::keyring::KeyPlace::Keyring));
        }
        Vault::open_with_key_file(dir, key_file)
    }

    /// Opens the vault in `dir` with its key in `key_file` only (never the keyring).
    pub fn open_with_key_file(dir: &Path, key_file: &Path) -> Result<Vault, VaultError> {
        create_private_dir(dir)?;
        let key = load_or_create_key(key_file)?;
        Ok(Vault::with_key(dir, key, crate::keyring::KeyPlace::File))
    }

    fn with_key(dir: &Path, key: [u8; 32], place: crate::keyring::KeyPlace) -> Vault {
        let cipher = XChaCha20Poly1305::new((&key).into());
        Vault { dir: dir.to_owned(), cipher, place, refreshing: StdMutex::default() }
    }

    /// Where its key is kept.
    pub fn key_place(&self) -> crate::keyring::KeyPlace {
        self.place
    }

    /// The folder the token files are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, entry: &str) -> PathBuf {
        let digest = Sha256::digest(entry.as_bytes());
        let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{name}.token"))
    }

    /// The record of `entry`, if one was saved.
    pub fn read(&self, entry: &str) -> Result<Option<Record>, VaultError> {
        let path = self.path(entry);
        let io = |source| VaultError::Io { path: path.clone(), source };
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(io(error)),
        };
        let mode = std::fs::metadata(&path).map_err(io)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(VaultError::Exposed { path, mode });
        }
        let undecryptable = || VaultError::Undecryptable { path: path.clone() };
        let sealed: Sealed = serde_json::from_slice(&bytes).map_err(|_| undecryptable())?;
        let nonce = B64.decode(&sealed.nonce).map_err(|_| undecryptable())?;
        let data = B64.decode(&sealed.data).map_err(|_| undecryptable())?;
        if sealed.v != 1 || nonce.len() != 24 || sealed.entry != entry {
            return Err(undecryptable());
        }
        let plain = self
            .cipher
            .decrypt(XNonce::from_slice(&nonce), Payload { msg: &data, aad: entry.as_bytes() })
            .map_err(|_| undecryptable())?;
        let record: Record = serde_json::from_slice(&plain).map_err(|_| undecryptable())?;
        Ok((record.entry == entry).then_some(record))
    }

    /// Saves `record` under its entry, replacing what was there (written to a new file and
    /// renamed, so a reader sees the old record or the new one, never half of one).
    pub fn write(&self, record: &Record) -> Result<(), VaultError> {
        let path = self.path(&record.entry);
        let io = |source| VaultError::Io { path: path.clone(), source };
        let plain = serde_json::to_vec(record).expect("a record serializes");
        let mut nonce = [0u8; 24];
        getrandom::fill(&mut nonce).expect("the operating system's random source works");
        let data = self
            .cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload { msg: &plain, aad: record.entry.as_bytes() },
            )
            .expect("encryption of a buffer in memory does not fail");
        let sealed = Sealed {
            v: 1,
            entry: record.entry.clone(),
            nonce: B64.encode(nonce),
            data: B64.encode(data),
        };
        let text = serde_json::to_vec(&sealed).expect("serializes");
        let temporary = path.with_extension(format!("tmp{}", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)
            .map_err(io)?;
        file.write_all(&text).and_then(|()| file.sync_all()).map_err(io)?;
        std::fs::rename(&temporary, &path).map_err(io)
    }

    /// Forgets `entry`. Returns whether there was something to forget.
    pub fn remove(&self, entry: &str) -> Result<bool, VaultError> {
        let path = self.path(entry);
        // Its refresh lock file goes too (a refresh under way keeps its lock until it ends).
        let _ = std::fs::remove_file(path.with_extension("lock"));
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(VaultError::Io { path, source }),
        }
    }

    /// Every record this key opens, by entry name (files it does not open are skipped).
    pub fn records(&self) -> Result<Vec<Record>, VaultError> {
        let io = |source| VaultError::Io { path: self.dir.clone(), source };
        let mut out = Vec::new();
        for file in std::fs::read_dir(&self.dir).map_err(io)? {
            let path = file.map_err(io)?.path();
            if path.extension().is_none_or(|e| e != "token") {
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else { continue };
            let Ok(sealed) = serde_json::from_slice::<Sealed>(&bytes) else { continue };
            if let Ok(Some(record)) = self.read(&sealed.entry) {
                out.push(record);
            }
        }
        out.sort_by(|a, b| a.entry.cmp(&b.entry));
        Ok(out)
    }

    /// The store of `entry`'s tokens for rmcp's authorization client, for the server at `url`.
    pub fn entry(self: &Arc<Self>, entry: String, url: String) -> VaultEntry {
        VaultEntry { vault: self.clone(), entry, url }
    }

    fn refresh_lock(&self, entry: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.refreshing.lock().expect("not poisoned");
        locks.entry(entry.to_owned()).or_default().clone()
    }
}

/// One entry of the vault, as rmcp's authorization client stores credentials.
#[derive(Clone)]
pub struct VaultEntry {
    vault: Arc<Vault>,
    entry: String,
    url: String,
}

impl std::fmt::Debug for VaultEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VaultEntry").field("entry", &self.entry).field("url", &self.url).finish()
    }
}

impl VaultEntry {
    /// The record, when it is for this entry's server URL.
    pub fn record(&self) -> Result<Option<Record>, VaultError> {
        Ok(self.vault.read(&self.entry)?.filter(|record| record.url == self.url))
    }

    /// Saves `change` applied to the current record (or a new one).
    pub fn update(&self, change: impl FnOnce(&mut Record)) -> Result<(), VaultError> {
        let mut record = self.record()?.unwrap_or_else(|| Record {
            entry: self.entry.clone(),
            url: self.url.clone(),
            credentials: None,
            subject: None,
            wanted_scopes: Vec::new(),
            challenge: None,
            saved_at: 0,
        });
        change(&mut record);
        record.saved_at = now();
        self.vault.write(&record)
    }

    /// Forgets this entry.
    pub fn remove(&self) -> Result<bool, VaultError> {
        self.vault.remove(&self.entry)
    }

    /// The entry's name.
    pub fn name(&self) -> &str {
        &self.entry
    }
}

fn store_error(error: VaultError) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for VaultEntry {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.record().map_err(store_error)?.and_then(|record| record.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.update(|record| record.credentials = Some(credentials)).map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.update(|record| record.credentials = None).map_err(store_error)
    }

    /// Held across a refresh and its save: within the process, a lock per entry; across
    /// processes, an advisory lock (`flock`) on the entry's lock file, so that two toolgate
    /// processes never present the same refresh token (a server that rotates them would take
    /// the second use for a stolen token and end the grant). rmcp reads the tokens again once
    /// it holds the guard, so the second refresh starts from what the first saved.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let here = self.vault.refresh_lock(&self.entry).lock_owned().await;
        let path = self.vault.path(&self.entry).with_extension("lock");
        let across = tokio::task::spawn_blocking(move || lock_file(&path))
            .await
            .map_err(|error| AuthError::CredentialStoreError(error.to_string()))?
            .map_err(store_error)?;
        Ok(Some(CredentialRefreshGuard::new((here, across))))
    }
}

/// An exclusive advisory lock on `path` (created 0600), held until the value is dropped.
fn lock_file(path: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, VaultError> {
    let io = |source| VaultError::Io { path: path.to_owned(), source };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(io)?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, errno)| io(std::io::Error::from(errno)))
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn create_private_dir(dir: &Path) -> Result<(), VaultError> {
    let io = |source| VaultError::Io { path: dir.to_owned(), source };
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io)?;
    // A folder made before (or by someone else) is narrowed to its owner.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)
}

fn load_or_create_key(path: &Path) -> Result<[u8; 32], VaultError> {
    let io = |source| VaultError::Io { path: path.to_owned(), source };
    match std::fs::read(path) {
        Ok(bytes) => {
            let mode = std::fs::metadata(path).map_err(io)?.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(VaultError::Exposed { path: path.to_owned(), mode });
            }
            bytes.try_into().map_err(|_| VaultError::BadKey { path: path.to_owned() })
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                create_private_dir(parent)?;
            }
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).expect("the operating system's random source works");
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .map_err(io)?;
            file.write_all(&key).and_then(|()| file.sync_all()).map_err(io)?;
            Ok(key)
        }
        Err(error) => Err(io(error)),
    }
}

#[cfg(test)]
mod tests;
