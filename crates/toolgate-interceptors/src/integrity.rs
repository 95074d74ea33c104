//! `integrity`: tools are shown and called only as they were pinned.
//!
//! Every tool in a `tools/list` answer and the target of every `tools/call` is compared with its
//! pin in the lock file (`toolgate.lock`, written by `toolgate pin`; see `toolgate-integrity`).
//! A tool whose contract changed since (description, schemas, annotations, title, name) is
//! *drift*; a tool with no pin is *unknown*. What happens to each is set per server:
//!
//! ```toml
//! [[pipeline]]
//! kind = "integrity"
//! drift = "block"        # block (default): withheld from lists, calls refused | warn | audit
//! unknown = "warn"       # allow | warn (default) | block | quarantine
//! poisoning = { report = "medium", quarantine = "high" }
//! lock = "toolgate.lock" # default: toolgate.lock beside the config
//! server.scratch = { drift = "warn", unknown = "allow" }
//! override."fs__delete" = { description = "Deletes a file.", annotations = { destructiveHint = true } }
//! ```
//!
//! `override` is the operator's word about a tool (by exposed name): its `title`,
//! `description` and `annotations` as the model sees them in lists and as the interceptors
//! after this one (`policy`) see them on calls, over what its server says. The pin is still of
//! what the server says.
//!
//! The poisoning scan (`toolgate_integrity::scan`) runs on every tool once per definition:
//! `poisoning = { report = "medium", quarantine = "high" }` (the defaults; `off` turns either
//! off) reports findings at or above `report` (`integrity/poisoning`) and withholds tools with
//! findings at or above `quarantine` (`integrity/quarantined`), whether pinned or not.
//! Shadowing (naming another server's tools) is left to `toolgate scan`, which sees all the
//! servers at once.
//!
//! `warn` and `audit` let the tool through and publish the event (`warn` also logs a warning);
//! a call of a changed tool let through carries the *pinned* annotations on to the interceptors
//! after this one, so `policy` and `approval` decide on what was trusted, not on a hint the
//! server just flipped;
//! `block` and `quarantine` withhold it; `quarantine` says the tool waits for a person to pin
//! it. Every case publishes one event per tool and contract (`integrity/drift`,
//! `integrity/unknown`, `integrity/quarantined`), which the audit log records. The lock file is
//! read when first needed and again whenever it changes on disk, so `toolgate pin` takes effect
//! without a restart. A lock file that cannot be read fails closed: lists and calls are refused,
//! saying why. No lock file at all is an empty lock (every tool unknown), but a lock file that
//! existed while toolgate ran (at start, or read since) and is gone fails closed too: deleting
//! it must not turn `drift = "block"` into "every tool unknown, allowed". Until it is back (or
//! `toolgate pin` writes it again), a tool whose server withholds on drift (`block`) or unknown
//! tools (`block`, `quarantine`) is withheld from lists and its calls are refused, saying the
//! lock is gone (`integrity/lock_gone` is published once, and logged as an error).
//!
//! A refusal names the tool's current contract digest, which is what an approver accepts over
//! the admin API (`POST /integrity/{tool}/approve` with `{"digest": "sha256:…"}`; see
//! [`IntegrityLocks::approve`]).
//!
//! Since each list is checked as it is served, a change a server announces with
//! `notifications/tools/list_changed`, or brings after a reconnection, is caught at the next
//! list or call.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use futures::future::BoxFuture;
use toolgate_audit::{Event, EventBus};
use toolgate_config::InterceptorConfig;
use toolgate_core::mcp;
use toolgate_integrity::diff::{Change, changes};
use toolgate_integrity::lock::LOCK_FILE;
use toolgate_integrity::scan::{Finding, Scanned, scan};
use toolgate_integrity::{Contract, Kind, Lock};
use toolgate_intercept::{
    CallContext, Descriptor, Hook, InterceptError, InterceptionEvent, Interceptor, InterceptorType,
    Listed, Message, Mode, Outcome, Phase, Refusal, TrustedTool,
};

use crate::options::{OptionError, Options};

mod approve;
mod review;
mod settings;

pub use approve::{ApproveError, Approved, IntegrityLocks};
pub use review::{PinReview, PinState, Pins};
use settings::{Actions, DEFAULT_ACTIONS, OnDrift, OnUnknown, Override, actions, parse_override};

/// The config `kind`.
pub const KIND: &str = "integrity";

/// Event kinds this interceptor publishes.
pub mod kind {
    /// A tool's contract differs from its pin.
    pub const DRIFT: &str = "integrity/drift";
    /// A tool has no pin.
    pub const UNKNOWN: &str = "integrity/unknown";
    /// A tool was withheld until a person looks at it: it has no pin (`unknown =
    /// "quarantine"`), or the poisoning scan found something at the `quarantine` severity.
    pub const QUARANTINED: &str = "integrity/quarantined";
    /// The poisoning scan found something at the `report` severity; the tool was let through.
    pub const POISONING: &str = "integrity/poisoning";
    /// An approver accepted a tool's contract over the admin API.
    pub const APPROVED: &str = "integrity/approved";
    /// The lock file existed and is gone: tools that need a pin are withheld until it is back.
    pub const LOCK_GONE: &str = "integrity/lock_gone";
}

/// The interceptor.
pub struct Integrity {
    descriptor: Descriptor,
    lock_path: PathBuf,
    defaults: Actions,
    servers: HashMap<String, Actions>,
    /// What the operator says about a tool, by exposed name, over what its server says.
    overrides: HashMap<String, Override>,
    events: EventBus,
    /// Whether the lock file has existed while toolgate ran (shared with the admin API's
    /// approvals through `IntegrityLocks`).
    existed: Arc<AtomicBool>,
    loaded: Mutex<Loaded>,
    /// (server, tool, digest) already announced, so that each case is published once.
    announced: Mutex<HashSet<(String, String, String)>>,
    /// Each tool's contract, by server and original name, with the definition it was computed
    /// from: computed once per definition, not once per list (see [`same_definition`]).
    contracts: Mutex<HashMap<String, HashMap<String, Known>>>,
}

/// A tool definition and its contract.
struct Known {
    tool: mcp::Tool,
    contract: Arc<Contract>,
    /// What the poisoning scan found in it (without shadowing, which needs the other servers).
    findings: Arc<Vec<Finding>>,
    /// The generation of the lock its digest was last found pinned in.
    pinned_in: Option<u64>,
}

/// Entries kept beyond the tools of the list being served before the cache is swept.
const CACHE_SLACK: usize = 1024;

/// The lock file as last read, and the modification time and size it had then.
#[derive(Default)]
struct Loaded {
    stamp: Option<(Option<SystemTime>, u64)>,
    lock: Option<Result<Arc<Lock>, String>>,
    /// Counts the reads, so that a cached "pinned" is known to be about this lock.
    generation: u64,
}

/// The lock as it is on disk now.
struct Current {
    lock: Arc<Lock>,
    /// Counts the reads (see [`Loaded::generation`]).
    generation: u64,
    /// The file existed and is gone: `lock` is empty, and nothing can be checked against it.
    gone: bool,
}

/// How one tool compares with its pin.
enum Verdict {
    Pinned,
    Drift {
        pinned: Box<Contract>,
        now: Box<Contract>,
    },
    Unknown,
    /// The lock file is gone, and the tool's server withholds what it cannot check.
    LockGone,
}

impl Integrity {
    /// Builds it from its `[[pipeline]]` entry; relative `lock` paths are taken from
    /// `config_dir` (the config file's folder), else from the current directory.
    pub fn from_config(
        entry: &InterceptorConfig,
        services: &crate::Services,
    ) -> Result<Integrity, Vec<OptionError>> {
        let events = services.events.clone();
        let config_dir = services.config_dir.as_deref();
        let mut options = Options::new(entry.path.clone(), &entry.options);
        options.only(&["drift", "unknown", "poisoning", "lock", "server", "override"]);
        let at = options.at("");
        let at = at.trim_end_matches('.').to_owned();
        let defaults = actions(&mut options, &at, &entry.options, DEFAULT_ACTIONS);
        let lock = options.string("lock").unwrap_or(LOCK_FILE);
        // Joined to an absolute path, `join` gives that path back.
        let lock_path = config_dir.map_or_else(|| PathBuf::from(lock), |dir| dir.join(lock));
        let mut servers = HashMap::new();
        // `[servers.X] integrity` first; the interceptor's own `server.X` over it.
        for (server, table) in &services.server_integrity {
            let path = format!("servers.{server}.integrity");
            let mut one = Options::new(path.clone(), table);
            one.only(&["drift", "unknown", "poisoning"]);
            let actions = actions(&mut one, &path, table, defaults);
            options.errors.append(&mut one.errors);
            servers.insert(server.clone(), actions);
        }
        if let Some(table) = options.table("server") {
            let at = options.at("server");
            for (server, value) in table {
                let path = format!("{at}.{server}");
                match value.as_object() {
                    Some(table) => {
                        let mut one = Options::new(path.clone(), table);
                        one.only(&["drift", "unknown", "poisoning"]);
                        let base = servers.get(server).copied().unwrap_or(defaults);
                        let actions = actions(&mut one, &path, table, base);
                        options.errors.append(&mut one.errors);
                        servers.insert(server.clone(), actions);
                    }
                    None => options.error(&path, format!("expected a table, found {value}")),
                }
            }
        }
        let mut overrides = HashMap::new();
        if let Some(table) = options.table("override") {
            let at = options.at("override");
            for (exposed, value) in table {
                let path = format!("{at}.{exposed}");
                if let Some(one) = parse_override(&mut options, &path, value) {
                    overrides.insert(exposed.clone(), one);
                }
            }
        }
        let hooks = vec![
            Hook::new(["tools/call"], Phase::Request).expect("a literal event"),
            Hook::new(["tools/list"], Phase::Response).expect("a literal event"),
        ];
        // A mutation (it withholds tools from lists); fails closed, the default.
        let descriptor = Descriptor::new(KIND, KIND, InterceptorType::Mutation, hooks);
        let descriptor = options.configure(descriptor, entry);
        let existed = if options.errors.is_empty() {
            services.integrity_locks.register(&lock_path)
        } else {
            Arc::default()
        };
        if std::fs::metadata(&lock_path).is_ok() {
            existed.store(true, Ordering::Release);
        }
        options.finish(descriptor, |descriptor| Integrity {
            descriptor,
            lock_path,
            defaults,
            servers,
            overrides,
            events,
            existed,
            loaded: Mutex::default(),
            announced: Mutex::default(),
            contracts: Mutex::default(),
        })
    }

    /// The lock file's path.
    pub fn lock_path(&self) -> &Path {
        &self.lock_path
    }

    fn actions(&self, server: &str) -> Actions {
        self.servers.get(server).copied().unwrap_or(self.defaults)
    }

    /// The lock as it is on disk now (read again only when it changed); no file is an empty
    /// lock (every tool unknown), unless the file existed and is gone.
    fn lock(&self) -> Result<Current, String> {
        let stamp =
            std::fs::metadata(&self.lock_path).ok().map(|meta| (meta.modified().ok(), meta.len()));
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        let current = |lock: Arc<Lock>, generation| Current {
            lock,
            generation,
            gone: stamp.is_none() && self.existed.load(Ordering::Acquire),
        };
        if let Some(lock) = &loaded.lock
            && loaded.stamp == stamp
        {
            return lock.clone().map(|lock| current(lock, loaded.generation));
        }
        let lock = match Lock::read(&self.lock_path) {
            Ok(Some(lock)) => {
                self.existed.store(true, Ordering::Release);
                Ok(Arc::new(lock))
            }
            Ok(None) => Ok(Arc::new(Lock::default())),
            Err(error) => Err(error.to_string()),
        };
        loaded.stamp = stamp;
        loaded.lock = Some(lock.clone());
        loaded.generation += 1;
        let lock = lock.map(|lock| current(lock, loaded.generation))?;
        if lock.gone {
            let path = self.lock_path.display().to_string();
            tracing::error!(
                lock = %path,
                "the lock file is gone: tools that need a pin are withheld until it is restored \
                 or written again by `toolgate pin`"
            );
            self.events.publish(Event::new(kind::LOCK_GONE).with("lock", path));
        }
        Ok(lock)
    }

    /// `tool`'s contract (as `server` lists it under `original`) and the scan's findings in
    /// it, from the cache when the definition is the one they were computed from.
    fn assess(
        &self,
        server: &str,
        original: &str,
        tool: &mcp::Tool,
    ) -> (Arc<Contract>, Arc<Vec<Finding>>) {
        let mut cache = self.contracts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = cache.get(server).and_then(|tools| tools.get(original))
            && same_definition(&known.tool, tool)
        {
            return (known.contract.clone(), known.findings.clone());
        }
        let mut named = tool.clone();
        named.name = original.to_owned().into();
        let contract = Arc::new(Contract::tool(&named));
        let findings =
            Arc::new(scan(&[Scanned { server, items: std::slice::from_ref(contract.as_ref()) }]));
        let known = Known {
            tool: tool.clone(),
            contract: contract.clone(),
            findings: findings.clone(),
            pinned_in: None,
        };
        cache.entry(server.to_owned()).or_default().insert(original.to_owned(), known);
        (contract, findings)
    }

    /// Whether `findings` withhold the tool (quarantine); reports them as configured, once per
    /// tool and contract.
    fn poisoned(
        &self,
        server: &str,
        original: &str,
        exposed: &str,
        contract: &Contract,
        findings: &[Finding],
    ) -> bool {
        let actions = self.actions(server);
        let worst = findings.iter().map(|f| f.severity).max();
        let Some(worst) = worst else { return false };
        let withheld =
            actions.quarantine.is_some_and(|at| worst >= at) && self.descriptor.mode != Mode::Audit;
        let reported = actions.report.is_some_and(|at| worst >= at);
        if !withheld && !reported {
            return false;
        }
        let kind = if withheld { kind::QUARANTINED } else { kind::POISONING };
        let key = (server.to_owned(), original.to_owned(), format!("{kind}{}", contract.digest));
        if self.announced.lock().unwrap_or_else(PoisonError::into_inner).insert(key) {
            let rules: Vec<String> = findings
                .iter()
                .map(|f| format!("{} ({}) in {}", f.rule, f.severity, f.field))
                .collect();
            if !withheld {
                tracing::warn!(
                    server,
                    tool = original,
                    findings = rules.join("; "),
                    "tool description looks poisoned"
                );
            }
            self.events.publish(
                Event::new(kind)
                    .with("server", server)
                    .with("tool", original)
                    .with("exposed", exposed)
                    .with("action", if withheld { "withheld" } else { "passed" })
                    .with("reason", "poisoning")
                    .with("findings", rules)
                    .with("digest", contract.digest.clone()),
            );
        }
        withheld
    }

    fn poisoning_refusal(&self, exposed: &str, findings: &[Finding]) -> Refusal {
        let found: Vec<String> = findings
            .iter()
            .map(|f| format!("{} in its {} ({})", f.rule, f.field, f.excerpt))
            .collect();
        Refusal {
            interceptor: self.descriptor.name.clone(),
            reason: format!(
                "tool `{exposed}` is quarantined: its definition looks poisoned: {}; see \
                 `toolgate scan`",
                found.join("; ")
            ),
        }
    }

    /// How many contracts are cached.
    #[cfg(test)]
    fn cached(&self) -> usize {
        self.contracts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(HashMap::len)
            .sum()
    }

    /// Forgets cached contracts of tools no longer listed, once there are many more of them
    /// than `listed`.
    fn sweep(&self, listed: &[Listed<mcp::Tool>]) {
        let mut cache = self.contracts.lock().unwrap_or_else(PoisonError::into_inner);
        let cached: usize = cache.values().map(HashMap::len).sum();
        if cached <= listed.len() + CACHE_SLACK {
            return;
        }
        let keep: HashSet<(&str, &str)> =
            listed.iter().map(|l| (l.server.as_str(), l.original.as_str())).collect();
        for (server, tools) in cache.iter_mut() {
            tools.retain(|original, _| keep.contains(&(server.as_str(), original.as_str())));
        }
        cache.retain(|_, tools| !tools.is_empty());
    }

    fn verdict(
        &self,
        current: &Current,
        server: &str,
        original: &str,
        tool: &mcp::Tool,
    ) -> Verdict {
        let (now, _) = self.assess(server, original, tool);
        if current.gone {
            return if self.actions(server).needs_pin() {
                Verdict::LockGone
            } else {
                Verdict::Unknown
            };
        }
        let (lock, generation) = (&current.lock, &current.generation);
        match lock.digest(server, Kind::Tool, original) {
            None => Verdict::Unknown,
            Some(digest) if digest == now.digest => {
                let mut cache = self.contracts.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(known) = cache.get_mut(server).and_then(|tools| tools.get_mut(original))
                {
                    known.pinned_in = Some(*generation);
                }
                Verdict::Pinned
            }
            Some(_) => match lock.contract(server, Kind::Tool, original) {
                Some(pinned) => Verdict::Drift {
                    pinned: Box::new(pinned),
                    now: Box::new(Contract::clone(&now)),
                },
                None => Verdict::Unknown,
            },
        }
    }

    /// Whether the tool is withheld; publishes what was found (once per tool and contract).
    fn judge(&self, server: &str, original: &str, exposed: &str, verdict: &Verdict) -> bool {
        let actions = self.actions(server);
        let (kind, withheld, now_digest, extra): (&str, bool, String, Option<Vec<String>>) =
            match verdict {
                Verdict::Pinned => return false,
                Verdict::Drift { pinned, now } => {
                    let fields = changed_fields(&changes(pinned, now));
                    let withheld = actions.drift == OnDrift::Block;
                    if actions.drift == OnDrift::Warn {
                        tracing::warn!(
                            server,
                            tool = original,
                            changed = fields.join(", "),
                            "tool changed since it was pinned"
                        );
                    }
                    (kind::DRIFT, withheld, now.digest.clone(), Some(fields))
                }
                // Announced once for the lock (see `lock`), not once per tool.
                Verdict::LockGone => return self.descriptor.mode != Mode::Audit,
                Verdict::Unknown => match actions.unknown {
                    OnUnknown::Allow => return false,
                    OnUnknown::Warn => {
                        tracing::warn!(server, tool = original, "tool is not pinned");
                        (kind::UNKNOWN, false, String::new(), None)
                    }
                    OnUnknown::Block => (kind::UNKNOWN, true, String::new(), None),
                    OnUnknown::Quarantine => (kind::QUARANTINED, true, String::new(), None),
                },
            };
        let withheld = withheld && self.descriptor.mode != Mode::Audit;
        let key = (server.to_owned(), original.to_owned(), format!("{kind}{now_digest}{withheld}"));
        let first = self.announced.lock().unwrap_or_else(PoisonError::into_inner).insert(key);
        if first {
            let mut event = Event::new(kind)
                .with("server", server)
                .with("tool", original)
                .with("exposed", exposed)
                .with("action", if withheld { "withheld" } else { "passed" })
                .with("lock", self.lock_path.display().to_string());
            if let Some(fields) = extra {
                event = event.with("changed", fields);
            }
            if let Verdict::Drift { pinned, now } = verdict {
                event = event
                    .with("pinned_digest", pinned.digest.clone())
                    .with("digest", now.digest.clone());
            }
            self.events.publish(event);
        }
        withheld
    }

    /// Why the call of `tool` (`exposed`; `original` on `server`) is refused, with the digest
    /// of its contract now: what an approver accepts over the admin API.
    fn refusal(
        &self,
        server: &str,
        original: &str,
        exposed: &str,
        tool: &mcp::Tool,
        verdict: &Verdict,
    ) -> Refusal {
        let lock = self.lock_path.display();
        let digest = self.assess(server, original, tool).0.digest.clone();
        let approve = format!(
            "or over the admin API: POST /integrity/{exposed}/approve with \
             {{\"digest\": \"{digest}\"}}"
        );
        let reason = match verdict {
            Verdict::Drift { pinned, now } => format!(
                "tool `{exposed}` is withheld: its {} changed since it was pinned in {lock} \
                 (pinned {}, now {digest}); see the change with `toolgate pin --diff --server \
                 {server}`, accept it with `toolgate pin --approve {original} --server {server}` \
                 {approve}",
                changed_fields(&changes(pinned, now)).join(", "),
                pinned.digest,
            ),
            Verdict::LockGone => format!(
                "tool `{exposed}` is withheld: the lock file {lock} is gone (it existed while \
                 toolgate ran), so its pin cannot be checked (server `{server}` withholds tools \
                 it cannot check); restore the file, or pin again with `toolgate pin`"
            ),
            _ => format!(
                "tool `{exposed}` is withheld: it is not pinned in {lock} (server `{server}` \
                 withholds tools it has not pinned; its contract is {digest}); pin it with \
                 `toolgate pin --approve {original} --server {server}` {approve}"
            ),
        };
        Refusal { interceptor: self.descriptor.name.clone(), reason }
    }
}

/// Whether two definitions of one tool (its name aside) have the same contract: the schemas
/// are compared by pointer first (the inventory shares them with the upstream's catalog until
/// the upstream lists again), then by value.
fn same_definition(a: &mcp::Tool, b: &mcp::Tool) -> bool {
    let schema = Arc::ptr_eq(&a.input_schema, &b.input_schema) || a.input_schema == b.input_schema;
    let output = match (&a.output_schema, &b.output_schema) {
        (Some(x), Some(y)) => Arc::ptr_eq(x, y) || x == y,
        (None, None) => true,
        _ => false,
    };
    schema
        && output
        && a.title == b.title
        && a.description == b.description
        && a.annotations == b.annotations
}

/// `tool` with the annotations it had when it was pinned (none, if it had none then).
fn with_pinned_annotations(tool: &mcp::Tool, pinned: &Contract) -> mcp::Tool {
    let mut trusted = tool.clone();
    trusted.annotations =
        pinned.field("annotations").and_then(|a| serde_json::from_value(a.clone()).ok());
    trusted
}

/// The top-level fields that changed (`description`, `inputSchema`, `annotations`), in order.
fn changed_fields(changes: &[Change]) -> Vec<String> {
    let mut fields = BTreeSet::new();
    for change in changes {
        let field = match change {
            Change::Text { field, .. } => field.clone(),
            Change::Annotation { .. } => "annotations".to_owned(),
            Change::Path { path, .. } => path.split(['.', '[']).next().unwrap_or(path).to_owned(),
        };
        fields.insert(field);
    }
    fields.into_iter().collect()
}

impl Interceptor for Integrity {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn intercept<'a>(
        &'a self,
        _event: InterceptionEvent,
        _phase: Phase,
        message: &'a Message,
        ctx: &'a mut CallContext,
    ) -> BoxFuture<'a, Result<Outcome, InterceptError>> {
        let outcome = (|| {
            let lock =
                self.lock().map_err(|error| InterceptError(format!("the lock file: {error}")))?;
            Ok(match message {
                Message::CallTool(_) => {
                    let Some(target) = &ctx.target else {
                        return Err(InterceptError("a tool call without a target".into()));
                    };
                    let Some(tool) = target.tool.as_deref() else {
                        return Err(InterceptError(format!(
                            "no definition of tool `{}` to check against its pin",
                            target.exposed
                        )));
                    };
                    let verdict = self.verdict(&lock, &target.server, &target.original, tool);
                    let (contract, findings) = self.assess(&target.server, &target.original, tool);
                    if self.judge(&target.server, &target.original, &target.exposed, &verdict) {
                        Outcome::Refuse(self.refusal(
                            &target.server,
                            &target.original,
                            &target.exposed,
                            tool,
                            &verdict,
                        ))
                    } else if self.poisoned(
                        &target.server,
                        &target.original,
                        &target.exposed,
                        &contract,
                        &findings,
                    ) {
                        Outcome::Refuse(self.poisoning_refusal(&target.exposed, &findings))
                    } else {
                        let over = self.overrides.get(&target.exposed);
                        if matches!(verdict, Verdict::Drift { .. }) || over.is_some() {
                            // Let through, but what the interceptors after this one trust
                            // (`policy`'s annotations, `approval`'s digest) is the pinned word,
                            // not a hint the server just changed, and the operator's word over
                            // both.
                            let mut trusted = match &verdict {
                                Verdict::Drift { pinned, .. } => {
                                    with_pinned_annotations(tool, pinned)
                                }
                                _ => tool.clone(),
                            };
                            if let Some(over) = over {
                                over.apply(&mut trusted);
                            }
                            ctx.insert(TrustedTool(Arc::new(trusted)));
                        }
                        Outcome::Continue
                    }
                }
                Message::Tools(tools) => {
                    // Fast path: a definition already found pinned in this very lock.
                    let known_pinned: Vec<bool> = {
                        let cache = self.contracts.lock().unwrap_or_else(PoisonError::into_inner);
                        tools
                            .iter()
                            .map(|listed| {
                                cache
                                    .get(&listed.server)
                                    .and_then(|tools| tools.get(&listed.original))
                                    .is_some_and(|known| {
                                        known.pinned_in == Some(lock.generation)
                                            && known.findings.is_empty()
                                            && same_definition(&known.tool, &listed.item)
                                    })
                            })
                            .collect()
                    };
                    let shown: Vec<bool> = tools
                        .iter()
                        .zip(known_pinned)
                        .map(|(listed, known_pinned): (&Listed<mcp::Tool>, bool)| {
                            if known_pinned
                                || !self.descriptor.covers_target(&listed.server, &listed.original)
                            {
                                return true;
                            }
                            let (server, original) = (&listed.server, &listed.original);
                            let verdict = self.verdict(&lock, server, original, &listed.item);
                            if self.judge(server, original, &listed.item.name, &verdict) {
                                return false;
                            }
                            let (contract, findings) = self.assess(server, original, &listed.item);
                            !self.poisoned(
                                server,
                                original,
                                &listed.item.name,
                                &contract,
                                &findings,
                            )
                        })
                        .collect();
                    self.sweep(tools);
                    let overridden = !self.overrides.is_empty()
                        && tools.iter().any(|l| self.overrides.contains_key(&*l.item.name));
                    if shown.iter().all(|&s| s) && !overridden {
                        Outcome::Continue
                    } else {
                        let kept = tools
                            .iter()
                            .zip(shown)
                            .filter(|(_, shown)| *shown)
                            .map(|(listed, _)| {
                                let mut listed = listed.clone();
                                if let Some(over) = self.overrides.get(&*listed.item.name) {
                                    over.apply(&mut listed.item);
                                }
                                listed
                            })
                            .collect();
                        Outcome::Rewrite(Message::Tools(kept))
                    }
                }
                _ => Outcome::Continue,
            })
        })();
        Box::pin(std::future::ready(outcome))
    }
}

#[cfg(test)]
mod tests;
