//! The `toolgate` module scripts import: what a script needs and nothing that reaches outside
//! the process (no files, network or processes). [`API`] lists every item with its signature
//! and what it does; `docs/scripts-api.md` is generated from it, and a test checks that every
//! item listed is installed and every installed item listed.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use rune::runtime::{VmError, VmResult};
use rune::{ContextError, Module, Value, vm_try};
use toolgate_audit::{Event, EventBus};

use crate::sandbox::{MAX_INPUT, charge, out_of_memory, reserve};

/// One item of the `toolgate` module.
#[derive(Debug, Clone, Copy)]
pub struct ApiItem {
    /// Its path (`toolgate::json::parse`).
    pub path: &'static str,
    /// How it is called.
    pub signature: &'static str,
    /// What it does.
    pub doc: &'static str,
}

/// Every item of the `toolgate` module.
pub const API: &[ApiItem] = &[
    ApiItem {
        path: "toolgate::json::parse",
        signature: "parse(text) -> Result<value, error>",
        doc: "Reads JSON text into a value (objects, arrays, strings, numbers, booleans, `()` for null).",
    },
    ApiItem {
        path: "toolgate::json::stringify",
        signature: "stringify(value) -> Result<String, error>",
        doc: "Writes a value as compact JSON text.",
    },
    ApiItem {
        path: "toolgate::regex::is_match",
        signature: "is_match(pattern, text) -> Result<bool, error>",
        doc: "Whether `text` contains a match of `pattern` (Rust `regex` syntax; no look-around, linear time).",
    },
    ApiItem {
        path: "toolgate::regex::replace_all",
        signature: "replace_all(pattern, text, replacement) -> Result<String, error>",
        doc: "`text` with every match of `pattern` replaced (`$1`, `${name}` refer to groups).",
    },
    ApiItem {
        path: "toolgate::regex::find_all",
        signature: "find_all(pattern, text) -> Result<Vec<String>, error>",
        doc: "Every match of `pattern` in `text`, in order.",
    },
    ApiItem {
        path: "toolgate::time::now_ms",
        signature: "now_ms() -> i64",
        doc: "Milliseconds since the Unix epoch.",
    },
    ApiItem {
        path: "toolgate::time::sleep_ms",
        signature: "async sleep_ms(ms)",
        doc: "Waits `ms` milliseconds (`.await` it); counts against the invocation's timeout.",
    },
    ApiItem {
        path: "toolgate::log::info",
        signature: "info(message)",
        doc: "Writes `message` to toolgate's log at info level, tagged with the script.",
    },
    ApiItem {
        path: "toolgate::log::warn",
        signature: "warn(message)",
        doc: "Writes `message` to toolgate's log at warn level.",
    },
    ApiItem {
        path: "toolgate::log::debug",
        signature: "debug(message)",
        doc: "Writes `message` to toolgate's log at debug level.",
    },
    ApiItem {
        path: "toolgate::publish",
        signature: "publish(kind, fields)",
        doc: "Publishes the event `script/<kind>` with the fields of the object `fields` to the event bus (audit log, webhooks, `GET /events`).",
    },
    ApiItem {
        path: "toolgate::call",
        signature: "async call(name, arguments) -> Result<result, error>",
        doc: "Calls the tool `name` (as clients see it: `server__tool`) with the object `arguments` through the gateway, on behalf of whoever called this tool, so the pipeline (policy, approvals, audit) treats it as their own call; `.await` it. The `CallToolResult` as an object, or an error when the call was refused, failed or answered with an error. Only a script's own tools (`call_<name>`) may call; calls nest at most 4 deep.",
    },
    ApiItem {
        path: "toolgate::text",
        signature: "text(result) -> String",
        doc: "The text blocks of a `CallToolResult` object, joined with newlines.",
    },
    ApiItem {
        path: "toolgate::tokens",
        signature: "tokens(text) -> i64",
        doc: "How many `o200k_base` tokens `text` is (the count the transforms use).",
    },
    ApiItem {
        path: "toolgate::rate::hit",
        signature: "hit(key, window_ms) -> i64",
        doc: "Counts one hit of `key` and returns the hits of `key` in the current window of `window_ms` milliseconds, this one included (fixed windows; shared by every script of the process; at most 10,000 keys, the oldest forgotten first).",
    },
];

/// The longest key `rate::hit` takes, in bytes (it remembers [`MOST_KEYS`] of them).
pub const MAX_RATE_KEY: usize = 1024;

/// The `toolgate` module and its submodules, publishing to `events`.
///
/// Every function that takes text is charged for it before it works (`sandbox::charge`: by
/// its size, against the instruction budget, refused over `MAX_INPUT`), and what it builds
/// in Rust is held against the memory limit, so no call of one can run long or grow large
/// outside the sandbox's limits.
pub(crate) fn modules(events: Option<EventBus>) -> Result<Vec<Module>, ContextError> {
    let mut root = Module::with_crate("toolgate")?;
    root.function("publish", move |kind: &str, fields: Value| -> VmResult<()> {
        vm_try!(charge(kind.len()));
        publish(events.as_ref(), kind, fields);
        VmResult::Ok(())
    })
    .build()?;
    // `&str`, not `String`: a `String` argument would be moved out of the script's value (a
    // script passing `request.tool` could not read it afterwards).
    root.function("call", |name: &str, arguments: Value| {
        let name = name.to_owned();
        let arguments = serde_json::to_value(&arguments).map_err(|e| e.to_string());
        async move {
            let result = crate::calls::call(name, arguments?).await?;
            serde_json::from_value::<Value>(result).map_err(|e| e.to_string())
        }
    })
    .build()?;
    root.function("text", |result: Value| -> VmResult<Result<String, String>> {
        let text = serde_json::to_value(&result)
            .map_err(|e| e.to_string())
            .and_then(|result| {
                serde_json::from_value::<toolgate_core::mcp::CallToolResult>(result)
                    .map_err(|e| format!("not a CallToolResult: {e}"))
            })
            .map(|result| crate::tools::text_of(&result));
        if let Ok(text) = &text {
            vm_try!(charge(text.len()));
        }
        VmResult::Ok(text)
    })
    .build()?;
    root.function("tokens", |text: &str| -> VmResult<i64> {
        vm_try!(charge(text.len()));
        // The encoder's pieces and ranks take about as much again as the text.
        let _held = vm_try!(reserve(text.len() * 2));
        let count = toolgate_llm::tokens::Encoding::O200kBase.count(text);
        VmResult::Ok(i64::try_from(count).unwrap_or(i64::MAX))
    })
    .build()?;

    let mut json = Module::with_crate_item("toolgate", ["json"])?;
    json.function("parse", |text: &str| -> VmResult<Result<Value, String>> {
        vm_try!(charge(text.len()));
        // The value is built in the VM's memory, under its limit; serde_json's own buffers
        // hold at most a string of the text at a time.
        let _held = vm_try!(reserve(text.len()));
        match serde_json::from_str::<Value>(text) {
            Ok(value) => VmResult::Ok(Ok(value)),
            Err(error) if is_allocation_failure(&error.to_string()) => out_of_memory(),
            Err(error) => VmResult::Ok(Err(error.to_string())),
        }
    })
    .build()?;
    json.function("stringify", |value: Value| -> VmResult<Result<String, String>> {
        let text = match serde_json::to_string(&value) {
            Ok(text) => text,
            Err(error) => return VmResult::Ok(Err(error.to_string())),
        };
        vm_try!(charge(text.len()));
        VmResult::Ok(Ok(text))
    })
    .build()?;

    let mut regex = Module::with_crate_item("toolgate", ["regex"])?;
    regex
        .function("is_match", |pattern: &str, text: &str| -> VmResult<Result<bool, String>> {
            vm_try!(charge(pattern.len() + text.len()));
            VmResult::Ok(with_regex(pattern, |re| re.is_match(text)))
        })
        .build()?;
    regex
        .function(
            "replace_all",
            |pattern: &str, text: &str, with: &str| -> VmResult<Result<String, String>> {
                vm_try!(charge(pattern.len() + text.len() + with.len()));
                let replaced = match with_regex(pattern, |re| replace_all(re, text, with)) {
                    Ok(replaced) => replaced,
                    Err(error) => return VmResult::Ok(Err(error)),
                };
                let replaced = vm_try!(replaced);
                vm_try!(charge(replaced.len()));
                VmResult::Ok(Ok(replaced))
            },
        )
        .build()?;
    regex
        .function(
            "find_all",
            |pattern: &str, text: &str| -> VmResult<Result<Vec<String>, String>> {
                vm_try!(charge(pattern.len() + text.len()));
                match with_regex(pattern, |re| find_all(re, text)) {
                    Ok(found) => VmResult::Ok(Ok(vm_try!(found))),
                    Err(error) => VmResult::Ok(Err(error)),
                }
            },
        )
        .build()?;

    let mut time = Module::with_crate_item("toolgate", ["time"])?;
    time.function("now_ms", || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    })
    .build()?;
    time.function("sleep_ms", |ms: i64| async move {
        tokio::time::sleep(std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0))).await;
    })
    .build()?;

    let mut log = Module::with_crate_item("toolgate", ["log"])?;
    log.function("info", |message: &str| -> VmResult<()> {
        vm_try!(charge(message.len()));
        tracing::info!(target: "toolgate::script", "{message}");
        VmResult::Ok(())
    })
    .build()?;
    log.function("warn", |message: &str| -> VmResult<()> {
        vm_try!(charge(message.len()));
        tracing::warn!(target: "toolgate::script", "{message}");
        VmResult::Ok(())
    })
    .build()?;
    log.function("debug", |message: &str| -> VmResult<()> {
        vm_try!(charge(message.len()));
        tracing::debug!(target: "toolgate::script", "{message}");
        VmResult::Ok(())
    })
    .build()?;
    let mut rate = Module::with_crate_item("toolgate", ["rate"])?;
    rate.function("hit", |key: &str, window_ms: i64| -> VmResult<i64> {
        if key.len() > MAX_RATE_KEY {
            return VmResult::err(VmError::panic(format!(
                "rate::hit: a key of {} bytes is longer than {MAX_RATE_KEY}",
                key.len()
            )));
        }
        vm_try!(charge(key.len()));
        VmResult::Ok(hit(key, window_ms))
    })
    .build()?;
    Ok(vec![root, json, regex, time, log, rate])
}

/// Whether an error's message says an allocation failed (Rune's allocator refusing past the
/// memory limit).
fn is_allocation_failure(message: &str) -> bool {
    message.contains("allocat") || message.contains("out of memory")
}

/// `text` with every match of `re` replaced by `with` (groups expanded), refused once it
/// grows past what a toolgate function may return (an empty pattern and a long replacement
/// would otherwise multiply the text).
fn replace_all(re: &regex::Regex, text: &str, with: &str) -> VmResult<String> {
    let mut out = String::new();
    let mut last = 0;
    for captures in re.captures_iter(text) {
        let Some(found) = captures.get(0) else { continue };
        out.push_str(&text[last..found.start()]);
        captures.expand(with, &mut out);
        last = found.end();
        if out.len() > MAX_INPUT {
            return too_long("replace_all", out.len());
        }
    }
    out.push_str(&text[last..]);
    if out.len() > MAX_INPUT {
        return too_long("replace_all", out.len());
    }
    VmResult::Ok(out)
}

/// Every match of `re` in `text`; the list is held against the memory limit as it grows
/// (each match is a string of its own, so a pattern matching everywhere lists far more bytes
/// than the text has).
fn find_all(re: &regex::Regex, text: &str) -> VmResult<Vec<String>> {
    const STRING: usize = std::mem::size_of::<String>();
    let mut found = Vec::new();
    let mut bytes = 0usize;
    for m in re.find_iter(text) {
        bytes += STRING + m.len();
        if found.len() % 1024 == 0 && bytes > rune::alloc::limit::get() {
            return out_of_memory();
        }
        found.push(m.as_str().to_owned());
    }
    if bytes > rune::alloc::limit::get() {
        return out_of_memory();
    }
    VmResult::Ok(found)
}

fn too_long<T>(function: &str, bytes: usize) -> VmResult<T> {
    VmResult::err(VmError::panic(format!(
        "regex::{function}: its result would be more than {MAX_INPUT} bytes (at least {bytes})"
    )))
}

fn publish(events: Option<&EventBus>, kind: &str, fields: Value) {
    let Some(events) = events else { return };
    let mut event = Event::new(format!("script/{kind}"));
    if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(&fields) {
        for (key, value) in fields {
            event = event.with(key, value);
        }
    }
    events.publish(event);
}

/// Patterns compiled so far (at most [`MOST_PATTERNS`]; then the cache starts again).
const MOST_PATTERNS: usize = 256;

/// The longest pattern kept compiled (a longer one is compiled for each call), so that the
/// cache holds at most [`MOST_PATTERNS`] times this.
const MOST_CACHED_PATTERN: usize = 1024;

fn with_regex<T>(pattern: &str, f: impl FnOnce(&regex::Regex) -> T) -> Result<T, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, regex::Regex>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    let found = cache.lock().expect("regex cache lock").get(pattern).cloned();
    let regex = match found {
        Some(regex) => regex,
        None => {
            let regex = regex::RegexBuilder::new(pattern)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| e.to_string())?;
            if pattern.len() > MOST_CACHED_PATTERN {
                return Ok(f(&regex));
            }
            let mut cache = cache.lock().expect("regex cache lock");
            if cache.len() >= MOST_PATTERNS {
                cache.clear();
            }
            cache.insert(pattern.to_owned(), regex.clone());
            regex
        }
    };
    Ok(f(&regex))
}

/// Keys [`hit`] remembers at most.
const MOST_KEYS: usize = 10_000;

/// Counts a hit of `key` in fixed windows of `window_ms`.
fn hit(key: &str, window_ms: i64) -> i64 {
    static WINDOWS: OnceLock<Mutex<HashMap<String, (u128, i64)>>> = OnceLock::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let window = u128::try_from(window_ms.max(1)).unwrap_or(1);
    let start = now - now % window;
    let mut windows = WINDOWS.get_or_init(Mutex::default).lock().expect("rate lock");
    if windows.len() >= MOST_KEYS && !windows.contains_key(key) {
        // Forget the windows that ended; if none did, the oldest.
        windows.retain(|_, (started, _)| *started + window > now);
        if windows.len() >= MOST_KEYS
            && let Some(oldest) =
                windows.iter().min_by_key(|(_, (s, _))| *s).map(|(k, _)| k.clone())
        {
            windows.remove(&oldest);
        }
    }
    let entry = windows.entry(key.to_owned()).or_insert((start, 0));
    if entry.0 != start {
        *entry = (start, 0);
    }
    entry.1 += 1;
    entry.1
}

/// The reference of the `toolgate` module, as `docs/scripts-api.md` has it.
pub fn reference() -> String {
    let mut out = String::from(
        "# The `toolgate` module of scripts\n\n\
         Generated from `crates/toolgate-scripts/src/module.rs` (`API`); a test checks that this \
         file, the table and the functions installed agree (`TOOLGATE_BLESS=1 cargo test -p \
         toolgate-scripts` rewrites it). How scripts are written, what their hooks take and \
         return, and how they are contained: README, \"Scripts\".\n\n\
         Functions that can fail return a `Result`: `?` passes the error on (the hook then \
         fails, as its `fail_open` says).\n\n\
         Every function that takes text is charged for it before it works: one instruction of \
         the invocation's budget per 4 bytes. Text over 4 MiB is refused, and so is a \
         `regex::replace_all` result over 4 MiB and a `rate::hit` key over 1 KiB; what a \
         function builds (parsed JSON, a list of matches, the tokenizer's work) counts against \
         the invocation's memory limit. A function refused this way ends the invocation (a \
         script cannot catch it), as its limits would.\n",
    );
    let mut module = "";
    for item in API {
        let (parent, _) = item.path.rsplit_once("::").unwrap_or(("toolgate", item.path));
        if parent != module {
            module = parent;
            out.push_str(&format!("\n## `{parent}`\n\n"));
        }
        out.push_str(&format!("- `{}`: {}\n", item.signature, item.doc));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_item_is_installed_and_every_installed_one_listed() {
        let engine = crate::Engine::new(None, crate::Limits::default()).expect("engine");
        for item in API {
            // Naming a function that is not installed does not compile.
            let source = format!("pub fn f() {{ let f = {}; }}", item.path);
            let compiled = engine.compile(std::path::Path::new("api.rn"), &source);
            assert!(compiled.is_ok(), "{} is not installed: {:?}", item.path, compiled.err());
        }
        let missing = engine
            .compile(std::path::Path::new("api.rn"), "pub fn f() { let f = toolgate::nothing; }");
        assert!(missing.is_err(), "the check can fail");
        let source = include_str!("module.rs");
        let body = &source[source.find("fn modules(").expect("modules")..];
        let body = &body[..body.find("Ok(vec![").expect("its end")];
        let registered = body.matches(".function(").count();
        assert_eq!(registered, API.len(), "every function registered is listed in API");
    }

    #[test]
    fn the_reference_in_docs_is_current() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scripts-api.md");
        let generated = reference();
        if std::env::var_os("TOOLGATE_BLESS").is_some() {
            std::fs::write(&path, &generated).expect("write docs/scripts-api.md");
        }
        let written = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            written, generated,
            "docs/scripts-api.md is stale: run TOOLGATE_BLESS=1 cargo test -p toolgate-scripts"
        );
    }
}
