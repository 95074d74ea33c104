//! The scripts of one process, by file: each file is compiled once however many pipeline
//! entries name it, and a change to it (seen by [`crate::watch`]) is applied here: a changed
//! file is compiled and swapped in, a file that no longer compiles keeps its last version
//! running, a deleted file leaves its interceptor with nothing to run. Each outcome is logged
//! and published: `script/reloaded`, `script/compile_failed` (with file, line, column and
//! message), `script/removed`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use toolgate_audit::{Event, EventBus};

use crate::compile::CompileError;
use crate::sandbox::Limits;
use crate::script::{Engine, EngineError, Script};

/// The scripts loaded so far, and the engine they share (set up at the first load).
pub struct Scripts {
    events: Option<EventBus>,
    limits: Limits,
    engine: OnceLock<Result<Arc<Engine>, String>>,
    loaded: Mutex<BTreeMap<PathBuf, Arc<Script>>>,
}

impl std::fmt::Debug for Scripts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let loaded = self.loaded.lock().expect("scripts lock");
        f.debug_struct("Scripts").field("loaded", &loaded.keys().collect::<Vec<_>>()).finish()
    }
}

/// Why a script could not be loaded.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Compile(#[from] CompileError),
    #[error("{0}")]
    Engine(String),
}

impl Scripts {
    /// No scripts yet; they will publish to `events` and run under `limits`.
    pub fn new(events: Option<EventBus>, limits: Limits) -> Arc<Scripts> {
        Arc::new(Scripts { events, limits, engine: OnceLock::new(), loaded: Mutex::default() })
    }

    /// The engine, set up on first use.
    pub fn engine(&self) -> Result<Arc<Engine>, LoadError> {
        self.engine
            .get_or_init(|| {
                Engine::new(self.events.clone(), self.limits)
                    .map_err(|e: EngineError| e.to_string())
            })
            .clone()
            .map_err(LoadError::Engine)
    }

    /// The script at `path`, compiled on first use.
    pub fn load(&self, path: &Path) -> Result<Arc<Script>, LoadError> {
        let key = key(path);
        if let Some(script) = self.loaded.lock().expect("scripts lock").get(&key) {
            return Ok(script.clone());
        }
        let script = Script::load(self.engine()?, &key)?;
        let mut loaded = self.loaded.lock().expect("scripts lock");
        Ok(loaded.entry(key).or_insert(script).clone())
    }

    /// Forgets the script loaded from `path` (its file is gone and its entry left the
    /// pipeline): a file there later is a new script.
    pub fn forget(&self, path: &Path) {
        self.loaded.lock().expect("scripts lock").remove(&key(path));
    }

    /// Every script loaded, by file.
    pub fn loaded(&self) -> Vec<Arc<Script>> {
        self.loaded.lock().expect("scripts lock").values().cloned().collect()
    }

    /// Applies changes to `paths`: reloads the scripts loaded from them, unloads those whose
    /// file is gone. Files not loaded before are left alone (their pipeline entry does not
    /// exist yet); they are returned, so that the caller can say so.
    pub fn changed(&self, paths: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
        let mut unknown = Vec::new();
        for path in paths {
            let key = key(path);
            let script = self.loaded.lock().expect("scripts lock").get(&key).cloned();
            let Some(script) = script else {
                if path.exists() {
                    unknown.push(path.clone());
                }
                continue;
            };
            let file = script.path().display().to_string();
            if !script.path().exists() {
                script.unload();
                tracing::warn!(script = %file, "the script file is gone; nothing runs it until it is back");
                self.publish(
                    Event::new("script/removed").with("script", script.name()).with("file", file),
                );
                continue;
            }
            match script.reload() {
                Ok(version) => {
                    tracing::info!(script = %file, version, "script reloaded");
                    self.publish(
                        Event::new("script/reloaded")
                            .with("script", script.name())
                            .with("file", file)
                            .with("version", version),
                    );
                }
                Err(error) => self.compile_failed(script.name(), &error),
            }
        }
        unknown
    }

    /// Logs and publishes why a script did not compile; its last version keeps running.
    pub fn compile_failed(&self, name: &str, error: &CompileError) {
        let file = error.path.display().to_string();
        tracing::warn!(script = %file, "the script does not compile; its last version keeps running: {error}");
        tracing::debug!(script = %file, "{}", error.rendered);
        for diagnostic in error.diagnostics.iter().filter(|d| d.error) {
            self.publish(
                Event::new("script/compile_failed")
                    .with("script", name)
                    .with("file", file.clone())
                    .with("line", diagnostic.line)
                    .with("column", diagnostic.column)
                    .with("message", diagnostic.message.clone()),
            );
        }
    }

    /// Publishes `event` when there is a bus.
    pub fn publish(&self, event: Event) {
        if let Some(events) = &self.events {
            events.publish(event);
        }
    }
}

/// The `*.rn` files directly in `folder`, sorted; none when it does not exist.
pub fn discover(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| crate::watch::is_script(path) && path.is_file())
        .collect();
    files.sort();
    files
}

/// The key a file is known by: absolute, so that two spellings of one file are one script.
fn key(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}
