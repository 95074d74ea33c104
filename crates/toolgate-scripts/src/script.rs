//! A script file: compiled against the [`Engine`], swapped whole when it changes.
//!
//! A call loads the current version once ([`Script::current`]) and keeps it to the end, so a
//! reload never shows a call half of one version and half of another; a version that does not
//! compile leaves the one before it running.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwapOption;
use rune::runtime::RuntimeContext;
use rune::termcolor::ColorChoice;
use rune::{Context, Unit, Vm};
use toolgate_audit::EventBus;

use crate::calls::ToolAccess;
use crate::compile::{self, CompileError, Diagnostic};
use crate::meta::ScriptMeta;
use crate::sandbox::{self, Failure, Limits, Placement};
use crate::tools::ScriptTool;

/// Why the engine could not be set up (Rune refused a module: a bug, reported as it is).
#[derive(Debug, thiserror::Error)]
#[error("the script engine could not be set up: {0}")]
pub struct EngineError(String);

/// The Rune context scripts are compiled against, and the limits they run under.
pub struct Engine {
    context: Context,
    runtime: Arc<RuntimeContext>,
    limits: Limits,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl Engine {
    /// Rune's core modules without stdout (on stdio it is the MCP channel), and `toolgate`,
    /// whose `publish` goes to `events`.
    pub fn new(events: Option<EventBus>, limits: Limits) -> Result<Arc<Engine>, EngineError> {
        let failed = |e: &dyn std::fmt::Display| EngineError(e.to_string());
        let mut context = Context::with_config(false).map_err(|e| failed(&e))?;
        for module in crate::module::modules(events).map_err(|e| failed(&e))? {
            context.install(module).map_err(|e| failed(&e))?;
        }
        let runtime = Arc::new(context.runtime().map_err(|e| failed(&e))?);
        Ok(Arc::new(Engine { context, runtime, limits }))
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Compiles the file at `path` (reading it now).
    pub fn compile_file(&self, path: &Path) -> Result<Compiled, CompileError> {
        let text = std::fs::read_to_string(path).map_err(|e| CompileError {
            path: path.to_owned(),
            diagnostics: vec![Diagnostic {
                line: 0,
                column: 0,
                message: format!("could not be read: {e}"),
                error: true,
            }],
            rendered: format!("{}: could not be read: {e}\n", path.display()),
        })?;
        self.compile(path, &text)
    }

    /// Compiles `text`, read from `path`; runs its `meta()` when it has one.
    pub fn compile(&self, path: &Path, text: &str) -> Result<Compiled, CompileError> {
        let built = compile::compile(&self.context, path, text)?;
        // An invocation's deadline (a second by default) counts the time its native functions
        // take, and the first token count builds the tables (about a second): a script that
        // may count has them built now, as it loads, not in its first call. Told by its text:
        // a needless build costs that second once, and the memory of the tables.
        if text.contains("tokens") {
            toolgate_llm::tokens::Encoding::O200kBase.warm_up();
        }
        let probe = Vm::new(self.runtime.clone(), built.unit.clone());
        let defines = |name: &str| probe.lookup_function([name]).is_ok();
        let mut functions: Vec<String> = crate::HOOKS
            .iter()
            .chain(["meta", "tools"].iter())
            .filter(|name| defines(name))
            .map(|name| (*name).to_owned())
            .collect();
        functions.sort_unstable();
        let meta_failed = |problems: Vec<String>| CompileError {
            path: path.to_owned(),
            rendered: problems.iter().map(|p| format!("{}: {p}\n", path.display())).collect(),
            diagnostics: problems
                .into_iter()
                .map(|message| Diagnostic { line: 0, column: 0, message, error: true })
                .collect(),
        };
        let tools = if functions.iter().any(|f| f == "tools") {
            let value = sandbox::invoke_sync(
                self.runtime.clone(),
                built.unit.clone(),
                "tools",
                self.limits,
            )
            .map_err(|failure| meta_failed(vec![format!("tools() failed: {failure}")]))?;
            crate::tools::read(&value, defines).map_err(meta_failed)?
        } else {
            Vec::new()
        };
        let meta = if functions.iter().any(|f| f == "meta") {
            let value =
                sandbox::invoke_sync(self.runtime.clone(), built.unit.clone(), "meta", self.limits)
                    .map_err(|failure| meta_failed(vec![format!("meta() failed: {failure}")]))?;
            ScriptMeta::read(&value).map_err(meta_failed)?
        } else {
            ScriptMeta::default()
        };
        Ok(Compiled {
            path: path.to_owned(),
            unit: built.unit,
            runtime: self.runtime.clone(),
            functions,
            tools,
            meta,
            warnings: built.warnings,
        })
    }

    /// Compiles `text` and renders what the compiler said, as `toolgate script check` prints
    /// it; whether it compiled.
    pub fn check(&self, path: &Path, text: &str, color: bool) -> (bool, String) {
        let color = if color { ColorChoice::Always } else { ColorChoice::Never };
        let (ok, mut rendered) = compile::check(&self.context, path, text, color);
        if ok && let Err(error) = self.compile(path, text) {
            // It compiled, but its meta() is wrong.
            rendered.push_str(&error.rendered);
            return (false, rendered);
        }
        (ok, rendered)
    }
}

/// One version of a script, compiled.
pub struct Compiled {
    path: PathBuf,
    unit: Arc<Unit>,
    runtime: Arc<RuntimeContext>,
    functions: Vec<String>,
    tools: Vec<ScriptTool>,
    /// What its `meta()` declared.
    pub meta: ScriptMeta,
    /// What the compiler warned about.
    pub warnings: Vec<Diagnostic>,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("path", &self.path)
            .field("functions", &self.functions)
            .field("tools", &self.tools.iter().map(|t| &t.tool.name).collect::<Vec<_>>())
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

impl Compiled {
    /// Whether it defines `pub fn <function>` (among the hooks, `meta` and `tools`).
    pub fn defines(&self, function: &str) -> bool {
        self.functions.iter().any(|f| f == function)
    }

    /// The hooks it defines.
    pub fn hooks(&self) -> impl Iterator<Item = &str> {
        self.functions.iter().map(String::as_str).filter(|f| crate::HOOKS.contains(f))
    }

    /// The tools its `tools()` lists (none when it has no `tools()`).
    pub fn tools(&self) -> &[ScriptTool] {
        &self.tools
    }

    /// The tool it lists as `name`.
    pub fn tool(&self, name: &str) -> Option<&ScriptTool> {
        self.tools.iter().find(|t| t.tool.name == name)
    }

    /// Calls `function` with `args` (at most three) under `limits`, as a hook: on the caller's
    /// thread when its budget bounds how long it may take, on the script threads otherwise;
    /// `toolgate::call` is an error in it.
    pub async fn call(
        &self,
        function: &str,
        args: Vec<serde_json::Value>,
        limits: Limits,
    ) -> Result<serde_json::Value, Failure> {
        let (runtime, unit) = (self.runtime.clone(), self.unit.clone());
        let function = function.to_owned();
        sandbox::invoke(runtime, unit, function, args, limits, None, Placement::Bounded).await
    }

    /// [`Compiled::call`] for a tool's function, always on the script threads (a tool may run
    /// for as long as its `tool_timeout`): `toolgate::call` goes through `access`.
    pub async fn call_with(
        &self,
        function: &str,
        args: Vec<serde_json::Value>,
        limits: Limits,
        access: Option<ToolAccess>,
    ) -> Result<serde_json::Value, Failure> {
        let (runtime, unit) = (self.runtime.clone(), self.unit.clone());
        let function = function.to_owned();
        sandbox::invoke(runtime, unit, function, args, limits, access, Placement::Pool).await
    }
}

/// A script file and its current version.
pub struct Script {
    engine: Arc<Engine>,
    path: PathBuf,
    name: String,
    current: ArcSwapOption<Compiled>,
    version: AtomicU64,
    /// The version number, sent on every swap: what serves the script's tools follows it.
    changes: tokio::sync::watch::Sender<u64>,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("path", &self.path)
            .field("version", &self.version.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Script {
    /// Compiles the file at `path`.
    pub fn load(engine: Arc<Engine>, path: &Path) -> Result<Arc<Script>, CompileError> {
        let compiled = engine.compile_file(path)?;
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(Arc::new(Script {
            engine,
            path: path.to_owned(),
            name,
            current: ArcSwapOption::new(Some(Arc::new(compiled))),
            version: AtomicU64::new(1),
            changes: tokio::sync::watch::Sender::new(1),
        }))
    }

    /// Its file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's name without `.rn`.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The version calls starting now run; `None` once the file was deleted.
    pub fn current(&self) -> Option<Arc<Compiled>> {
        self.current.load_full()
    }

    /// How many versions were swapped in (1 after loading).
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }

    /// Compiles the file again and swaps the new version in; on an error the version before
    /// keeps running.
    pub fn reload(&self) -> Result<u64, CompileError> {
        let compiled = self.engine.compile_file(&self.path)?;
        self.current.store(Some(Arc::new(compiled)));
        let version = self.version.fetch_add(1, Ordering::SeqCst) + 1;
        self.changes.send_replace(version);
        Ok(version)
    }

    /// Follows the swaps: the receiver sees a new value after each reload or unload.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The file is gone: calls starting now find no version.
    pub fn unload(&self) {
        self.current.store(None);
        let version = self.version.fetch_add(1, Ordering::SeqCst) + 1;
        self.changes.send_replace(version);
    }
}

#[cfg(test)]
mod tests;
