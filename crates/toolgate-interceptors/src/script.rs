//! `script`: a user's Rune script as an interceptor (`toolgate-scripts` compiles, contains and
//! reloads it).
//!
//! ```toml
//! [[pipeline]]
//! kind = "script"
//! file = "scripts/deny_prod.rn"   # relative to the config's folder
//! priority = -10                  # every common setting overrides what the script's meta() says
//! ```
//!
//! Scripts found in the script folders (`[scripts] dirs`, by default `.toolgate/scripts/`
//! beside the config) get an entry of their own (see [`discovered`]); an entry in
//! `[[pipeline]]` naming the same file takes its place.
//!
//! The script's hooks (see `toolgate_scripts::hooks`): `before_call` (request phase of
//! `tools/call`), `after_call` (its response phase), `on_list_tools` (response phase of
//! `tools/list`). The entry hooks all three whatever the current version defines, so that a
//! reload may add one; a hook the version does not define lets the message through at once.
//! A call keeps the version its request phase ran to its response phase.
//!
//! Settings: the entry's, else the script's `meta()`, else these defaults: named after the
//! file, a mutation, priority 0, fails closed (a script that fails refuses the call unless it
//! says `fail_open: true`), the `[scripts]` timeout. A script that fails (an error, its
//! instruction budget, its memory limit, its timeout, a panic) publishes `script/failed` with
//! the script, the function and the cause.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use toolgate_audit::{Event, EventBus};
use toolgate_config::InterceptorConfig;
use toolgate_core::{Mode, mcp};
use toolgate_intercept::{
    CallContext, Descriptor, Hook, InterceptError, InterceptionEvent, Interceptor, InterceptorType,
    Listed, Message, Outcome, Phase, Refusal,
};
use toolgate_scripts::hooks::{self, BeforeCall};
use toolgate_scripts::{Compiled, Limits, Script, Scripts};

use crate::options::Options;
use crate::{OptionError, Services};

pub const KIND: &str = "script";

const OPTIONS: &[&str] = &["file"];

/// How much later than the script's own timeout the pipeline gives up on it.
const BACKSTOP: std::time::Duration = std::time::Duration::from_millis(250);

/// A script in the pipeline.
pub struct ScriptInterceptor {
    descriptor: Descriptor,
    script: Arc<Script>,
    scripts: Arc<Scripts>,
    limits: Limits,
    events: EventBus,
}

/// What a call's request phase left for its response phase: the version it ran and what
/// `before_call` kept, per script entry.
#[derive(Default)]
struct Running(HashMap<String, (Arc<Compiled>, Value)>);

impl ScriptInterceptor {
    pub fn from_config(
        entry: &InterceptorConfig,
        services: &Services,
    ) -> Result<ScriptInterceptor, Vec<OptionError>> {
        let mut options = Options::new(entry.path.clone(), &entry.options);
        options.only(OPTIONS);
        let Some(file) = options.string("file") else {
            let path = options.at("file");
            options.error(&path, "missing `file` (the script, a .rn file)");
            return Err(options.finish(None, |d: Descriptor| d).err().unwrap_or_default());
        };
        let path = resolve(file, services.config_dir.as_deref());
        let script = match services.scripts.load(&path) {
            Ok(script) => script,
            Err(error) => {
                let at = options.at("file");
                options.error(&at, error.to_string());
                return Err(options.finish(None, |d: Descriptor| d).err().unwrap_or_default());
            }
        };
        let meta = script.current().map(|c| c.meta.clone()).unwrap_or_default();
        let mut merged = entry.clone();
        merged.name = entry.name.clone().or_else(|| Some(script.name().to_owned()));
        if merged.priority == 0 {
            merged.priority = meta.priority.unwrap_or(0);
        }
        merged.fail_open = entry.fail_open.or(meta.fail_open);
        let limits = services.scripts_limits;
        let timeout = entry.timeout.or(meta.timeout).unwrap_or(limits.timeout);
        // The script's own timeout ends it and says so (`script/failed`, cause `timeout`); the
        // pipeline's, a little later, is only the backstop: were it first, the script would be
        // dropped without a word.
        merged.timeout = Some(timeout + BACKSTOP);
        if entry.mode == Mode::Active && meta.audit == Some(true) {
            merged.mode = Mode::Audit;
        }
        if merged.servers.is_empty() {
            merged.servers = meta.servers.clone();
        }
        if merged.tools.is_empty() {
            merged.tools = meta.tools.clone();
        }
        let interceptor_type = if meta.validation == Some(true) {
            InterceptorType::Validation
        } else {
            InterceptorType::Mutation
        };
        let hooks = vec![
            Hook::new(["tools/call"], Phase::Request).expect("a literal event"),
            Hook::new(["tools/call"], Phase::Response).expect("a literal event"),
            Hook::new(["tools/list"], Phase::Response).expect("a literal event"),
        ];
        let descriptor = Descriptor::new(KIND, KIND, interceptor_type, hooks);
        let descriptor = options.configure(descriptor, &merged);
        let limits = Limits { timeout, ..limits };
        options.finish(descriptor, |descriptor| ScriptInterceptor {
            descriptor,
            script,
            scripts: services.scripts.clone(),
            limits,
            events: services.events.clone(),
        })
    }

    /// Calls `function` of `compiled`; a failure is published and becomes the interceptor's.
    async fn call(
        &self,
        compiled: &Compiled,
        function: &str,
        args: Vec<Value>,
    ) -> Result<Value, InterceptError> {
        compiled
            .call(function, args, self.limits)
            .await
            .map_err(|failure| self.failed(function, failure.cause(), failure.to_string()))
    }

    fn refusal(&self, reason: String) -> Refusal {
        Refusal { interceptor: self.descriptor.name.clone(), reason }
    }

    /// A script's answer that is not what the hook may return: a failure of the script.
    fn misread(&self, function: &str, problem: String) -> InterceptError {
        self.failed(function, "result", problem)
    }

    /// Logs and publishes `script/failed`; the interceptor's failure that it is.
    fn failed(&self, function: &str, cause: &str, error: String) -> InterceptError {
        tracing::warn!(script = %self.script.path().display(), function, cause, %error, "script failed");
        self.events.publish(
            Event::new("script/failed")
                .with("script", self.script.name())
                .with("interceptor", self.descriptor.name.clone())
                .with("function", function)
                .with("cause", cause)
                .with("error", error.clone()),
        );
        InterceptError(format!("script {} ({function}): {error}", self.script.name()))
    }

    async fn before_call(
        &self,
        params: &mcp::CallToolRequestParams,
        ctx: &mut CallContext,
    ) -> Result<Outcome, InterceptError> {
        let Some(compiled) = self.script.current() else { return Ok(Outcome::Continue) };
        if !compiled.defines("before_call") {
            remember(ctx, &self.descriptor.name, compiled, Value::Null);
            return Ok(Outcome::Continue);
        }
        let call = call_json(params, ctx);
        let value =
            self.call(&compiled, "before_call", vec![call, ctx_json(ctx, Value::Null)]).await?;
        let (decision, kept) =
            hooks::before_call(value).map_err(|p| self.misread("before_call", p))?;
        remember(ctx, &self.descriptor.name, compiled, kept.unwrap_or(Value::Null));
        Ok(match decision {
            BeforeCall::Continue(None) => Outcome::Continue,
            BeforeCall::Continue(Some(arguments)) => {
                let mut params = params.clone();
                params.arguments = Some(arguments);
                Outcome::Rewrite(Message::CallTool(params))
            }
            BeforeCall::Deny(reason) => Outcome::Refuse(self.refusal(reason)),
            BeforeCall::Answer(answer) => {
                let result =
                    serde_json::from_value::<mcp::CallToolResult>(answer).map_err(|e| {
                        self.misread("before_call", format!("answer is not a CallToolResult: {e}"))
                    })?;
                Outcome::Answer(Message::ToolResult(result))
            }
        })
    }

    async fn after_call(
        &self,
        result: &mcp::CallToolResult,
        ctx: &mut CallContext,
    ) -> Result<Outcome, InterceptError> {
        let (compiled, kept) =
            match ctx.get::<Running>().and_then(|r| r.0.get(&self.descriptor.name)) {
                Some((compiled, kept)) => (compiled.clone(), kept.clone()),
                None => match self.script.current() {
                    Some(compiled) => (compiled, Value::Null),
                    None => return Ok(Outcome::Continue),
                },
            };
        if !compiled.defines("after_call") {
            return Ok(Outcome::Continue);
        }
        let call = json!({
            "name": ctx.target.as_ref().map(|t| t.exposed.clone()),
            "server": ctx.target.as_ref().map(|t| t.server.clone()),
            "tool": ctx.target.as_ref().map(|t| t.original.clone()),
        });
        let result_json =
            serde_json::to_value(result).map_err(|e| InterceptError(e.to_string()))?;
        let value = self
            .call(&compiled, "after_call", vec![call, result_json, ctx_json(ctx, kept)])
            .await?;
        match hooks::after_call(value).map_err(|p| self.misread("after_call", p))? {
            None => Ok(Outcome::Continue),
            Some(changed) => {
                let changed =
                    serde_json::from_value::<mcp::CallToolResult>(changed).map_err(|e| {
                        self.misread(
                            "after_call",
                            format!("the result is not a CallToolResult: {e}"),
                        )
                    })?;
                Ok(Outcome::Rewrite(Message::ToolResult(changed)))
            }
        }
    }

    async fn on_list_tools(
        &self,
        tools: &[Listed<mcp::Tool>],
        ctx: &CallContext,
    ) -> Result<Outcome, InterceptError> {
        let Some(compiled) = self.script.current() else { return Ok(Outcome::Continue) };
        if !compiled.defines("on_list_tools") {
            return Ok(Outcome::Continue);
        }
        let listed: Vec<Value> = tools
            .iter()
            .map(|l| {
                let mut tool = serde_json::to_value(&l.item).unwrap_or_default();
                if let Value::Object(fields) = &mut tool {
                    fields.insert("server".into(), Value::String(l.server.clone()));
                }
                tool
            })
            .collect();
        let value = self
            .call(
                &compiled,
                "on_list_tools",
                vec![Value::Array(listed), ctx_json(ctx, Value::Null)],
            )
            .await?;
        let Some(shown) =
            hooks::on_list_tools(value).map_err(|p| self.misread("on_list_tools", p))?
        else {
            return Ok(Outcome::Continue);
        };
        let by_name: HashMap<&str, &Listed<mcp::Tool>> =
            tools.iter().map(|l| (l.item.name.as_ref(), l)).collect();
        let mut out = Vec::with_capacity(shown.len());
        for mut tool in shown {
            if let Value::Object(fields) = &mut tool {
                fields.remove("server");
            }
            let tool = serde_json::from_value::<mcp::Tool>(tool).map_err(|e| {
                self.misread("on_list_tools", format!("a tool it returned is not a tool: {e}"))
            })?;
            // A script may hide, reorder and reword tools; a tool it made up has no server.
            let Some(listed) = by_name.get(tool.name.as_ref()) else { continue };
            out.push(Listed {
                server: listed.server.clone(),
                original: listed.original.clone(),
                item: tool,
            });
        }
        Ok(Outcome::Rewrite(Message::Tools(out)))
    }
}

impl Interceptor for ScriptInterceptor {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// Only when the version the call runs defines the hook (the one its request phase kept,
    /// else the current one): a script with tools and no `after_call` leaves results to pass
    /// on as the upstream wrote them.
    fn acts_on(&self, event: InterceptionEvent, phase: Phase, ctx: &CallContext) -> bool {
        let hook = match (event, phase) {
            (InterceptionEvent::ToolsCall, Phase::Request) => "before_call",
            (InterceptionEvent::ToolsCall, Phase::Response) => "after_call",
            (InterceptionEvent::ToolsList, Phase::Response) => "on_list_tools",
            _ => return false,
        };
        let kept = ctx.get::<Running>().and_then(|r| r.0.get(&self.descriptor.name));
        match kept {
            Some((compiled, _)) => compiled.defines(hook),
            None => self.script.current().is_some_and(|compiled| compiled.defines(hook)),
        }
    }

    fn intercept<'a>(
        &'a self,
        event: InterceptionEvent,
        phase: Phase,
        message: &'a Message,
        ctx: &'a mut CallContext,
    ) -> BoxFuture<'a, Result<Outcome, InterceptError>> {
        Box::pin(async move {
            match (event, phase, message) {
                (InterceptionEvent::ToolsCall, Phase::Request, Message::CallTool(params)) => {
                    self.before_call(params, ctx).await
                }
                (InterceptionEvent::ToolsCall, Phase::Response, Message::ToolResult(result)) => {
                    self.after_call(result, ctx).await
                }
                (InterceptionEvent::ToolsList, Phase::Response, Message::Tools(tools)) => {
                    self.on_list_tools(tools, ctx).await
                }
                _ => Ok(Outcome::Continue),
            }
        })
    }
}

impl ScriptInterceptor {
    /// The script registry this entry's script belongs to.
    pub fn scripts(&self) -> &Arc<Scripts> {
        &self.scripts
    }
}

fn remember(ctx: &mut CallContext, name: &str, compiled: Arc<Compiled>, kept: Value) {
    let mut running = ctx.remove::<Running>().unwrap_or_default();
    running.0.insert(name.to_owned(), (compiled, kept));
    ctx.insert(running);
}

fn call_json(params: &mcp::CallToolRequestParams, ctx: &CallContext) -> Value {
    json!({
        "name": params.name,
        "arguments": params.arguments.clone().unwrap_or_default(),
        "server": ctx.target.as_ref().map(|t| t.server.clone()),
        "tool": ctx.target.as_ref().map(|t| t.original.clone()),
    })
}

fn ctx_json(ctx: &CallContext, kept: Value) -> Value {
    json!({
        "server": ctx.target.as_ref().map(|t| t.server.clone()),
        "tool": ctx.target.as_ref().map(|t| t.original.clone()),
        "principal": ctx.principal.to_string(),
        "groups": ctx.principal.groups.clone(),
        "tenant": ctx.principal.tenant.clone(),
        "session": ctx.session.clone(),
        "request_id": ctx.request_id.clone(),
        "kept": kept,
    })
}

/// `file` as written in the config: relative to the config's folder.
fn resolve(file: &str, config_dir: Option<&Path>) -> PathBuf {
    let path = PathBuf::from(file);
    match config_dir {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path,
    }
}

/// The script files `entries` name (`kind = "script"`), resolved against `config_dir`, each
/// once, in entry order.
pub fn files(entries: &[InterceptorConfig], config_dir: Option<&Path>) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in entries.iter().filter(|e| e.kind == KIND) {
        let Some(file) = entry.options.get("file").and_then(Value::as_str) else { continue };
        let file = absolute(&resolve(file, config_dir));
        if !files.contains(&file) {
            files.push(file);
        }
    }
    files
}

/// The `[[pipeline]]` entries with an entry added for each script found in `folders` that no
/// `script` entry names already (compared as absolute paths), in file order, after the rest.
pub fn discovered(
    entries: &[InterceptorConfig],
    folders: &[PathBuf],
    config_dir: Option<&Path>,
) -> Vec<InterceptorConfig> {
    let named: Vec<PathBuf> = entries
        .iter()
        .filter(|e| e.kind == KIND)
        .filter_map(|e| e.options.get("file")?.as_str().map(|f| absolute(&resolve(f, config_dir))))
        .collect();
    let mut all = entries.to_vec();
    for folder in folders {
        for file in toolgate_scripts::discover(folder) {
            if named.contains(&absolute(&file)) {
                continue;
            }
            all.push(discovered_entry(&file));
        }
    }
    all
}

/// The scripts of the script folders, kept in step with their files while toolgate runs: a
/// changed file is reloaded (by [`Scripts::changed`]), a new file gets an entry of its own at
/// the end of the pipeline, and a deleted one's entry leaves it. Scripts that `[[pipeline]]`
/// names keep their entry when their file is deleted (it does nothing until the file is back).
pub struct Discovery {
    folders: Vec<PathBuf>,
    named: Vec<PathBuf>,
    services: Services,
    pipeline: toolgate_intercept::Pipeline,
}

impl Discovery {
    /// Follows the scripts of `folders` for `pipeline`, built from `entries` with `services`.
    pub fn new(
        folders: &[PathBuf],
        entries: &[InterceptorConfig],
        services: &Services,
        pipeline: &toolgate_intercept::Pipeline,
    ) -> Discovery {
        let config_dir = services.config_dir.as_deref();
        let named = entries
            .iter()
            .filter(|e| e.kind == KIND && !e.path.starts_with("scripts."))
            .filter_map(|e| {
                e.options.get("file")?.as_str().map(|f| absolute(&resolve(f, config_dir)))
            })
            .collect();
        Discovery {
            folders: folders.iter().map(|f| absolute(f)).collect(),
            named,
            services: services.clone(),
            pipeline: pipeline.clone(),
        }
    }

    /// The folders to watch: the script folders and those of every script loaded.
    pub fn watched(&self) -> Vec<PathBuf> {
        let mut watched = self.folders.clone();
        for script in self.services.scripts.loaded() {
            if let Some(parent) = script.path().parent() {
                watched.push(parent.to_owned());
            }
        }
        watched.sort();
        watched.dedup();
        watched
    }

    /// Applies changes to the script files `paths`.
    pub fn apply(&self, paths: &std::collections::BTreeSet<PathBuf>) {
        let scripts = &self.services.scripts;
        let added = scripts.changed(paths);
        for path in paths {
            let path = absolute(path);
            let discovered = !self.named.contains(&path)
                && path.parent().is_some_and(|p| self.folders.iter().any(|f| f == p));
            if !discovered {
                if added.iter().any(|a| absolute(a) == path) {
                    tracing::warn!(script = %path.display(), "a new script file outside the script folders is not added; name it in [[pipeline]] or move it to a script folder");
                }
                continue;
            }
            let stem =
                path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            if !path.exists() {
                if self.pipeline.remove(&stem) {
                    scripts.forget(&path);
                    tracing::info!(script = %path.display(), "script removed from the pipeline");
                }
                continue;
            }
            if !added.iter().any(|a| absolute(a) == path) {
                continue;
            }
            let entry = discovered_entry(&path);
            match ScriptInterceptor::from_config(&entry, &self.services) {
                Ok(interceptor) => match self.pipeline.add(Arc::new(interceptor)) {
                    Ok(()) => {
                        tracing::info!(script = %path.display(), "script added to the pipeline");
                        scripts.publish(
                            Event::new("script/added")
                                .with("script", stem)
                                .with("file", path.display().to_string()),
                        );
                    }
                    Err(duplicate) => {
                        scripts.forget(&path);
                        tracing::warn!(script = %path.display(), "the script is not added: {duplicate}");
                    }
                },
                Err(errors) => {
                    scripts.forget(&path);
                    for error in errors {
                        tracing::warn!(script = %path.display(), "the script is not added: {error}");
                    }
                    if let Err(toolgate_scripts::LoadError::Compile(error)) =
                        scripts.engine().and_then(|e| e.compile_file(&path).map_err(Into::into))
                    {
                        scripts.compile_failed(&stem, &error);
                    }
                }
            }
        }
    }
}

/// The entry of a script found in a script folder: named after its file, at `scripts.<name>`.
fn discovered_entry(file: &Path) -> InterceptorConfig {
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let mut options = serde_json::Map::new();
    options.insert("file".into(), Value::String(file.to_string_lossy().into_owned()));
    let mut entry = InterceptorConfig::new(format!("scripts.{stem}"), KIND, options);
    entry.name = Some(stem);
    entry
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests;
