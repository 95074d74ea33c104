//! Scripts' own tools as upstreams of the gateway: each loaded script whose current version
//! lists tools is served (`toolgate_scripts::serve::ScriptServer`) as an upstream inside the
//! process, named after its file, so `greet` of `hello.rn` is `hello__greet`: listed, pinned,
//! piped and audited like any server's tool. [`ScriptTools::sync`] keeps the set in step with
//! the scripts as files come, change and go; a reload that changes a script's tools reaches
//! clients as `list_changed` through its server.
//!
//! A script tool calls other tools through [`GatewayCaller`]: `Gateway::call_tool` with the
//! principal and session of the script tool's own caller, which the gateway put in the call's
//! `_meta` (`toolgate_scripts::calls::CALLER_META`, see `dispatch.rs`), so a script tool can
//! reach only what its caller may.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use toolgate_config::{InProcessConfig, ServerConfig, TransportConfig};
use toolgate_core::mcp;
use toolgate_intercept::{CallContext, Principal};
use toolgate_scripts::calls::{Origin, ProgressSink, ToolCaller};
use toolgate_scripts::serve::ScriptServer;
use toolgate_scripts::{Script, Scripts};
use toolgate_upstream::{CallOptions, Caller, InProcessServer};

use crate::gateway::{Gateway, InProcess};

/// How many `toolgate::call`s deep a call is, left in its context by [`GatewayCaller`] for
/// the gateway to pass on to script tools.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallDepth(pub(crate) u32);

/// The scripts' tools of one gateway.
pub struct ScriptTools {
    scripts: Arc<Scripts>,
    caller: Arc<GatewayCaller>,
    tool_timeout: Duration,
    /// Names that are not a script's to take: the configured servers and `toolgate`.
    reserved: Vec<String>,
    /// The scripts served now, by upstream name.
    served: Mutex<BTreeMap<String, Arc<Script>>>,
    /// Held while the set is brought in step, so that two bursts of changes do not race.
    syncing: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for ScriptTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let served = self.served.lock().expect("served lock");
        f.debug_struct("ScriptTools").field("served", &served.keys().collect::<Vec<_>>()).finish()
    }
}

impl ScriptTools {
    /// The tools of the scripts in `scripts`; each call may take `tool_timeout`. `servers`
    /// are the configured servers, whose names scripts cannot take.
    pub fn new(
        scripts: Arc<Scripts>,
        tool_timeout: Duration,
        servers: &[ServerConfig],
    ) -> Arc<ScriptTools> {
        let mut reserved: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
        reserved.push(toolgate_intercept::OWN_SERVER.to_owned());
        Arc::new(ScriptTools {
            scripts,
            caller: Arc::new(GatewayCaller::default()),
            tool_timeout,
            reserved,
            served: Mutex::default(),
            syncing: tokio::sync::Mutex::default(),
        })
    }

    /// The servers of the scripts that list tools now, for [`Gateway::start_with`]; they count
    /// as served from here on.
    pub fn initial(&self) -> Vec<InProcess> {
        let wanted = self.wanted();
        let mut served = self.served.lock().expect("served lock");
        wanted
            .into_iter()
            .map(|(name, script)| {
                served.insert(name.clone(), script.clone());
                self.server(&name, script)
            })
            .collect()
    }

    /// Lets the scripts' tools call through `gateway` and follow changes in it.
    pub fn attach(&self, gateway: &Arc<Gateway>) {
        let _ = self.caller.gateway.set(Arc::downgrade(gateway));
    }

    /// Brings the gateway's script servers in step with the scripts: a script that lists
    /// tools and is not served is added, one served that is gone (or lists none, or was
    /// replaced by another file of its name) leaves.
    pub async fn sync(&self) {
        let _syncing = self.syncing.lock().await;
        let Some(gateway) = self.caller.gateway.get().and_then(Weak::upgrade) else { return };
        let wanted = self.wanted();
        let leaving: Vec<String> = {
            let served = self.served.lock().expect("served lock");
            served
                .iter()
                .filter(|(name, script)| !wanted.get(*name).is_some_and(|w| Arc::ptr_eq(w, script)))
                .map(|(name, _)| name.clone())
                .collect()
        };
        for name in leaving {
            self.served.lock().expect("served lock").remove(&name);
            gateway.remove_upstream(&name).await;
            tracing::info!(server = %name, "a script's tools left the gateway");
        }
        for (name, script) in wanted {
            if self.served.lock().expect("served lock").contains_key(&name) {
                continue;
            }
            let (config, server) = self.server(&name, script.clone());
            match gateway.add_in_process(config, server).await {
                Ok(()) => {
                    tracing::info!(server = %name, script = %script.path().display(), "a script's tools joined the gateway");
                    self.served.lock().expect("served lock").insert(name, script);
                }
                Err(error) => {
                    tracing::warn!(server = %name, %error, "a script's tools could not join the gateway");
                }
            }
        }
    }

    /// The scripts that should be served now, by upstream name: loaded, listing tools, with a
    /// name that can be a server's and is nobody else's. Those left out are logged.
    fn wanted(&self) -> BTreeMap<String, Arc<Script>> {
        let (wanted, left_out) = self.sorted();
        for (script, why) in left_out {
            tracing::warn!(script = %script.display(), "{why}");
        }
        wanted
    }

    /// Why a script that lists tools cannot serve them, one line per script: for `config
    /// check`, which says so before `serve` would log it.
    pub fn problems(&self) -> Vec<String> {
        let (_, left_out) = self.sorted();
        left_out.into_iter().map(|(script, why)| format!("{}: {why}", script.display())).collect()
    }

    /// The scripts that list tools: those to serve by upstream name, and those left out with
    /// why.
    fn sorted(&self) -> (BTreeMap<String, Arc<Script>>, Vec<LeftOut>) {
        let mut wanted = BTreeMap::new();
        let mut left_out = Vec::new();
        for script in self.scripts.loaded() {
            let lists_tools = script.current().is_some_and(|c| !c.tools().is_empty());
            if !lists_tools {
                continue;
            }
            let name = script.name().to_owned();
            let why = if !is_server_name(&name) {
                "its tools are served under its file's name, which must be letters, digits, `_` \
                 or `-`; rename the file to serve them"
                    .to_owned()
            } else if self.reserved.contains(&name) {
                format!(
                    "its tools are served under its file's name, and `{name}` is a configured \
                     server's name (or toolgate's own); rename one of them"
                )
            } else if let std::collections::btree_map::Entry::Vacant(slot) =
                wanted.entry(name.clone())
            {
                slot.insert(script);
                continue;
            } else {
                format!("another script is named {name}.rn; the tools of this one are not served")
            };
            left_out.push((script.path().to_owned(), why));
        }
        (wanted, left_out)
    }

    fn server(&self, name: &str, script: Arc<Script>) -> InProcess {
        let config = ServerConfig {
            // The script's own limit ends it first; this only covers the pipe.
            timeout: self.tool_timeout + Duration::from_secs(5),
            ..ServerConfig::new(
                name.to_owned(),
                TransportConfig::InProcess(InProcessConfig { origin: script.path().to_owned() }),
            )
        };
        let caller: Arc<dyn ToolCaller> = self.caller.clone();
        let server =
            ScriptServer::new(script, self.scripts.clone(), Some(caller), self.tool_timeout);
        (config, Arc::new(Served(server)))
    }
}

/// A script whose tools are not served: its file, and why.
type LeftOut = (std::path::PathBuf, String);

/// Whether `name` can be a server's name and the prefix of its tools' names.
fn is_server_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A [`ScriptServer`] as the upstream layer starts it.
struct Served(Arc<ScriptServer>);

impl InProcessServer for Served {
    fn serve(&self, stream: tokio::io::DuplexStream) {
        let server = self.0.clone();
        tokio::spawn(async move {
            if let Err(error) = server.clone().serve(stream).await {
                tracing::debug!(script = %server.script().path().display(), %error, "a script's server ended");
            }
        });
    }
}

/// Script tools' calls, through the gateway (once it is attached).
#[derive(Default)]
pub struct GatewayCaller {
    gateway: OnceLock<Weak<Gateway>>,
}

impl ToolCaller for GatewayCaller {
    fn call(
        &self,
        origin: Origin,
        name: String,
        arguments: Map<String, Value>,
        progress: Option<ProgressSink>,
    ) -> BoxFuture<'static, Result<mcp::CallToolResult, String>> {
        let gateway = self.gateway.get().and_then(Weak::upgrade);
        Box::pin(async move {
            let gateway = gateway.ok_or("the gateway is not running")?;
            // Nobody known: the least a caller can be.
            let principal = origin.principal.map_or_else(Principal::anonymous, |p| {
                Principal::new(p.kind, p.id).with_groups(p.groups).with_tenant(p.tenant)
            });
            let mut ctx = CallContext::new(principal);
            ctx.session = origin.session;
            ctx.elicitor = origin.asker.and_then(|handle| gateway.askers().find(&handle));
            ctx.insert(CallDepth(origin.depth));
            let params = mcp::CallToolRequestParams::new(name).with_arguments(arguments);
            // The call runs in a task of its own, cancelled when this future is dropped (the
            // script tool was cancelled or timed out), so that the upstream is told
            // (`notifications/cancelled`) instead of working on for nobody.
            let cancel = tokio_util::sync::CancellationToken::new();
            let _cancel_on_drop = cancel.clone().drop_guard();
            let caller = progress.map(|sink| Arc::new(ProgressRelay(sink)) as Arc<dyn Caller>);
            let options = CallOptions { cancel, caller, ..CallOptions::default() };
            let call = tokio::spawn(async move {
                gateway.call_tool(params, &options, &mut ctx).await.map_err(|e| e.to_string())
            });
            call.await.map_err(|error| format!("the call ended without an answer: {error}"))?
        })
    }
}

/// The caller of a script tool's own call: its progress becomes the script tool's (nothing
/// else can be asked of it: an upstream's questions get an error saying so).
struct ProgressRelay(ProgressSink);

impl Caller for ProgressRelay {
    fn progress(&self, params: mcp::ProgressNotificationParam) -> BoxFuture<'static, ()> {
        (self.0)(params.message)
    }
}
