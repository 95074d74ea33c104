//! The [`Pipeline`]: the configured interceptors, ordered and run with SEP-2624's semantics.
//!
//! - Request phase: mutators by priority (lower first, ties in config order), then
//!   validators in the same order. Response phase: validators, then mutators.
//! - A refusal stops the phase; an answer (request phase) skips the upstream.
//! - `audit` interceptors run and are recorded, and change nothing.
//! - An interceptor that fails or exceeds its timeout lets the message through when it is
//!   `fail_open`, and refuses it otherwise; either way the failure is a [`Decision`].

use std::sync::Arc;

use arc_swap::ArcSwap;

use futures::future::BoxFuture;
use tokio::time::Instant;

use toolgate_core::mcp;

use crate::context::CallContext;
use crate::descriptor::{Descriptor, InterceptorType, Mode, Phase};
use crate::message::{InterceptionEvent, Message};
use crate::outcome::{Decision, DecisionKind, InterceptError, Outcome, Refusal};

/// One interceptor: a descriptor and a decision.
pub trait Interceptor: Send + Sync + 'static {
    /// What it is and where it runs.
    fn descriptor(&self) -> &Descriptor;

    /// Decides about `message` (`event` at `phase`). Only called where the descriptor applies.
    fn intercept<'a>(
        &'a self,
        event: InterceptionEvent,
        phase: Phase,
        message: &'a Message,
        ctx: &'a mut CallContext,
    ) -> BoxFuture<'a, Result<Outcome, InterceptError>>;

    /// Whether it has anything to do for `event` in `phase` now. Its descriptor says where it
    /// may act, for good; this may change while it runs (a script reloaded without a hook).
    /// [`Pipeline::runs_on`] asks it, so that an interceptor with nothing to do does not cost a
    /// call its fast path (a result passed on as the upstream wrote it).
    fn acts_on(&self, event: InterceptionEvent, phase: Phase, ctx: &CallContext) -> bool {
        let _ = (event, phase, ctx);
        true
    }

    /// The exposed tool name `name` is another name for, if this interceptor gives tools
    /// other names (aliases). The gateway resolves a call's target with it before the
    /// pipeline runs, so that every interceptor sees the tool actually called.
    fn alias_of(&self, name: &str) -> Option<String> {
        let _ = name;
        None
    }

    /// The tools this interceptor serves itself (`truncate` serves `read_result`), as an
    /// upstream would list them: original names, which the gateway exposes under the server
    /// name [`OWN_SERVER`] (`toolgate__read_result`). Their calls pass the whole pipeline like
    /// any other; then [`call_own_tool`](Self::call_own_tool) answers them instead of an
    /// upstream. Asked once, when the pipeline is built.
    fn own_tools(&self) -> Vec<mcp::Tool> {
        Vec::new()
    }

    /// Answers a call of its own tool `name` (original name) with `arguments`, for the caller
    /// of `ctx`. An error result the model should read is `Ok` with `is_error`; `Err` is a
    /// failure of the interceptor itself.
    fn call_own_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Option<mcp::JsonObject>,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<mcp::CallToolResult, InterceptError>> {
        let _ = (arguments, ctx);
        Box::pin(
            async move { Err(InterceptError(format!("{name} is not a tool of this interceptor"))) },
        )
    }
}

/// The server name under which the gateway lists the tools interceptors serve themselves.
pub const OWN_SERVER: &str = "toolgate";

/// A tool an interceptor serves, as the gateway lists it.
#[derive(Clone)]
pub struct OwnTool {
    /// Its definition under its exposed name (`toolgate__read_result`).
    pub tool: Arc<mcp::Tool>,
    /// Its name as its interceptor knows it (`read_result`).
    pub original: String,
    provider: Arc<dyn Interceptor>,
}

impl std::fmt::Debug for OwnTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnTool")
            .field("exposed", &self.tool.name)
            .field("provider", &self.provider.descriptor().name)
            .finish()
    }
}

/// Why a request did not reach the upstream.
#[derive(Debug, Clone, PartialEq)]
pub enum Stopped {
    /// An interceptor refused it (or failed closed).
    Refused(Refusal),
    /// An interceptor answered it.
    Answered(Box<Message>),
}

/// The ordered chain. Clones share it: [`add`](Pipeline::add) and
/// [`remove`](Pipeline::remove) change it for every clone at once, and a message already on
/// its way finishes with the chain it started with.
#[derive(Clone, Default)]
pub struct Pipeline {
    chain: Arc<ArcSwap<Chain>>,
    /// Held while the chain is changed, so that two changes do not lose one another.
    changing: Arc<std::sync::Mutex<()>>,
}

/// One version of the chain.
#[derive(Default)]
struct Chain {
    /// In config order.
    chain: Vec<Arc<dyn Interceptor>>,
    /// The run orders, computed once.
    request_order: Vec<Arc<dyn Interceptor>>,
    response_order: Vec<Arc<dyn Interceptor>>,
    /// The tools interceptors serve, by exposed name; the first in config order keeps a name.
    own_tools: Vec<OwnTool>,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let chain = self.chain.load();
        f.debug_list().entries(chain.chain.iter().map(|i| &i.descriptor().name)).finish()
    }
}

/// Two interceptors with one name.
#[derive(Debug, thiserror::Error)]
#[error("two interceptors are named {0:?}; give one a `name`")]
pub struct DuplicateName(pub String);

impl Chain {
    fn new(chain: Vec<Arc<dyn Interceptor>>) -> Result<Chain, DuplicateName> {
        let mut seen = std::collections::HashSet::new();
        for interceptor in &chain {
            let name = &interceptor.descriptor().name;
            if !seen.insert(name.clone()) {
                return Err(DuplicateName(name.clone()));
            }
        }
        let request_order = ordered(&chain, Phase::Request);
        let response_order = ordered(&chain, Phase::Response);
        let mut own_tools: Vec<OwnTool> = Vec::new();
        for provider in &chain {
            for mut tool in provider.own_tools() {
                let original = tool.name.to_string();
                let exposed = toolgate_core::name::exposed_name(OWN_SERVER, &original);
                if own_tools.iter().any(|t| t.tool.name == exposed) {
                    continue;
                }
                tool.name = exposed.into();
                own_tools.push(OwnTool {
                    tool: Arc::new(tool),
                    original,
                    provider: provider.clone(),
                });
            }
        }
        Ok(Chain { chain, request_order, response_order, own_tools })
    }

    fn order(&self, phase: Phase) -> &[Arc<dyn Interceptor>] {
        match phase {
            Phase::Request => &self.request_order,
            Phase::Response => &self.response_order,
        }
    }
}

impl Pipeline {
    /// A pipeline of `chain`, in config order. Names must be unique.
    pub fn new(chain: Vec<Arc<dyn Interceptor>>) -> Result<Pipeline, DuplicateName> {
        let chain = Chain::new(chain)?;
        Ok(Pipeline { chain: Arc::new(ArcSwap::from_pointee(chain)), changing: Arc::default() })
    }

    /// Adds `interceptor` after the others in config order (its priority places it in the run
    /// order), for every clone of this pipeline, from the next message on.
    pub fn add(&self, interceptor: Arc<dyn Interceptor>) -> Result<(), DuplicateName> {
        let _changing = self.changing.lock().expect("pipeline change lock");
        let mut chain = self.chain.load().chain.clone();
        chain.push(interceptor);
        self.chain.store(Arc::new(Chain::new(chain)?));
        Ok(())
    }

    /// Removes the interceptor named `name`, from the next message on; whether there was one.
    pub fn remove(&self, name: &str) -> bool {
        let _changing = self.changing.lock().expect("pipeline change lock");
        let mut chain = self.chain.load().chain.clone();
        let before = chain.len();
        chain.retain(|i| i.descriptor().name != name);
        if chain.len() == before {
            return false;
        }
        self.chain
            .store(Arc::new(Chain::new(chain).expect("fewer interceptors keep names unique")));
        true
    }

    /// The tools the interceptors serve themselves, as the gateway lists them.
    pub fn own_tools(&self) -> Vec<OwnTool> {
        self.chain.load().own_tools.clone()
    }

    /// The tool an interceptor serves under the exposed name `name`.
    pub fn own_tool(&self, name: &str) -> Option<OwnTool> {
        self.chain.load().own_tools.iter().find(|t| t.tool.name == name).cloned()
    }

    /// Answers a call of the own tool exposed as `name` (after the request phase).
    pub async fn call_own_tool(
        &self,
        name: &str,
        arguments: Option<mcp::JsonObject>,
        ctx: &CallContext,
    ) -> Option<Result<mcp::CallToolResult, InterceptError>> {
        let own = self.own_tool(name)?;
        Some(own.provider.call_own_tool(&own.original, arguments, ctx).await)
    }

    /// The interceptors in config order.
    pub fn descriptors(&self) -> Vec<Descriptor> {
        self.chain.load().chain.iter().map(|i| i.descriptor().clone()).collect()
    }

    /// The exposed tool name `name` stands for, when an active interceptor defines it as an
    /// alias (the first in config order wins).
    pub fn alias_of(&self, name: &str) -> Option<String> {
        self.chain
            .load()
            .chain
            .iter()
            .filter(|i| i.descriptor().mode == Mode::Active)
            .find_map(|i| i.alias_of(name))
    }

    /// Whether nothing is configured.
    pub fn is_empty(&self) -> bool {
        self.chain.load().chain.is_empty()
    }

    /// Whether any interceptor would run on `event` at `phase` for the call `ctx` targets
    /// (so a message nobody reads need not be parsed for them).
    pub fn runs_on(&self, event: InterceptionEvent, phase: Phase, ctx: &CallContext) -> bool {
        let (server, tool) = ctx.server_and_tool();
        let tenant = ctx.principal.tenant.as_deref();
        self.chain.load().order(phase).iter().any(|i| {
            i.descriptor().applies(event, phase, server, tool)
                && i.descriptor().covers_tenant(tenant)
                && i.acts_on(event, phase, ctx)
        })
    }

    /// The interceptors of `phase` in the order they run.
    pub fn run_order(&self, phase: Phase) -> Vec<Descriptor> {
        self.chain.load().order(phase).iter().map(|i| i.descriptor().clone()).collect()
    }

    /// Runs the request phase: the message to send upstream, or why there is none.
    pub async fn request(
        &self,
        event: InterceptionEvent,
        message: Message,
        ctx: &mut CallContext,
    ) -> Result<Message, Stopped> {
        let chain = self.chain.load_full();
        let mut message = message;
        for interceptor in chain.order(Phase::Request) {
            match run_one(interceptor.as_ref(), event, Phase::Request, &message, ctx).await {
                Outcome::Continue => {}
                Outcome::Rewrite(rewritten) => {
                    if let Message::CallTool(params) = &rewritten {
                        ctx.follow_rename(&params.name);
                    }
                    message = rewritten;
                }
                Outcome::Refuse(refusal) => return Err(Stopped::Refused(refusal)),
                Outcome::Answer(answer) => return Err(Stopped::Answered(Box::new(answer))),
            }
        }
        Ok(message)
    }

    /// Runs the response phase: the message for the caller, or why it may not have it.
    pub async fn response(
        &self,
        event: InterceptionEvent,
        message: Message,
        ctx: &mut CallContext,
    ) -> Result<Message, Refusal> {
        let chain = self.chain.load_full();
        let mut message = message;
        for interceptor in chain.order(Phase::Response) {
            match run_one(interceptor.as_ref(), event, Phase::Response, &message, ctx).await {
                Outcome::Continue => {}
                Outcome::Rewrite(rewritten) => message = rewritten,
                Outcome::Refuse(refusal) => return Err(refusal),
                Outcome::Answer(_) => {
                    unreachable!("run_one turns a response-phase answer into a failure")
                }
            }
        }
        Ok(message)
    }
}

/// `chain` in the order `phase` runs it: request phase mutators then validators, response
/// phase the reverse; each by priority, ties in config order.
fn ordered(chain: &[Arc<dyn Interceptor>], phase: Phase) -> Vec<Arc<dyn Interceptor>> {
    let of_type = |wanted: InterceptorType| {
        let mut these: Vec<(usize, &Arc<dyn Interceptor>)> = chain
            .iter()
            .enumerate()
            .filter(|(_, i)| i.descriptor().interceptor_type == wanted)
            .collect();
        these.sort_by_key(|(index, i)| (i.descriptor().priority, *index));
        these.into_iter().map(|(_, i)| i.clone())
    };
    let (first, then) = match phase {
        Phase::Request => (InterceptorType::Mutation, InterceptorType::Validation),
        Phase::Response => (InterceptorType::Validation, InterceptorType::Mutation),
    };
    of_type(first).chain(of_type(then)).collect()
}

/// Runs one interceptor where it applies, applying its mode, type, timeout and failure
/// policy; records the decision. The outcome returned is what the pipeline must do.
async fn run_one(
    interceptor: &dyn Interceptor,
    event: InterceptionEvent,
    phase: Phase,
    message: &Message,
    ctx: &mut CallContext,
) -> Outcome {
    let descriptor = interceptor.descriptor();
    let (server, tool) = ctx.server_and_tool();
    if !descriptor.applies(event, phase, server, tool)
        || !descriptor.covers_tenant(ctx.principal.tenant.as_deref())
    {
        return Outcome::Continue;
    }
    let span = in_traced_request().then(|| span(descriptor, event, phase));
    // The interceptor's own time, without its span's.
    let started = Instant::now();
    let decided =
        tokio::time::timeout(descriptor.timeout, interceptor.intercept(event, phase, message, ctx))
            .await;
    let decided = match decided {
        Err(_) => Err(format!("did not decide within {:?}", descriptor.timeout)),
        Ok(Err(error)) => Err(error.to_string()),
        Ok(Ok(outcome)) => allowed(descriptor, phase, outcome),
    };
    let (kind, outcome) = match decided {
        Err(error) => {
            tracing::warn!(interceptor = %descriptor.name, %event, %error, "interceptor failed");
            let let_through = descriptor.fail_open || descriptor.mode == Mode::Audit;
            let outcome = if let_through {
                Outcome::Continue
            } else {
                Outcome::Refuse(Refusal {
                    interceptor: descriptor.name.clone(),
                    reason: format!("the interceptor failed ({error}), and it fails closed"),
                })
            };
            (DecisionKind::Failed { error, let_through }, outcome)
        }
        Ok(outcome) => {
            let kind = match &outcome {
                Outcome::Continue => DecisionKind::Continued,
                Outcome::Rewrite(_) => DecisionKind::Rewrote,
                Outcome::Refuse(refusal) => DecisionKind::Refused(refusal.reason.clone()),
                Outcome::Answer(_) => DecisionKind::Answered,
            };
            match descriptor.mode {
                Mode::Active => (kind, outcome),
                Mode::Audit => (DecisionKind::WouldHave(Box::new(kind)), Outcome::Continue),
            }
        }
    };
    if let Some(mut span) = span {
        use opentelemetry::trace::Span as _;
        span.set_attribute(opentelemetry::KeyValue::new(
            "toolgate.interceptor.decision",
            kind.name(),
        ));
        if let DecisionKind::Refused(_) | DecisionKind::Failed { let_through: false, .. } = kind {
            span.set_status(opentelemetry::trace::Status::error(kind.name()));
        }
        span.end();
    }
    ctx.decisions.push(Decision {
        interceptor: descriptor.name.clone(),
        event,
        phase,
        kind,
        duration: started.elapsed(),
    });
    outcome
}

/// Whether the message is served in a request's span (a front's, or `toolgate call`'s and the
/// agent's tool calls): an interceptor's span is its child, and never a trace of its own.
fn in_traced_request() -> bool {
    use opentelemetry::trace::TraceContextExt as _;
    toolgate_core::trace::enabled() && opentelemetry::Context::current().has_active_span()
}

/// The span of one interceptor's run, a child of the request's, named after its kind.
fn span(
    descriptor: &Descriptor,
    event: InterceptionEvent,
    phase: Phase,
) -> opentelemetry::global::BoxedSpan {
    use opentelemetry::KeyValue;
    use opentelemetry::trace::Tracer as _;
    let tracer = toolgate_core::trace::tracer();
    tracer
        .span_builder(descriptor.kind.clone())
        .with_attributes([
            KeyValue::new("toolgate.interceptor.name", descriptor.name.clone()),
            KeyValue::new("toolgate.interceptor.event", event.to_string()),
            KeyValue::new("toolgate.interceptor.phase", format!("{phase:?}").to_lowercase()),
        ])
        .start(&tracer)
}

/// An outcome the interceptor's type and the phase permit, or why not.
fn allowed(descriptor: &Descriptor, phase: Phase, outcome: Outcome) -> Result<Outcome, String> {
    match (&outcome, descriptor.interceptor_type, phase) {
        (Outcome::Rewrite(_) | Outcome::Answer(_), InterceptorType::Validation, _) => {
            Err("a validation interceptor tried to change the message".to_owned())
        }
        (Outcome::Answer(_), _, Phase::Response) => {
            Err("an interceptor tried to answer in the response phase".to_owned())
        }
        _ => Ok(outcome),
    }
}

#[cfg(test)]
mod tests;
