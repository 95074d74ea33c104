//! `toolgate::call(name, arguments)`: a script's own tool calling another tool through the
//! gateway. The call is made on behalf of whoever called the script's tool (the same
//! principal and session, as the gateway told the script's server in `_meta`, see
//! [`CALLER_META`]), so it passes the pipeline (policy, approvals, audit) as that caller's
//! own call would: a script tool cannot reach what its caller may not.
//!
//! Calls nest at most [`MAX_DEPTH`] deep: a tool that calls itself, or two tools that call
//! each other, end with an error at that depth instead of looping.
//!
//! Only a script's tools may call: in an interceptor hook `toolgate::call` is an error (a
//! hook runs inside another call's pipeline).

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::runtime::Handle;
use toolgate_core::mcp;

/// The `_meta` key under which the gateway tells a script's server who called it
/// ([`Origin`]). The gateway sets it on calls to servers inside toolgate and removes it from
/// every other call, so a client cannot pose as someone else through it.
pub const CALLER_META: &str = "io.toolgate/caller";

/// How deep calls through `toolgate::call` may nest.
pub const MAX_DEPTH: u32 = 4;

/// Who a script's tool was called by.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The caller's principal (`kind:id`, as the pipeline names it), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<PrincipalName>,
    /// The caller's session, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// How many `toolgate::call`s deep this call is: 0 for a client's own call.
    #[serde(default)]
    pub depth: u32,
    /// A handle by which the gateway finds the person at the caller's client again (to ask
    /// for an approval), valid while the call runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asker: Option<String>,
}

/// A principal, in the pipeline's terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrincipalName {
    pub kind: String,
    pub id: String,
    /// Its groups: a script's own calls are decided for the same groups as its caller's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Its tenant: a script's own calls stay within its caller's tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

impl Origin {
    /// What `_meta` holds under [`CALLER_META`]; the default when it holds nothing readable.
    pub fn from_meta(meta: &Map<String, Value>) -> Origin {
        meta.get(CALLER_META)
            .and_then(|value| serde_json::from_value(value.clone()).ok())
            .unwrap_or_default()
    }

    /// As `_meta` carries it.
    pub fn to_meta(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// How a script's calls reach the gateway.
pub trait ToolCaller: Send + Sync + 'static {
    /// Calls the tool `name` (an exposed name, as clients see it) with `arguments` on behalf
    /// of `origin`, whose `depth` is this call's; the call's progress goes to `progress`. An
    /// error is what refused or failed the call, in words.
    fn call(
        &self,
        origin: Origin,
        name: String,
        arguments: Map<String, Value>,
        progress: Option<ProgressSink>,
    ) -> BoxFuture<'static, Result<mcp::CallToolResult, String>>;
}

/// Where the progress of the calls a tool makes goes: the tool's own caller, as the tool's
/// progress (given the message of each notification, if any).
pub type ProgressSink = Arc<dyn Fn(Option<String>) -> BoxFuture<'static, ()> + Send + Sync>;

/// What a running tool may call through, and as whom.
#[derive(Clone)]
pub struct ToolAccess {
    pub caller: Arc<dyn ToolCaller>,
    pub origin: Origin,
    /// Where the progress of its calls goes, when its caller asked for progress.
    pub progress: Option<ProgressSink>,
}

tokio::task_local! {
    /// The access of the tool whose invocation is being polled (`None` for a hook), and the
    /// runtime its calls run on.
    static ACCESS: (Option<ToolAccess>, Handle);
}

/// Runs `invocation` (on a script thread) with `access` (none: `toolgate::call` is an error
/// in it); the calls it makes run on `home`, the runtime of the gateway that called it, not
/// on the script thread.
pub(crate) async fn within<F: Future>(
    access: Option<ToolAccess>,
    home: Handle,
    invocation: F,
) -> F::Output {
    ACCESS.scope((access, home), invocation).await
}

/// `toolgate::call`: the tool's result as JSON, or why there is none (refused, failed, or a
/// result marked as an error, with its text).
pub(crate) async fn call(name: String, arguments: Value) -> Result<Value, String> {
    let tool = ACCESS.try_with(|(access, home)| Some((access.clone()?, home.clone())));
    let (access, home) = tool.ok().flatten().ok_or_else(|| {
        "toolgate::call needs the gateway: it works in a script's own tools (call_<name>) as \
         toolgate serves them, not in hooks (nor under `toolgate script test`)"
            .to_owned()
    })?;
    let depth = access.origin.depth + 1;
    if depth > MAX_DEPTH {
        return Err(format!(
            "calling {name}: tool calls through toolgate::call nest at most {MAX_DEPTH} deep \
             (a tool that calls itself, or tools that call each other?)"
        ));
    }
    let arguments = match arguments {
        Value::Object(arguments) => arguments,
        Value::Null => Map::new(),
        other => {
            return Err(format!("calling {name}: the arguments must be an object, not {other}"));
        }
    };
    let origin = Origin { depth, ..access.origin };
    let calling = access.caller.call(origin, name.clone(), arguments, access.progress);
    let result = on(&home, calling).await.map_err(|e| format!("calling {name}: {e}"))??;
    if result.is_error == Some(true) {
        let text = crate::tools::text_of(&result);
        return Err(format!("{name} answered with an error: {text}"));
    }
    serde_json::to_value(result).map_err(|e| e.to_string())
}

/// Runs `future` on `home`; its output, or why it has none. Dropping the returned future
/// aborts it there.
async fn on<T: Send + 'static>(
    home: &Handle,
    future: impl Future<Output = T> + Send + 'static,
) -> Result<T, String> {
    struct AbortOnDrop(tokio::task::AbortHandle);
    impl Drop for AbortOnDrop {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let task = home.spawn(future);
    let _abort = AbortOnDrop(task.abort_handle());
    task.await.map_err(|e| {
        if e.is_panic() { "it panicked".to_owned() } else { "it was cancelled".to_owned() }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_origin_travels_in_meta_and_a_bad_one_is_nobody() {
        let origin = Origin {
            principal: Some(PrincipalName {
                kind: "jwt".into(),
                id: "ann".into(),
                groups: vec!["oncall".into()],
                tenant: Some("acme".into()),
            }),
            session: Some("s1".into()),
            depth: 2,
            asker: Some("a1".into()),
        };
        let mut meta = Map::new();
        meta.insert(CALLER_META.into(), origin.to_meta());
        assert_eq!(Origin::from_meta(&meta), origin);
        meta.insert(CALLER_META.into(), Value::String("admin".into()));
        assert_eq!(Origin::from_meta(&meta), Origin::default());
        assert_eq!(Origin::from_meta(&Map::new()), Origin::default());
    }
}
