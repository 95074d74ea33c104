//! What trusting a configuration covers: its text and the text of every file it imports.
//!
//! A `toolgate.toml` found in the current directory is used only once the user trusts it,
//! and trust is kept as a hash of what the user reviewed, so that a changed file needs trust
//! again. The hash covers the imported client configs too, not the main file alone: they
//! define servers (commands to run, with their environment) just as the main file does, and a
//! checkout could otherwise keep a harmless `toolgate.toml` that imports `servers.json`, be
//! trusted, and then change `servers.json` to run anything. Programs a config names are not
//! covered: trusting a config means trusting what it runs, as with direnv's `.envrc`. Nor are
//! the Rune scripts of its script folders: they are sandboxed (no files, processes or network
//! of their own) and reloaded while toolgate runs, so a digest taken at start-up could not
//! hold them anyway.
//!
//! Only files are read: nothing in the config is interpolated but `import` paths, which are
//! resolved exactly as loading resolves them (so the files hashed are the files loaded).

use std::path::{Path, PathBuf};

use crate::check::Checker;
use crate::env::Environment;
use crate::error::ConfigError;
use crate::error::io_reason;
use crate::load::absolute;
use crate::value::{Syntax, Value, parse_toml};
use crate::{FILE_NAME, Format};

/// A configuration's content hash and the files it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    /// `sha256:` and the hex SHA-256 of every file's path and bytes, in order.
    pub digest: String,
    /// The files hashed: the config first, then its imports as listed (absolute). An import
    /// that could not be read counts as absent, so creating it later changes the digest.
    pub files: Vec<PathBuf>,
}

/// The [`Fingerprint`] of the config at `path` (a directory means its `toolgate.toml`).
/// An error when the config itself cannot be read.
pub fn fingerprint(path: &Path, env: &dyn Environment) -> Result<Fingerprint, ConfigError> {
    let mut path = absolute(path, env);
    if path.is_dir() {
        path.push(FILE_NAME);
    }
    let text = std::fs::read(&path).map_err(|error| {
        ConfigError::new(path.display().to_string(), format!("cannot read: {}", io_reason(&error)))
    })?;
    let imports = match Format::from_path(&path) {
        Some(Format::Json | Format::Yaml) => Vec::new(),
        _ => imports(&path, &text, env),
    };
    let mut hashed = Vec::new();
    let mut files = vec![path.clone()];
    frame(&mut hashed, &path, Some(&text));
    for import in imports {
        let bytes = std::fs::read(&import).ok();
        frame(&mut hashed, &import, bytes.as_deref());
        files.push(import);
    }
    let digest = format!("sha256:{}", toolgate_core::hash::sha256_hex(&hashed));
    Ok(Fingerprint { digest, files })
}

/// Appends one file to what is hashed, each part preceded by its length, so that no two
/// different lists of files frame to the same bytes.
fn frame(out: &mut Vec<u8>, path: &Path, bytes: Option<&[u8]>) {
    let path = path.as_os_str().as_encoded_bytes();
    out.extend_from_slice(&(path.len() as u64).to_le_bytes());
    out.extend_from_slice(path);
    match bytes {
        Some(bytes) => {
            out.push(1);
            out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        None => out.push(0),
    }
}

/// The files a `toolgate.toml` imports, resolved as the loader resolves them. A file that does
/// not parse imports nothing (it cannot be loaded either).
fn imports(path: &Path, text: &[u8], env: &dyn Environment) -> Vec<PathBuf> {
    let Ok(text) = std::str::from_utf8(text) else { return Vec::new() };
    let Ok(Value::Table(entries)) = parse_toml(text) else { return Vec::new() };
    let Some((_, Value::Array(items))) = entries.iter().find(|(key, _)| key == "import") else {
        return Vec::new();
    };
    let base_dir = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
    let mut cx = Checker::new(env, Syntax::Toml, None, &base_dir);
    items
        .iter()
        .filter_map(|item| match item {
            Value::String(file) => {
                let expanded = cx.interpolate(file, "import").unwrap_or_else(|| file.clone());
                Some(cx.resolve_path(&expanded))
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
