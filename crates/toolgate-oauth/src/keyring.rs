//! The vault's key in the operating system's keyring where there is one: the Secret Service
//! of the desktop session on Linux (GNOME Keyring, KWallet), the login keychain on macOS. The
//! tokens stay in the vault's files, encrypted; what the keyring guards is the key that opens
//! them, so a copy of the token folder (a backup, another user reading a misconfigured home)
//! opens nothing without the person's unlocked keyring.
//!
//! Where there is no keyring (a server, a container, no session bus), or `TOOLGATE_KEYRING=off`
//! says not to use it, the key is a file of its own (see [`crate::vault`]). A key file that
//! already exists is always used, so that tokens saved before a keyring appeared keep working.
//!
//! The keyring crate's Secret Service client blocks; it runs on a thread of its own, so it can
//! be called from anywhere, the async runtime included.

use std::path::Path;

/// The keyring service name of toolgate's entries.
const SERVICE: &str = "toolgate";

/// Where the vault's key is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPlace {
    /// In the operating system's keyring.
    Keyring,
    /// In a file of its own.
    File,
}

impl std::fmt::Display for KeyPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KeyPlace::Keyring => "the system keyring",
            KeyPlace::File => "a key file",
        })
    }
}

/// Whether the keyring may be used: not when `TOOLGATE_KEYRING` is `off` (or `0`, `false`).
pub fn allowed() -> bool {
    !matches!(
        std::env::var("TOOLGATE_KEYRING").as_deref().map(str::to_ascii_lowercase).as_deref(),
        Ok("off" | "0" | "false" | "no")
    )
}

/// The key kept in the keyring for the vault whose key file would be `key_file` (each key file
/// path has its own entry, so that two toolgate homes on one account keep two keys): the one
/// there, or a fresh one put there. `None` when there is no keyring to use.
pub fn key(key_file: &Path) -> Option<[u8; 32]> {
    if !allowed() {
        return None;
    }
    let account = key_file.to_string_lossy().into_owned();
    std::thread::scope(|scope| scope.spawn(move || key_in_keyring(&account)).join().unwrap_or(None))
}

fn key_in_keyring(account: &str) -> Option<[u8; 32]> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let entry = keyring::Entry::new(SERVICE, account).ok()?;
    match entry.get_password() {
        Ok(text) => {
            let bytes = b64.decode(text.trim()).ok()?;
            match <[u8; 32]>::try_from(bytes) {
                Ok(key) => Some(key),
                Err(_) => {
                    tracing::warn!("the keyring's toolgate entry is not a key; using a key file");
                    None
                }
            }
        }
        Err(keyring::Error::NoEntry) => {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).expect("the operating system's random source works");
            match entry.set_password(&b64.encode(key)) {
                Ok(()) => Some(key),
                Err(error) => {
                    tracing::debug!(%error, "the keyring does not take the key; using a key file");
                    None
                }
            }
        }
        Err(error) => {
            tracing::debug!(%error, "no keyring to keep the sign-in key in; using a key file");
            None
        }
    }
}
