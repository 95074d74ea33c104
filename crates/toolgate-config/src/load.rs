//! From text to [`Config`]: parse, check, follow `import`, merge, and report everything found.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::check::{Checker, Entry, duplicate_prefixes};
use crate::env::Environment;
use crate::error::{ConfigError, ConfigErrors};
use crate::model::{AuditConfig, Config, GatewayConfig};
use crate::value::{Syntax, parse_json, parse_toml};
use crate::{Format, client, native};

/// Reads and checks the file at `path` (relative to `env`'s current directory).
pub(crate) fn load_file(path: &Path, env: &dyn Environment) -> Result<Config, ConfigErrors> {
    let path = absolute(path, env);
    let text = std::fs::read_to_string(&path).map_err(|error| {
        ConfigErrors::from(ConfigError::new(
            "",
            format!("cannot read {}: {}", path.display(), io_reason(&error)),
        ))
        .with_file(&path)
    })?;
    let format = Format::from_path(&path).unwrap_or_else(|| Format::sniff(&text));
    let base_dir = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
    parse_str(&text, format, &base_dir, env).map_err(|errors| errors.with_file(&path))
}

/// Checks a whole document given as text.
pub(crate) fn parse_str(
    text: &str,
    format: Format,
    base_dir: &Path,
    env: &dyn Environment,
) -> Result<Config, ConfigErrors> {
    let (gateway, servers, pipeline, audit, admin, cx) = match format {
        Format::Toml => {
            let root = parse_toml(text)?;
            let mut cx = Checker::new(env, Syntax::Toml, None, base_dir);
            let document = native::check(&mut cx, &root);
            let mut servers = document.servers;
            for import in &document.imports {
                servers.extend(import_file(&mut cx, &import.path, &import.file));
            }
            (document.gateway, servers, document.pipeline, document.audit, document.admin, cx)
        }
        Format::Json => {
            let root = parse_json(text)?;
            let mut cx = Checker::new(env, Syntax::Json, None, base_dir);
            let servers = client::check(&mut cx, &root);
            (GatewayConfig::default(), servers, Vec::new(), AuditConfig::default(), None, cx)
        }
    };
    let (mut errors, warnings) = cx.finish();
    errors.extend(duplicate_names(&servers));
    errors.extend(duplicate_prefixes(&servers));
    if !errors.is_empty() {
        return Err(ConfigErrors::from_vec(errors));
    }
    let mut servers: Vec<_> = servers.into_iter().map(|entry| entry.server).collect();
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Config { gateway, servers, pipeline, audit, admin, warnings })
}

/// Reads the client config `file` named at `path` (`import[i]`); its errors and warnings go to
/// `cx`, prefixed by `file`.
fn import_file(cx: &mut Checker<'_>, path: &str, file: &str) -> Vec<Entry> {
    let Some(expanded) = cx.interpolate(file, path) else { return Vec::new() };
    let resolved = cx.resolve_path(&expanded);
    if Format::from_path(&resolved) != Some(Format::Json) {
        cx.error(path, format!("cannot import {file:?}: only JSON client configs can be imported"));
        return Vec::new();
    }
    let text = match std::fs::read_to_string(&resolved) {
        Ok(text) => text,
        Err(error) => {
            cx.error(path, format!("cannot read {file:?}: {}", io_reason(&error)));
            return Vec::new();
        }
    };
    let base_dir = resolved.parent().map_or_else(PathBuf::new, Path::to_path_buf);
    let mut imported = Checker::new(cx.env(), Syntax::Json, Some(file.to_owned()), &base_dir);
    let servers = match parse_json(&text) {
        Ok(root) => client::check(&mut imported, &root),
        Err(error) => {
            imported.error("", error.message);
            Vec::new()
        }
    };
    cx.absorb(imported);
    servers
}

/// Reports servers defined more than once (in the TOML and an import, or in two imports).
fn duplicate_names(entries: &[Entry]) -> Vec<ConfigError> {
    let mut errors = Vec::new();
    let mut first = BTreeMap::<&str, &Entry>::new();
    for entry in entries {
        match first.get(entry.server.name.as_str()) {
            Some(other) => errors.push(ConfigError::new(
                entry.place.clone(),
                format!("server {:?} is also defined at {}", entry.server.name, other.place),
            )),
            None => {
                first.insert(&entry.server.name, entry);
            }
        }
    }
    errors
}

/// `path`, made absolute with `env`'s current directory when it is relative.
pub(crate) fn absolute(path: &Path, env: &dyn Environment) -> PathBuf {
    match env.current_dir() {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_path_buf(),
    }
}

/// A short, stable reason for an IO error.
pub(crate) fn io_reason(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "file not found".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        std::io::ErrorKind::IsADirectory => "is a directory".to_owned(),
        _ => error.to_string(),
    }
}
