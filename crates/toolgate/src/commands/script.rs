//! `toolgate script check|test|new|serve`: compile scripts and show what the compiler says,
//! run a script's hooks on a sample call, write a starting point, serve a script's own tools
//! alone on stdio. Nothing else is started.

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use toolgate_scripts::hooks::{self, BeforeCall};
use toolgate_scripts::{Compiled, Engine, Limits};

use crate::GlobalArgs;
use crate::setup;

#[derive(Debug, Subcommand)]
pub(crate) enum ScriptCommand {
    /// Compile scripts and print what the Rune compiler says (errors and warnings, with file,
    /// line and column); exit 1 when one does not compile.
    Check(CheckArgs),
    /// Run a script's hooks on a sample call (and result) and print what each did; a call of
    /// one of the script's own tools runs it too (without a gateway: `toolgate::call` fails).
    Test(TestArgs),
    /// Write a commented starting point, NAME.rn, into the script folder.
    New(NewArgs),
    /// Serve a script's own tools alone as an MCP server on stdio (to try them with any MCP
    /// client), reloading the file when it changes; `toolgate::call` has no gateway here.
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The script file (.rn).
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The script files (.rn).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Print the problems as JSON: one object per file, with its diagnostics.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct TestArgs {
    /// The script file (.rn).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The call, as JSON: `{"name": "fs__write_file", "arguments": {...}}` (the server and
    /// tool are read from the name, or given as "server" and "tool").
    #[arg(long, value_name = "JSON")]
    call: String,
    /// The result `after_call` is given, as JSON (a CallToolResult) [default: a result with
    /// one text block].
    #[arg(long, value_name = "JSON")]
    result: Option<String>,
    /// The tools `on_list_tools` is given, as a JSON array (each with its "server").
    #[arg(long, value_name = "JSON")]
    tools: Option<String>,
    /// Print what each hook did as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct NewArgs {
    /// The script's name (letters, digits, `_` and `-`); the file is NAME.rn.
    name: String,
    /// The folder to write into [default: the first script folder of the config, else
    /// .toolgate/scripts].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub(crate) async fn run(global: &GlobalArgs, command: ScriptCommand) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    match command {
        ScriptCommand::Check(args) => check(args),
        ScriptCommand::Test(args) => test(args).await,
        ScriptCommand::New(args) => new(global, args),
        ScriptCommand::Serve(args) => serve(args).await,
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let scripts = toolgate_scripts::Scripts::new(None, Limits::default());
    let script = match scripts.load(&args.file) {
        Ok(script) => script,
        Err(toolgate_scripts::LoadError::Compile(error)) => {
            eprint!("{}", error.rendered);
            return Ok(ExitCode::FAILURE);
        }
        Err(error) => return Err(error.into()),
    };
    if script.current().is_some_and(|c| c.tools().is_empty()) {
        tracing::warn!(script = %args.file.display(), "the script defines no tools (pub fn tools()); it serves none until it does");
    }
    let folder = script.path().parent().map(Path::to_owned).unwrap_or_default();
    let reloading = scripts.clone();
    let _watcher = toolgate_scripts::watch::watch(&[folder], move |paths| {
        reloading.changed(&paths);
    })
    .map_err(|error| tracing::warn!(%error, "the script cannot be watched; changes need a restart"))
    .ok();
    let server = toolgate_scripts::serve::ScriptServer::new(
        script,
        scripts,
        None,
        toolgate_scripts::DEFAULT_TOOL_TIMEOUT,
    );
    server.serve(rmcp::transport::stdio()).await.map_err(anyhow::Error::msg)?;
    Ok(ExitCode::SUCCESS)
}

fn engine() -> anyhow::Result<std::sync::Arc<Engine>> {
    Ok(Engine::new(None, Limits::default())?)
}

fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let engine = engine()?;
    let color = std::io::stderr().is_terminal() && !args.json;
    let mut all_ok = true;
    let mut reports = Vec::new();
    for file in &args.files {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(error) => {
                all_ok = false;
                let message = format!("could not be read: {error}");
                if args.json {
                    reports.push(json!({"file": file, "ok": false, "diagnostics": [
                        {"line": 0, "column": 0, "error": true, "message": message}]}));
                } else {
                    eprintln!("{}: {message}", file.display());
                }
                continue;
            }
        };
        if args.json {
            let (ok, diagnostics) = match engine.compile(file, &text) {
                Ok(compiled) => (true, compiled.warnings),
                Err(error) => (false, error.diagnostics),
            };
            all_ok &= ok;
            let diagnostics: Vec<Value> = diagnostics
                .iter()
                .map(|d| json!({"line": d.line, "column": d.column, "error": d.error, "message": d.message}))
                .collect();
            reports.push(json!({"file": file, "ok": ok, "diagnostics": diagnostics}));
            continue;
        }
        let (ok, rendered) = engine.check(file, &text, color);
        all_ok &= ok;
        eprint!("{rendered}");
        if ok {
            let tools: Vec<String> = engine
                .compile(file, &text)
                .map(|c| c.tools().iter().map(|t| t.tool.name.to_string()).collect())
                .unwrap_or_default();
            match tools.is_empty() {
                true => println!("{}: ok", file.display()),
                false => println!("{}: ok (tools: {})", file.display(), tools.join(", ")),
            }
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    }
    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

async fn test(args: TestArgs) -> anyhow::Result<ExitCode> {
    let engine = engine()?;
    let compiled = match engine.compile_file(&args.file) {
        Ok(compiled) => compiled,
        Err(error) => {
            eprint!("{}", error.rendered);
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut call: Value = serde_json::from_str(&args.call).context("--call is not JSON")?;
    let Some(fields) = call.as_object_mut() else {
        anyhow::bail!("--call must be a JSON object with \"name\" and \"arguments\"");
    };
    let name = fields.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let (server, tool) = name.split_once("__").unwrap_or(("", &name));
    fields.entry("server").or_insert_with(|| json!(server));
    fields.entry("tool").or_insert_with(|| json!(tool));
    fields.entry("arguments").or_insert_with(|| json!({}));
    let ctx = |kept: Value| {
        json!({"server": call["server"], "tool": call["tool"], "principal": "local:local",
               "session": null, "request_id": "script-test", "kept": kept})
    };
    let mut report = serde_json::Map::new();
    let mut failed = false;
    let mut kept = Value::Null;
    let limits = engine.limits();
    if compiled.defines("before_call") {
        let outcome =
            compiled.call("before_call", vec![call.clone(), ctx(Value::Null)], limits).await;
        let entry = match outcome.map_err(|f| f.to_string()).and_then(hooks::before_call) {
            Ok((decision, keep)) => {
                kept = keep.clone().unwrap_or(Value::Null);
                let (what, value) = match decision {
                    BeforeCall::Continue(None) => ("continue", Value::Null),
                    BeforeCall::Continue(Some(arguments)) => {
                        ("arguments", Value::Object(arguments))
                    }
                    BeforeCall::Deny(reason) => ("deny", Value::String(reason)),
                    BeforeCall::Answer(answer) => ("answer", answer),
                };
                json!({"decision": what, "value": value, "kept": keep})
            }
            Err(error) => {
                failed = true;
                json!({"error": error})
            }
        };
        report.insert("before_call".into(), entry);
    }
    if compiled.defines("after_call") {
        let result = match &args.result {
            Some(text) => serde_json::from_str(text).context("--result is not JSON")?,
            None => json!({"content": [{"type": "text", "text": "a sample result"}]}),
        };
        report.insert(
            "after_call".into(),
            run_after(&compiled, call.clone(), result, ctx(kept), limits, &mut failed).await,
        );
    }
    if compiled.defines("on_list_tools") {
        let tools: Value = match &args.tools {
            Some(text) => serde_json::from_str(text).context("--tools is not JSON")?,
            None => json!([{"name": name, "server": server, "description": "a sample tool",
                            "inputSchema": {"type": "object"}}]),
        };
        let outcome = compiled.call("on_list_tools", vec![tools, ctx(Value::Null)], limits).await;
        let entry = match outcome.map_err(|f| f.to_string()).and_then(hooks::on_list_tools) {
            Ok(None) => json!({"decision": "unchanged"}),
            Ok(Some(tools)) => json!({"decision": "tools", "value": tools}),
            Err(error) => {
                failed = true;
                json!({"error": error})
            }
        };
        report.insert("on_list_tools".into(), entry);
    }
    // A call of one of the script's own tools (by its name, or as clients see it:
    // `<file>__<tool>`) runs it; `toolgate::call` has no gateway here.
    let stem = args.file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let own = compiled
        .tool(&name)
        .or_else(|| name.strip_prefix(&format!("{stem}__")).and_then(|tool| compiled.tool(tool)));
    if let Some(tool) = own {
        let function = tool.function.clone();
        let tool_ctx = json!({"server": stem, "tool": tool.tool.name, "principal": "local:local",
                              "session": null, "request_id": "script-test", "depth": 0});
        let arguments = call["arguments"].clone();
        let outcome = compiled.call(&function, vec![arguments, tool_ctx], limits).await;
        // As a client of any era reads it.
        let shown = |result: toolgate_core::mcp::CallToolResult| {
            let mut value = serde_json::to_value(result).unwrap_or_default();
            if let Some(fields) = value.as_object_mut() {
                fields.remove("resultType");
            }
            value
        };
        let entry = match outcome {
            Ok(value) => {
                json!({"decision": "tool_result", "value": shown(toolgate_scripts::tools::result_of(value))})
            }
            Err(toolgate_scripts::Failure::Returned(reason)) => json!({
                "decision": "tool_result",
                "value": shown(toolgate_scripts::tools::error_result(reason))
            }),
            Err(failure) => {
                failed = true;
                json!({"error": failure.to_string()})
            }
        };
        report.insert(function, entry);
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else if report.is_empty() {
        writeln!(
            out,
            "{}: defines none of {}, and no tool of that name",
            args.file.display(),
            toolgate_scripts::HOOKS.join(", ")
        )?;
    } else {
        for (hook, entry) in &report {
            writeln!(out, "{hook}: {}", describe(entry))?;
        }
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

async fn run_after(
    compiled: &Compiled,
    call: Value,
    result: Value,
    ctx: Value,
    limits: Limits,
    failed: &mut bool,
) -> Value {
    let outcome = compiled.call("after_call", vec![call, result, ctx], limits).await;
    match outcome.map_err(|f| f.to_string()).and_then(hooks::after_call) {
        Ok(None) => json!({"decision": "unchanged"}),
        Ok(Some(result)) => json!({"decision": "result", "value": result}),
        Err(error) => {
            *failed = true;
            json!({"error": error})
        }
    }
}

/// One hook's entry in words.
fn describe(entry: &Value) -> String {
    if let Some(error) = entry.get("error") {
        return format!("failed: {}", error.as_str().unwrap_or_default());
    }
    let value = || entry["value"].to_string();
    let mut text = match entry["decision"].as_str().unwrap_or_default() {
        "continue" => "lets the call go on unchanged".to_owned(),
        "arguments" => format!("lets the call go on with the arguments {}", value()),
        "deny" => format!("refuses the call: {}", entry["value"].as_str().unwrap_or_default()),
        "answer" => format!("answers in the server's place: {}", value()),
        "unchanged" => "leaves it as it was".to_owned(),
        "tool_result" => format!("answers: {}", value()),
        "result" => format!("gives instead: {}", value()),
        "tools" => format!("shows instead: {}", value()),
        other => other.to_owned(),
    };
    if let Some(kept) = entry.get("kept").filter(|k| !k.is_null()) {
        text.push_str(&format!("; keeps {kept} for after_call"));
    }
    text
}

fn new(global: &GlobalArgs, args: NewArgs) -> anyhow::Result<ExitCode> {
    let name = &args.name;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        anyhow::bail!("{name:?} is not a script name: use letters, digits, `_` and `-`");
    }
    let dir = match args.dir {
        Some(dir) => dir,
        None => default_folder(global)?,
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("{name}.rn"));
    let mut file = match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            anyhow::bail!("{} exists already; not overwritten", path.display())
        }
        Err(error) => return Err(error).with_context(|| format!("writing {}", path.display())),
    };
    file.write_all(toolgate_scripts::TEMPLATE.as_bytes())?;
    println!("{}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// The first script folder of the config found, else `.toolgate/scripts` here; an error for a
/// config found in the working directory and not trusted.
fn default_folder(global: &GlobalArgs) -> anyhow::Result<PathBuf> {
    match setup::load_config(global) {
        Ok((config, source)) => {
            if let Some(dir) =
                setup::script_folders(&config, source.dir().as_deref()).into_iter().next()
            {
                return Ok(dir);
            }
        }
        Err(error) if error.is::<crate::trust::Untrusted>() => return Err(error),
        Err(_) => {}
    }
    Ok(Path::new(".toolgate").join("scripts"))
}
