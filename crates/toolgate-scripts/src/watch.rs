//! Script files watched: a change (written, created, renamed, removed) to a `.rn` file in a
//! watched folder is reported once things are quiet for a moment, because editors save in
//! several steps (write a temporary file, rename it over the old one).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{RecursiveMode, Watcher as _};
use tokio::sync::mpsc;

/// How long things must be quiet before a change is reported.
pub const DEBOUNCE: Duration = Duration::from_millis(100);

/// Keeps the folders watched while it lives.
pub struct Watcher {
    _inner: notify::RecommendedWatcher,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watcher")
    }
}

/// Whether `path` names a script file.
pub fn is_script(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "rn")
}

/// Watches `folders` (those that exist) and calls `changed` with the script files that
/// changed, [`DEBOUNCE`] after the last change of a burst. Must be called within a Tokio
/// runtime.
pub fn watch(
    folders: &[PathBuf],
    changed: impl Fn(BTreeSet<PathBuf>) + Send + Sync + 'static,
) -> notify::Result<Watcher> {
    let (tx, mut rx) = mpsc::unbounded_channel::<PathBuf>();
    let mut inner = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if event.kind.is_access() {
            return;
        }
        for path in event.paths.into_iter().filter(|p| is_script(p)) {
            let _ = tx.send(path);
        }
    })?;
    for folder in folders.iter().filter(|f| f.is_dir()) {
        inner.watch(folder, RecursiveMode::NonRecursive)?;
    }
    // A change compiles the script and runs its `meta()` and `tools()`, which may take up to
    // the invocation timeout: on a blocking thread, not one of the runtime's workers.
    let changed = std::sync::Arc::new(changed);
    let apply = move |burst: BTreeSet<PathBuf>| {
        let changed = changed.clone();
        async move {
            let _ = tokio::task::spawn_blocking(move || changed(burst)).await;
        }
    };
    tokio::spawn(async move {
        while let Some(first) = rx.recv().await {
            let mut burst = BTreeSet::from([first]);
            loop {
                match tokio::time::timeout(DEBOUNCE, rx.recv()).await {
                    Ok(Some(path)) => {
                        burst.insert(path);
                    }
                    Ok(None) => return apply(burst).await,
                    Err(_) => break,
                }
            }
            apply(burst).await;
        }
    });
    Ok(Watcher { _inner: inner })
}
