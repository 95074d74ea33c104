//! The gateway: one per process. It owns the upstream connections and the merged inventory,
//! and turns a request in exposed names into a request to the right upstream.
//!
//! Every path to an upstream (the MCP server on stdio or HTTP, `toolgate call`) goes through
//! these methods; the interceptor pipeline will sit here.

#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577) but still spoken

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use toolgate_config::ServerConfig;
use toolgate_core::mcp;
use toolgate_upstream::{
    CallOptions, Connected, Contribution, Inventory, Route, Upstream, UpstreamError, UpstreamEvent,
};

use toolgate_intercept::{
    ApprovalRequired, Approved, CallContext, InterceptionEvent, Listed, Message, Pipeline, Refusal,
    Stopped, Target, UpstreamTimeout, call_digest,
};

use crate::record::Recorder;
use crate::session::{Changed, Session, Sessions};

/// Why the gateway could not serve a request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// No exposed tool has this name.
    #[error("unknown tool: {0}")]
    UnknownTool(String),
    /// No exposed prompt has this name.
    #[error("unknown prompt: {0}")]
    UnknownPrompt(String),
    /// No upstream offers this resource.
    #[error("resource not found: {0}")]
    UnknownResource(String),
    /// The upstream failed.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// An interceptor refused the request (or its answer).
    #[error("{0}")]
    Refused(Refusal),
    /// An interceptor turned a message into one of another kind.
    #[error("interceptor error: {0}")]
    Interceptor(String),
}

/// How often sessions that closed are looked for (they are also looked for on every event).
const SESSION_SWEEP: std::time::Duration = std::time::Duration::from_secs(30);

/// A server whose first connection attempt failed (it keeps retrying in the background).
#[derive(Debug, Clone)]
pub struct FailedUpstream {
    /// Its name.
    pub name: String,
    /// Why, with its whole cause chain.
    pub reason: String,
}

/// Upstreams, inventory, sessions, and dispatch.
#[derive(Debug)]
pub struct Gateway {
    upstreams: Arc<HashMap<Arc<str>, Arc<Upstream>>>,
    ordered: Vec<Arc<Upstream>>,
    failed: Vec<FailedUpstream>,
    inventory: RwLock<Arc<Inventory>>,
    sessions: Sessions,
    /// Downstream subscriptions per upstream resource: the upstream is subscribed once.
    subscribers: Mutex<HashMap<(Arc<str>, String), usize>>,
    pipeline: Pipeline,
    /// Where events go.
    recorder: Recorder,
    /// The log level last sent to the upstreams.
    upstream_log_level: Mutex<Option<mcp::LoggingLevel>>,
    /// Requests being relayed now, for a graceful shutdown.
    in_flight: tokio::sync::watch::Sender<usize>,
}

/// Counts a request as in flight until dropped.
struct InFlightGuard<'a>(&'a tokio::sync::watch::Sender<usize>);

impl<'a> InFlightGuard<'a> {
    fn new(counter: &'a tokio::sync::watch::Sender<usize>) -> Self {
        counter.send_modify(|n| *n += 1);
        InFlightGuard(counter)
    }
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

impl Gateway {
    /// Starts every enabled server in `servers`, waits for each one's first attempt, and
    /// starts following their events. Every request passes `pipeline`; what happens is
    /// published through `recorder`.
    pub async fn start(
        servers: &[ServerConfig],
        pipeline: Pipeline,
        recorder: Recorder,
    ) -> Arc<Gateway> {
        let (events, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        let connected = toolgate_upstream::connect_all(servers, Some(events)).await;
        let gateway = Arc::new(Gateway::new(connected, pipeline, recorder));
        let weak = Arc::downgrade(&gateway);
        tokio::spawn(async move {
            let mut sweep = tokio::time::interval(SESSION_SWEEP);
            sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let event = tokio::select! {
                    event = receiver.recv() => event,
                    _ = sweep.tick() => None,
                };
                let Some(gateway) = weak.upgrade() else { break };
                match event {
                    Some(event) => {
                        // Everything already waiting is handled as one batch: a hundred
                        // upstreams connecting at start-up rebuild the inventory once, not a
                        // hundred times.
                        let mut batch = vec![event];
                        while let Ok(more) = receiver.try_recv() {
                            batch.push(more);
                        }
                        gateway.on_events(batch).await;
                    }
                    None if receiver.is_closed() => break,
                    None => {}
                }
                gateway.release_closed_sessions().await;
            }
        });
        gateway
    }

    /// Releases what sessions that have closed held: their resource subscriptions (the
    /// upstream is unsubscribed after the last subscriber goes).
    async fn release_closed_sessions(&self) {
        for uri in self.sessions.take_released() {
            if let Err(error) = self.unsubscribe(None, &uri).await {
                tracing::debug!(%uri, %error, "releasing a closed session's subscription failed");
            }
        }
    }

    fn new(connected: Connected, pipeline: Pipeline, recorder: Recorder) -> Gateway {
        let failed = connected
            .failed
            .iter()
            .map(|error| FailedUpstream {
                name: error.upstream().to_owned(),
                reason: toolgate_core::ErrorChain(error).to_string(),
            })
            .collect();
        let inventory = Arc::new(merge(&connected.upstreams));
        Gateway {
            upstreams: Arc::new(
                connected
                    .upstreams
                    .iter()
                    .map(|u| (Arc::<str>::from(u.name()), u.clone()))
                    .collect(),
            ),
            ordered: connected.upstreams,
            failed,
            inventory: RwLock::new(inventory),
            sessions: Sessions::default(),
            subscribers: Mutex::default(),
            pipeline,
            recorder,
            upstream_log_level: Mutex::default(),
            in_flight: tokio::sync::watch::Sender::new(0),
        }
    }

    /// The current inventory snapshot.
    pub fn inventory(&self) -> Arc<Inventory> {
        self.inventory.read().expect("inventory lock must not be poisoned").clone()
    }

    /// Every enabled upstream, connected or not, in config order.
    pub fn upstreams(&self) -> &[Arc<Upstream>] {
        &self.ordered
    }

    /// Servers whose first connection attempt failed.
    pub fn failed(&self) -> &[FailedUpstream] {
        &self.failed
    }

    /// The downstream sessions.
    pub(crate) fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// The interceptors every request passes.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// Where the gateway's events go.
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// `tools/list` as `ctx`'s caller sees it: the inventory, through the pipeline.
    pub async fn list_tools(&self, ctx: &mut CallContext) -> Result<Vec<mcp::Tool>, GatewayError> {
        let inventory = self.inventory();
        if self.pipeline.is_empty() {
            return Ok(inventory.tools().to_vec());
        }
        let listed = inventory
            .tools()
            .iter()
            .filter_map(|tool| {
                let route = inventory.tool_route(&tool.name)?;
                Some(Listed {
                    server: route.upstream.to_string(),
                    original: route.original.clone(),
                    item: tool.clone(),
                })
            })
            .collect();
        let read = |message| match message {
            Message::Tools(listed) => Some(listed.into_iter().map(|l| l.item).collect()),
            _ => None,
        };
        self.list_through_pipeline(InterceptionEvent::ToolsList, Message::Tools(listed), read, ctx)
            .await
    }

    /// A list as `ctx`'s caller is shown it: the request phase (which may refuse), then the
    /// response phase over `list`, read back with `read`. A refusal is recorded.
    async fn list_through_pipeline<T>(
        &self,
        event: InterceptionEvent,
        list: Message,
        read: impl FnOnce(Message) -> Option<T>,
        ctx: &mut CallContext,
    ) -> Result<T, GatewayError> {
        let shown = async {
            self.pipeline.request(event, Message::Empty, ctx).await.map_err(stopped)?;
            match self.pipeline.response(event, list, ctx).await {
                Ok(message) => read(message).ok_or_else(|| {
                    GatewayError::Interceptor(format!("the {event} answer became something else"))
                }),
                Err(refusal) => Err(GatewayError::Refused(refusal)),
            }
        }
        .await;
        if let Err(error) = &shown {
            self.recorder.request_refused(ctx, event.as_str(), error);
        }
        shown
    }

    /// `tools/call` by exposed name (or an alias an interceptor defines), through the
    /// pipeline; its start and end are published as events.
    pub async fn call_tool(
        &self,
        params: mcp::CallToolRequestParams,
        options: &CallOptions,
        ctx: &mut CallContext,
    ) -> Result<mcp::CallToolResult, GatewayError> {
        let _in_flight = InFlightGuard::new(&self.in_flight);
        let exposed = params.name.to_string();
        let outcome = self.dispatch_tool(params, options, ctx).await;
        self.recorder.call_ended(ctx, &exposed, &outcome);
        outcome
    }

    async fn dispatch_tool(
        &self,
        params: mcp::CallToolRequestParams,
        options: &CallOptions,
        ctx: &mut CallContext,
    ) -> Result<mcp::CallToolResult, GatewayError> {
        let resolve = self.tool_resolver();
        // A tool's own name first; an alias only for names no tool has.
        let target = resolve(&params.name)
            .or_else(|| self.pipeline.alias_of(&params.name).and_then(|name| resolve(&name)))
            .ok_or_else(|| GatewayError::UnknownTool(params.name.to_string()))?;
        ctx.target = Some(target);
        self.recorder.call_started(ctx, &params);
        if self.pipeline.is_empty() {
            return self.send_tool(params, options, ctx).await;
        }
        ctx.retarget = Some(Arc::new(resolve));
        let params = match self
            .pipeline
            .request(InterceptionEvent::ToolsCall, Message::CallTool(params), ctx)
            .await
        {
            Ok(Message::CallTool(params)) => params,
            Ok(_) => {
                return Err(GatewayError::Interceptor("a tool call became something else".into()));
            }
            Err(Stopped::Answered(Message::ToolResult(result))) => return Ok(result),
            Err(stop) => return Err(stopped(stop)),
        };
        self.check_approval(ctx, &params)?;
        let result = self.send_tool(params, options, ctx).await?;
        match self
            .pipeline
            .response(InterceptionEvent::ToolsCall, Message::ToolResult(result), ctx)
            .await
        {
            Ok(Message::ToolResult(result)) => Ok(result),
            Ok(_) => Err(GatewayError::Interceptor("a tool result became something else".into())),
            Err(refusal) => Err(GatewayError::Refused(refusal)),
        }
    }

    /// Sends the call to the upstream of `ctx.target`, under its original name.
    async fn send_tool(
        &self,
        mut params: mcp::CallToolRequestParams,
        options: &CallOptions,
        ctx: &CallContext,
    ) -> Result<mcp::CallToolResult, GatewayError> {
        let target = ctx
            .target
            .as_ref()
            .ok_or_else(|| GatewayError::UnknownTool(params.name.to_string()))?;
        let upstream = self.upstream_named(&target.server)?;
        params.name = target.original.clone().into();
        let result = match ctx.get::<UpstreamTimeout>() {
            Some(UpstreamTimeout(timeout)) => {
                let options = CallOptions { timeout: Some(*timeout), ..options.clone() };
                upstream.call_tool(params, &options).await?
            }
            None => upstream.call_tool(params, options).await?,
        };
        Ok(result)
    }

    /// Finds what an exposed tool name stands for, now and later (for renamed calls).
    fn tool_resolver(&self) -> impl Fn(&str) -> Option<Target> + Send + Sync + 'static {
        let inventory = self.inventory();
        let upstreams = self.upstreams.clone();
        move |name: &str| {
            let route = inventory
                .tool_route(name)
                .cloned()
                .or_else(|| inventory.unlisted_tool_route(name))?;
            let upstream = upstreams.get(&route.upstream)?;
            let definition =
                upstream.catalog().tools.iter().find(|t| t.name == route.original).cloned();
            Some(Target {
                server: route.upstream.to_string(),
                original: route.original.clone(),
                exposed: name.to_owned(),
                tool: definition.map(Arc::new),
            })
        }
    }

    /// A call that needs approval goes out only with one, and only as it was approved: the
    /// digest is computed again from the tool's definition as listed now and the arguments
    /// as they will be sent.
    fn check_approval(
        &self,
        ctx: &CallContext,
        params: &mcp::CallToolRequestParams,
    ) -> Result<(), GatewayError> {
        let approved = ctx.get::<Approved>();
        if let Some(required) = ctx.get::<ApprovalRequired>()
            && approved.is_none()
        {
            return Err(GatewayError::Refused(Refusal {
                interceptor: required.by.clone(),
                reason: format!(
                    "this call needs a person's approval ({}), and no approval interceptor \
                     handles it",
                    required.reason
                ),
            }));
        }
        let (Some(approved), Some(target)) = (approved, &ctx.target) else { return Ok(()) };
        let upstream = self.upstream_named(&target.server)?;
        let catalog = upstream.catalog();
        let definition = catalog.tools.iter().find(|t| t.name == target.original);
        let digest =
            call_digest(&target.server, &target.original, definition, params.arguments.as_ref());
        if digest != approved.digest {
            return Err(GatewayError::Refused(Refusal {
                interceptor: "approval".into(),
                reason: "the call changed after it was approved (the tool's definition or the \
                         arguments); it was not sent"
                    .into(),
            }));
        }
        Ok(())
    }

    fn upstream_named(&self, server: &str) -> Result<Arc<Upstream>, GatewayError> {
        self.upstreams.get(server).cloned().ok_or_else(|| {
            GatewayError::Upstream(UpstreamError::Disconnected { upstream: server.to_owned() })
        })
    }

    /// `prompts/list` as `ctx`'s caller sees it: the inventory, through the pipeline.
    pub async fn list_prompts(
        &self,
        ctx: &mut CallContext,
    ) -> Result<Vec<mcp::Prompt>, GatewayError> {
        let inventory = self.inventory();
        if self.pipeline.is_empty() {
            return Ok(inventory.prompts().to_vec());
        }
        let listed = inventory
            .prompts()
            .iter()
            .filter_map(|prompt| {
                let route = inventory.prompt_route(&prompt.name)?;
                Some(Listed {
                    server: route.upstream.to_string(),
                    original: route.original.clone(),
                    item: prompt.clone(),
                })
            })
            .collect();
        let read = |message| match message {
            Message::Prompts(listed) => Some(listed.into_iter().map(|l| l.item).collect()),
            _ => None,
        };
        self.list_through_pipeline(
            InterceptionEvent::PromptsList,
            Message::Prompts(listed),
            read,
            ctx,
        )
        .await
    }

    /// `prompts/get` by exposed name, through the pipeline.
    pub async fn get_prompt(
        &self,
        params: mcp::GetPromptRequestParams,
        options: &CallOptions,
        ctx: &mut CallContext,
    ) -> Result<mcp::GetPromptResult, GatewayError> {
        let _in_flight = InFlightGuard::new(&self.in_flight);
        let inventory = self.inventory();
        let route = inventory
            .prompt_route(&params.name)
            .cloned()
            .or_else(|| inventory.unlisted_prompt_route(&params.name))
            .ok_or_else(|| GatewayError::UnknownPrompt(params.name.clone()))?;
        let upstream = self.upstream(&route)?;
        ctx.target = Some(Target {
            server: route.upstream.to_string(),
            original: route.original.clone(),
            exposed: params.name.clone(),
            tool: None,
        });
        let mut params = match self
            .pipeline
            .request(InterceptionEvent::PromptsGet, Message::GetPrompt(params), ctx)
            .await
        {
            Ok(Message::GetPrompt(params)) => params,
            Ok(_) => {
                return Err(GatewayError::Interceptor(
                    "a prompt request became something else".into(),
                ));
            }
            Err(Stopped::Answered(Message::Prompt(result))) => return Ok(result),
            Err(stop) => {
                return Err(self.refused(ctx, InterceptionEvent::PromptsGet, stopped(stop)));
            }
        };
        params.name = route.original.clone();
        let result = upstream.get_prompt(params, options).await?;
        match self
            .pipeline
            .response(InterceptionEvent::PromptsGet, Message::Prompt(result), ctx)
            .await
        {
            Ok(Message::Prompt(result)) => Ok(result),
            Ok(_) => Err(GatewayError::Interceptor("a prompt became something else".into())),
            Err(refusal) => Err(self.refused(
                ctx,
                InterceptionEvent::PromptsGet,
                GatewayError::Refused(refusal),
            )),
        }
    }

    /// `resources/list` as `ctx`'s caller sees it, through the pipeline.
    pub async fn list_resources(
        &self,
        ctx: &mut CallContext,
    ) -> Result<Vec<mcp::Resource>, GatewayError> {
        let inventory = self.inventory();
        if self.pipeline.is_empty() {
            return Ok(inventory.resources().to_vec());
        }
        let all = Message::Resources(inventory.resources().to_vec());
        let read = |message| match message {
            Message::Resources(resources) => Some(resources),
            _ => None,
        };
        self.list_through_pipeline(InterceptionEvent::ResourcesList, all, read, ctx).await
    }

    /// `resources/read` by exposed URI, through the pipeline. The contents keep the URI the
    /// caller asked for.
    pub async fn read_resource(
        &self,
        params: mcp::ReadResourceRequestParams,
        options: &CallOptions,
        ctx: &mut CallContext,
    ) -> Result<mcp::ReadResourceResult, GatewayError> {
        let _in_flight = InFlightGuard::new(&self.in_flight);
        let asked = params.uri.clone();
        let route = self
            .inventory()
            .resource_route(&asked)
            .ok_or_else(|| GatewayError::UnknownResource(asked.clone()))?;
        let upstream = self.upstream(&route)?;
        ctx.target = Some(Target {
            server: route.upstream.to_string(),
            original: route.original.clone(),
            exposed: asked.clone(),
            tool: None,
        });
        let mut params = match self
            .pipeline
            .request(InterceptionEvent::ResourcesRead, Message::ReadResource(params), ctx)
            .await
        {
            Ok(Message::ReadResource(params)) => params,
            Ok(_) => {
                return Err(GatewayError::Interceptor(
                    "a resource request became something else".into(),
                ));
            }
            Err(Stopped::Answered(Message::Resource(result))) => return Ok(result),
            Err(stop) => {
                return Err(self.refused(ctx, InterceptionEvent::ResourcesRead, stopped(stop)));
            }
        };
        params.uri = route.original.clone();
        let mut result = upstream.read_resource(params, options).await?;
        if asked != route.original {
            for contents in &mut result.contents {
                restore_uri(contents, &route.original, &asked);
            }
        }
        match self
            .pipeline
            .response(InterceptionEvent::ResourcesRead, Message::Resource(result), ctx)
            .await
        {
            Ok(Message::Resource(result)) => Ok(result),
            Ok(_) => Err(GatewayError::Interceptor("a resource became something else".into())),
            Err(refusal) => Err(self.refused(
                ctx,
                InterceptionEvent::ResourcesRead,
                GatewayError::Refused(refusal),
            )),
        }
    }

    /// Records a refused request other than a tool call, and returns its error.
    fn refused(
        &self,
        ctx: &CallContext,
        event: InterceptionEvent,
        error: GatewayError,
    ) -> GatewayError {
        self.recorder.request_refused(ctx, event.as_str(), &error);
        error
    }

    /// `completion/complete`: routed by the prompt name or resource URI it refers to.
    pub async fn complete(
        &self,
        mut params: mcp::CompleteRequestParams,
        options: &CallOptions,
    ) -> Result<mcp::CompleteResult, GatewayError> {
        let _in_flight = InFlightGuard::new(&self.in_flight);
        let inventory = self.inventory();
        let route = match &mut params.r#ref {
            mcp::Reference::Prompt(prompt) => {
                let route = inventory
                    .prompt_route(&prompt.name)
                    .cloned()
                    .or_else(|| inventory.unlisted_prompt_route(&prompt.name))
                    .ok_or_else(|| GatewayError::UnknownPrompt(prompt.name.clone()))?;
                prompt.name = route.original.clone();
                route
            }
            mcp::Reference::Resource(resource) => {
                let route = inventory
                    .resource_route(&resource.uri)
                    .ok_or_else(|| GatewayError::UnknownResource(resource.uri.clone()))?;
                resource.uri = route.original.clone();
                route
            }
            _ => return Ok(mcp::CompleteResult::default()),
        };
        Ok(self.upstream(&route)?.complete(params, options).await?)
    }

    /// `resources/subscribe` from `session` (or from a `subscriptions/listen` stream, which
    /// has none); the upstream is subscribed on the first.
    pub(crate) async fn subscribe(
        &self,
        session: Option<&Session>,
        uri: &str,
    ) -> Result<(), GatewayError> {
        let route = self
            .inventory()
            .resource_route(uri)
            .ok_or_else(|| GatewayError::UnknownResource(uri.to_owned()))?;
        let upstream = self.upstream(&route)?;
        if session.is_some_and(|s| !s.subscribe(uri)) {
            return Ok(());
        }
        let first = {
            let mut subscribers = self.subscribers.lock().expect("subscribers lock");
            let count =
                subscribers.entry((route.upstream.clone(), route.original.clone())).or_default();
            *count += 1;
            *count == 1
        };
        if first && supports_subscriptions(&upstream) {
            upstream.subscribe(&route.original).await?;
        }
        Ok(())
    }

    /// `resources/unsubscribe` from `session` (or a listen stream); the upstream is
    /// unsubscribed after the last.
    pub(crate) async fn unsubscribe(
        &self,
        session: Option<&Session>,
        uri: &str,
    ) -> Result<(), GatewayError> {
        if session.is_some_and(|s| !s.unsubscribe(uri)) {
            return Ok(());
        }
        let Some(route) = self.inventory().resource_route(uri) else { return Ok(()) };
        let last = {
            let mut subscribers = self.subscribers.lock().expect("subscribers lock");
            let key = (route.upstream.clone(), route.original.clone());
            match subscribers.get_mut(&key) {
                Some(count) if *count > 1 => {
                    *count -= 1;
                    false
                }
                Some(_) => {
                    subscribers.remove(&key);
                    true
                }
                None => false,
            }
        };
        if last
            && let Ok(upstream) = self.upstream(&route)
            && supports_subscriptions(&upstream)
        {
            upstream.unsubscribe(&route.original).await?;
        }
        Ok(())
    }

    /// `logging/setLevel` from `session`: upstreams are asked for the most verbose level any
    /// session wants; each session's own level filters what it is sent.
    pub(crate) async fn set_log_level(&self, session: &Session, level: mcp::LoggingLevel) {
        session.set_log_level(level);
        self.sync_upstream_log_level(None).await;
    }

    async fn sync_upstream_log_level(&self, only: Option<&Upstream>) {
        let Some(wanted) = self.sessions.most_verbose_level() else { return };
        let changed = {
            let mut current = self.upstream_log_level.lock().expect("log level lock");
            let changed = *current != Some(wanted);
            *current = Some(wanted);
            changed
        };
        for upstream in &self.ordered {
            let targeted = only.is_some_and(|u| std::ptr::eq(u, upstream.as_ref()));
            if (changed || targeted)
                && upstream.info().is_some_and(|i| i.capabilities.logging.is_some())
                && let Err(error) = upstream.set_level(wanted).await
            {
                tracing::debug!(upstream = upstream.name(), %error, "logging/setLevel failed");
            }
        }
    }

    /// Waits until no request is being relayed, or `grace` has passed. Returns how many
    /// were still running.
    pub async fn drain(&self, grace: std::time::Duration) -> usize {
        let mut in_flight = self.in_flight.subscribe();
        let _ = tokio::time::timeout(grace, in_flight.wait_for(|n| *n == 0)).await;
        *in_flight.borrow()
    }

    /// Ends every upstream connection and child process.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.ordered.iter().map(|u| u.shutdown())).await;
    }

    fn upstream(&self, route: &Route) -> Result<Arc<Upstream>, GatewayError> {
        self.upstreams.get(&route.upstream).cloned().ok_or_else(|| {
            GatewayError::Upstream(UpstreamError::Disconnected {
                upstream: route.upstream.to_string(),
            })
        })
    }

    // === events ===

    /// Handles a batch of upstream events in order, with one inventory rebuild for all the
    /// connections, disconnections and catalog changes among them.
    async fn on_events(&self, events: Vec<UpstreamEvent>) {
        let mut changed = Changed::default();
        for event in &events {
            self.recorder.upstream(event);
            match event {
                UpstreamEvent::Connected { .. } | UpstreamEvent::Disconnected { .. } => {
                    changed = Changed { tools: true, prompts: true, resources: true };
                }
                UpstreamEvent::CatalogChanged { lists, .. } => {
                    changed.tools |= lists.tools;
                    changed.prompts |= lists.prompts;
                    changed.resources |= lists.resources;
                }
                _ => {}
            }
        }
        if changed.tools || changed.prompts || changed.resources {
            self.rebuild(changed).await;
        }
        for event in events {
            match event {
                UpstreamEvent::Connected { upstream } => {
                    if let Some(up) = self.upstreams.get(upstream.as_str()) {
                        self.restore_subscriptions(up).await;
                        if self.sessions.most_verbose_level().is_some() {
                            self.sync_upstream_log_level(Some(up)).await;
                        }
                    }
                }
                UpstreamEvent::ResourceUpdated { upstream, uri } => {
                    let exposed = self.exposed_uri(&upstream, &uri);
                    self.sessions.notify_updated(&exposed).await;
                }
                UpstreamEvent::Log { upstream, params } => {
                    self.sessions.notify_log(&upstream, params).await;
                }
                _ => {}
            }
        }
    }

    /// Merges the catalogs again and tells sessions about the lists that actually changed.
    async fn rebuild(&self, candidates: Changed) {
        let fresh = Arc::new(merge(&self.ordered));
        let old = std::mem::replace(
            &mut *self.inventory.write().expect("inventory lock must not be poisoned"),
            fresh.clone(),
        );
        let changed = Changed {
            tools: candidates.tools && old.tools() != fresh.tools(),
            prompts: candidates.prompts && old.prompts() != fresh.prompts(),
            resources: candidates.resources
                && (old.resources() != fresh.resources()
                    || old.resource_templates() != fresh.resource_templates()),
        };
        self.recorder.lists_changed(changed);
        self.sessions.notify_changed(changed).await;
    }

    /// The URI clients know for `uri` of `upstream` (rewritten when two upstreams share it).
    fn exposed_uri(&self, upstream: &str, uri: &str) -> String {
        match self.inventory().resource_route(uri) {
            Some(route) if &*route.upstream == upstream => uri.to_owned(),
            _ => toolgate_upstream::inventory::rewrite_uri(upstream, uri),
        }
    }

    /// After a reconnection, subscribes the upstream again to what sessions follow.
    async fn restore_subscriptions(&self, upstream: &Arc<Upstream>) {
        if !supports_subscriptions(upstream) {
            return;
        }
        let uris: Vec<String> = {
            let subscribers = self.subscribers.lock().expect("subscribers lock");
            subscribers
                .keys()
                .filter(|(name, _)| &**name == upstream.name())
                .map(|(_, uri)| uri.clone())
                .collect()
        };
        for uri in uris {
            if let Err(error) = upstream.subscribe(&uri).await {
                tracing::debug!(upstream = upstream.name(), %uri, %error, "re-subscribe failed");
            }
        }
    }
}

fn supports_subscriptions(upstream: &Upstream) -> bool {
    upstream
        .info()
        .and_then(|info| info.capabilities.resources)
        .is_some_and(|resources| resources.subscribe == Some(true))
}

/// A request the pipeline stopped, as an error (an answer of the wrong kind included).
fn stopped(stop: Stopped) -> GatewayError {
    match stop {
        Stopped::Refused(refusal) => GatewayError::Refused(refusal),
        Stopped::Answered(_) => GatewayError::Interceptor("an answer of the wrong kind".into()),
    }
}

fn merge(upstreams: &[Arc<Upstream>]) -> Inventory {
    let catalogs: Vec<_> = upstreams.iter().map(|u| u.catalog()).collect();
    Inventory::build(upstreams.iter().zip(&catalogs).map(|(u, catalog)| Contribution {
        upstream: u.name(),
        prefix: &u.config().prefix,
        filter: &u.config().tools,
        catalog,
    }))
}

fn restore_uri(contents: &mut mcp::ResourceContents, original: &str, asked: &str) {
    let (mcp::ResourceContents::TextResourceContents { uri, .. }
    | mcp::ResourceContents::BlobResourceContents { uri, .. }) = contents
    else {
        return;
    };
    if uri == original {
        *uri = asked.to_owned();
    }
}
