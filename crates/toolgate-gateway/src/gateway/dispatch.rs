//! The requests clients make, each through the pipeline: the lists, `tools/call` (with the
//! approval check at dispatch), `prompts/get`, `resources/read`, `completion/complete`,
//! `subscriptions/listen` and `interceptors/list`.

use std::sync::Arc;

use toolgate_core::mcp;
use toolgate_intercept::{
    ApprovalRequired, Approved, CallContext, InterceptionEvent, Listed, OWN_SERVER, Phase,
    Pipeline, Refusal, Target, UpstreamTimeout, call_digest,
};
use toolgate_upstream::{CallOptions, Inventory, Route, ToolAnswer, Upstream, UpstreamError};

use super::dynamic::Pooled;
use super::exchange::{
    CallTool, Complete, Exchange, GetPrompt, ListInterceptors, ListPrompts, ListResourceTemplates,
    ListResources, ListTools, Listen, ReadResource, Requested, request_phase, response_phase,
    through_pipeline,
};
use super::subscriptions::Unconfirmed;
use super::tool_json::ToolJson;
use super::{Gateway, relay};
use crate::error::GatewayError;

/// The result of a call to `ctx.target`, parsed (an upstream result that is not a
/// `CallToolResult` is the upstream's error).
fn parsed(answer: ToolAnswer, ctx: &CallContext) -> Result<mcp::CallToolResult, GatewayError> {
    answer.into_result().map_err(|error| {
        let (upstream, tool) =
            ctx.target.as_ref().map(|t| (t.server.clone(), t.original.clone())).unwrap_or_default();
        GatewayError::Upstream(UpstreamError::Unexpected {
            upstream,
            operation: "tools/call",
            target: tool,
            detail: format!("a result that is not a CallToolResult ({error})"),
        })
    })
}

/// Where a tool call's name is looked up, and where it is sent.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// The inventory (and the pipeline's own tools and aliases), on servers the caller
    /// reaches.
    Shared,
    /// The tools of one server a request named by URL, and those only.
    Dynamic(&'a Pooled),
}

/// How a `tools/call` result is wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Passing {
    /// Parsed, always.
    Parsed,
    /// As the upstream wrote it, when nothing reads it on the way.
    AsWritten,
}

impl Gateway {
    /// `tools/list` as `ctx`'s caller sees it: the inventory, through the pipeline.
    pub async fn list_tools(&self, ctx: &mut CallContext) -> Result<Vec<mcp::Tool>, GatewayError> {
        self.freshen().await;
        let inventory = self.inventory();
        let tenants = self.tenants();
        if self.pipeline.is_empty() && tenants.reaches_all(&ctx.principal) {
            return Ok(inventory.tools().to_vec());
        }
        let mut listed = listed(inventory.tools(), |tool| inventory.tool_route(&tool.name));
        listed.retain(|l| {
            self.pipeline.own_tool(&l.item.name).is_none()
                && tenants.reaches(&ctx.principal, &l.server)
        });
        listed.extend(self.pipeline.own_tools().iter().map(|own| Listed {
            server: OWN_SERVER.to_owned(),
            original: own.original.clone(),
            item: own.tool.as_ref().clone(),
        }));
        let shown = self.list::<ListTools>(listed, ctx).await?;
        Ok(shown.into_iter().map(|l| l.item).collect())
    }

    /// `tools/list` as `ctx`'s caller sees it, written as a JSON array: each tool the
    /// pipeline left as the inventory has it is written once per inventory, in `written`
    /// (the dispatcher's).
    pub(crate) async fn list_tools_json(
        &self,
        written: &ToolJson,
        ctx: &mut CallContext,
    ) -> Result<bytes::Bytes, GatewayError> {
        self.freshen().await;
        let inventory = self.inventory();
        if self.pipeline.is_empty() && self.tenants().reaches_all(&ctx.principal) {
            return Ok(written.whole(&inventory));
        }
        let tools = self.list_tools(ctx).await?;
        Ok(written.array(&inventory, &tools))
    }

    /// `prompts/list` as `ctx`'s caller sees it: the inventory, through the pipeline.
    pub async fn list_prompts(
        &self,
        ctx: &mut CallContext,
    ) -> Result<Vec<mcp::Prompt>, GatewayError> {
        self.freshen().await;
        let inventory = self.inventory();
        if self.pipeline.is_empty() && self.tenants().reaches_all(&ctx.principal) {
            return Ok(inventory.prompts().to_vec());
        }
        let listed = listed(inventory.prompts(), |prompt| inventory.prompt_route(&prompt.name));
        let listed = self.reachable(listed, ctx);
        let shown = self.list::<ListPrompts>(listed, ctx).await?;
        Ok(shown.into_iter().map(|l| l.item).collect())
    }

    /// `resources/list` as `ctx`'s caller sees it, through the pipeline.
    pub async fn list_resources(
        &self,
        ctx: &mut CallContext,
    ) -> Result<Vec<mcp::Resource>, GatewayError> {
        self.freshen().await;
        let inventory = self.inventory();
        if self.pipeline.is_empty() && self.tenants().reaches_all(&ctx.principal) {
            return Ok(inventory.resources().to_vec());
        }
        let listed = listed(inventory.resources(), |resource| {
            inventory.listed_resource_route(&resource.uri)
        });
        let listed = self.reachable(listed, ctx);
        let shown = self.list::<ListResources>(listed, ctx).await?;
        Ok(shown.into_iter().map(|l| l.item).collect())
    }

    /// `resources/templates/list` as `ctx`'s caller sees it, through the pipeline.
    pub async fn list_resource_templates(
        &self,
        ctx: &mut CallContext,
    ) -> Result<Vec<mcp::ResourceTemplate>, GatewayError> {
        self.freshen().await;
        let inventory = self.inventory();
        if self.pipeline.is_empty() && self.tenants().reaches_all(&ctx.principal) {
            return Ok(inventory.resource_templates().to_vec());
        }
        let listed = listed(inventory.resource_templates(), |template| {
            inventory.template_route(&template.uri_template)
        });
        let listed = self.reachable(listed, ctx);
        let shown = self.list::<ListResourceTemplates>(listed, ctx).await?;
        Ok(shown.into_iter().map(|l| l.item).collect())
    }

    /// The items of a list on servers `ctx`'s caller reaches (see `Tenants`).
    fn reachable<T>(&self, mut listed: Vec<Listed<T>>, ctx: &CallContext) -> Vec<Listed<T>> {
        let tenants = self.tenants();
        if !tenants.reaches_all(&ctx.principal) {
            listed.retain(|l| tenants.reaches(&ctx.principal, &l.server));
        }
        listed
    }

    /// Whether `ctx`'s caller reaches `server` (see `Tenants`).
    pub(crate) fn reaches(&self, ctx: &CallContext, server: &str) -> bool {
        self.tenants().reaches(&ctx.principal, server)
    }

    /// A list, through the pipeline; what was decided is recorded.
    pub(super) async fn list<E: Exchange<Params = ()>>(
        &self,
        list: E::Output,
        ctx: &mut CallContext,
    ) -> Result<E::Output, GatewayError> {
        let shown = through_pipeline::<E>(&self.pipeline, (), ctx, async |(), _| Ok(list)).await;
        self.recorder.request_ended(ctx, E::EVENT, &shown);
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
        let answer = self.call(params, options, ctx, Passing::Parsed, Source::Shared).await?;
        parsed(answer, ctx)
    }

    /// [`call_tool`](Self::call_tool) of a tool of `server`, a server a request named by URL.
    pub(super) async fn call_dynamic(
        &self,
        params: mcp::CallToolRequestParams,
        options: &CallOptions,
        ctx: &mut CallContext,
        server: &Pooled,
    ) -> Result<mcp::CallToolResult, GatewayError> {
        let source = Source::Dynamic(server);
        let answer = self.call(params, options, ctx, Passing::Parsed, source).await?;
        parsed(answer, ctx)
    }

    /// [`call_tool`](Self::call_tool) for a front that writes the result without reading it:
    /// when no interceptor of the response phase applies to the call, the result comes as the
    /// JSON the upstream wrote where its transport keeps it ([`ToolAnswer::Raw`]), so it is
    /// neither parsed nor written again.
    pub async fn call_tool_answer(
        &self,
        params: mcp::CallToolRequestParams,
        options: &CallOptions,
        ctx: &mut CallContext,
    ) -> Result<ToolAnswer, GatewayError> {
        self.call(params, options, ctx, Passing::AsWritten, Source::Shared).await
    }

    async fn call(
        &self,
        params: mcp::CallToolRequestParams,
        options: &CallOptions,
        ctx: &mut CallContext,
        passing: Passing,
        source: Source<'_>,
    ) -> Result<ToolAnswer, GatewayError> {
        let _in_flight = self.in_flight();
        let exposed = params.name.to_string();
        let outcome = self.dispatch_tool(params, options, ctx, passing, source).await;
        self.recorder.call_ended(ctx, &exposed, &outcome);
        outcome
    }

    async fn dispatch_tool(
        &self,
        params: mcp::CallToolRequestParams,
        options: &CallOptions,
        ctx: &mut CallContext,
        passing: Passing,
        source: Source<'_>,
    ) -> Result<ToolAnswer, GatewayError> {
        let mut inventory = self.inventory();
        // A tool's own name first; an alias only for names no tool has.
        let find = |inventory: &Inventory| {
            tool_target(&self.pipeline, inventory, &params.name)
                .or_else(|| {
                    let name = self.pipeline.alias_of(&params.name)?;
                    tool_target(&self.pipeline, inventory, &name)
                })
                .filter(|target| self.reaches(ctx, &target.server))
        };
        let target = match source {
            Source::Shared => match find(&inventory) {
                Some(target) => target,
                // A server that changed its tools without saying so may offer it now.
                None if self.refresh_for_unknown(&params.name).await => {
                    inventory = self.inventory();
                    find(&inventory).ok_or_else(|| self.unknown_tool(ctx, &params.name))?
                }
                None => return Err(self.unknown_tool(ctx, &params.name)),
            },
            Source::Dynamic(server) => server
                .target(&params.name)
                .ok_or_else(|| GatewayError::UnknownTool(params.name.to_string()))?,
        };
        ctx.target = Some(target);
        if let Some(write_ahead) = self.recorder.call_started(ctx, &params) {
            write_ahead.confirmed().await?;
        }
        if !self.pipeline.is_empty() {
            let pipeline = self.pipeline.clone();
            ctx.retarget = Some(match source {
                Source::Shared => {
                    Arc::new(move |name: &str| tool_target(&pipeline, &inventory, name))
                }
                Source::Dynamic(server) => server.retarget(),
            });
        }
        let options = self.relayed(options, ctx);
        let params = match request_phase::<CallTool>(&self.pipeline, params, ctx).await? {
            Requested::Send(params) => params,
            Requested::Answered(result) => return Ok(ToolAnswer::Parsed(result)),
        };
        // A mutator may have renamed the call: to a tool of a server the caller reaches only
        // (of the dynamic server's, for a call of one).
        if let Some(target) = &ctx.target
            && match source {
                Source::Shared => !self.reaches(ctx, &target.server),
                Source::Dynamic(server) => target.server != server.label(),
            }
        {
            return Err(GatewayError::UnknownTool(params.name.to_string()));
        }
        self.check_approval(ctx, &params, source)?;
        // Asked after the request phase, which may have re-targeted the call.
        let read = self.pipeline.runs_on(InterceptionEvent::ToolsCall, Phase::Response, ctx);
        let as_written = passing == Passing::AsWritten && !read;
        let mut upstream_time = None;
        let answer =
            self.send_tool(params, &options, ctx, as_written, source, &mut upstream_time).await;
        if let Some(elapsed) = upstream_time {
            ctx.insert(crate::record::UpstreamElapsed(elapsed));
        }
        let answer = answer?;
        if !read {
            return Ok(answer);
        }
        let result = parsed(answer, ctx)?;
        response_phase::<CallTool>(&self.pipeline, result, ctx).await.map(ToolAnswer::Parsed)
    }

    /// The upstream that serves `server` for the caller of `ctx`: their own connection when
    /// the server signs in each caller (see `per_caller`), else the gateway's.
    async fn upstream_for(
        &self,
        server: &str,
        ctx: &CallContext,
    ) -> Result<Arc<Upstream>, GatewayError> {
        let shared = self.upstream(server)?;
        match &self.per_caller {
            Some(per_caller)
                if !ctx.principal.is_here()
                    && super::per_caller::signs_in_each_caller(shared.config()) =>
            {
                per_caller.upstream(shared.config(), &ctx.principal).await
            }
            _ => Ok(shared),
        }
    }

    /// `sent`, unless the caller's own sign-in to `server` ran out during it: then their
    /// connection is closed and they are given a link to sign in again.
    async fn signed_out<T>(
        &self,
        server: &str,
        ctx: &CallContext,
        sent: Result<T, GatewayError>,
    ) -> Result<T, GatewayError> {
        match (&self.per_caller, sent) {
            (Some(per_caller), Err(GatewayError::Upstream(UpstreamError::NeedsLogin { .. })))
                if !ctx.principal.is_here() =>
            {
                let shared = self.upstream(server)?;
                per_caller.forget(server, &ctx.principal.to_string());
                Err(per_caller.sign_in_link(shared.config(), &ctx.principal).await)
            }
            (_, sent) => sent,
        }
    }

    /// A tool no server offers, unless its name is under the prefix of a server the caller
    /// reaches that wants a login: its tools are not known until someone signs in, and the
    /// caller is told to (`toolgate login NAME`) rather than that the tool does not exist.
    fn unknown_tool(&self, ctx: &CallContext, name: &str) -> GatewayError {
        let waiting = self.upstreams().into_iter().find(|upstream| {
            let prefix = &upstream.config().prefix;
            upstream.needs_login()
                && !prefix.is_empty()
                && name.starts_with(&format!("{prefix}{}", toolgate_core::name::SEPARATOR))
                && self.reaches(ctx, upstream.name())
        });
        match waiting {
            Some(upstream) => {
                GatewayError::Upstream(toolgate_upstream::UpstreamError::NeedsLogin {
                    upstream: upstream.name().to_owned(),
                })
            }
            None => GatewayError::UnknownTool(name.to_owned()),
        }
    }

    /// Sends the call to the upstream of `ctx.target`, under its original name; `as_written`
    /// asks for the result as the upstream wrote it. `upstream_time` is set to how long the
    /// upstream took (the send alone, not connecting), when it was sent.
    async fn send_tool(
        &self,
        mut params: mcp::CallToolRequestParams,
        options: &CallOptions,
        ctx: &CallContext,
        as_written: bool,
        source: Source<'_>,
        upstream_time: &mut Option<std::time::Duration>,
    ) -> Result<ToolAnswer, GatewayError> {
        let target = ctx
            .target
            .as_ref()
            .ok_or_else(|| GatewayError::UnknownTool(params.name.to_string()))?;
        if target.server == OWN_SERVER
            && let Some(answer) =
                self.pipeline.call_own_tool(&target.exposed, params.arguments.clone(), ctx).await
        {
            return answer.map(ToolAnswer::Parsed).map_err(|e| GatewayError::OwnTool {
                tool: target.exposed.clone(),
                reason: e.to_string(),
            });
        }
        let upstream = match source {
            Source::Shared => self.upstream_for(&target.server, ctx).await?,
            Source::Dynamic(server) => server.upstream().clone(),
        };
        params.name = target.original.clone().into();
        let _asker = self.tell_caller(&mut params, &upstream, ctx);
        let limited;
        let options = match ctx.get::<UpstreamTimeout>() {
            Some(UpstreamTimeout(timeout)) => {
                limited = CallOptions { timeout: Some(*timeout), ..options.clone() };
                &limited
            }
            None => options,
        };
        let sending = tokio::time::Instant::now();
        let sent = if as_written {
            upstream.call_tool_answer(params, options).await.map_err(GatewayError::from)
        } else {
            upstream.call_tool(params, options).await.map(ToolAnswer::Parsed).map_err(Into::into)
        };
        *upstream_time = Some(sending.elapsed());
        if matches!(source, Source::Shared) {
            super::freshness::after_answer(&sent, upstream);
        }
        match source {
            Source::Shared => self.signed_out(&target.server, ctx, sent).await,
            Source::Dynamic(_) => sent,
        }
    }

    /// A call that needs approval goes out only with one, and only as it was approved: the
    /// digest is computed again from the tool's definition as the upstream lists it now and
    /// the arguments as they will be sent.
    fn check_approval(
        &self,
        ctx: &CallContext,
        params: &mcp::CallToolRequestParams,
        source: Source<'_>,
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
        let definition = match (self.pipeline.own_tool(&target.exposed), source) {
            (Some(own), Source::Shared) if target.server == OWN_SERVER => {
                let mut tool = own.tool.as_ref().clone();
                tool.name = own.original.clone().into();
                Some(Arc::new(tool))
            }
            (_, Source::Shared) => self.upstream(&target.server)?.tool(&target.original),
            (_, Source::Dynamic(server)) => server.upstream().tool(&target.original),
        };
        let digest = call_digest(
            &target.server,
            &target.original,
            definition.as_deref(),
            params.arguments.as_ref(),
        );
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

    /// `prompts/get` by exposed name, through the pipeline.
    pub async fn get_prompt(
        &self,
        params: mcp::GetPromptRequestParams,
        options: &CallOptions,
        ctx: &mut CallContext,
    ) -> Result<mcp::GetPromptResult, GatewayError> {
        let _in_flight = self.in_flight();
        let route = prompt_route(&self.inventory(), &params.name)
            .ok()
            .filter(|route| self.reaches(ctx, &route.upstream))
            .ok_or_else(|| GatewayError::UnknownPrompt(params.name.to_string()))?;
        let exposed = params.name.to_string();
        self.routed::<GetPrompt>(
            &route,
            &exposed,
            params,
            options,
            ctx,
            async |params, upstream, options| {
                let mut params = params;
                params.name = route.original.clone();
                Ok(upstream.get_prompt(params, options).await?)
            },
        )
        .await
    }

    /// `resources/read` by exposed URI, through the pipeline. The contents keep the URI the
    /// caller asked for.
    pub async fn read_resource(
        &self,
        params: mcp::ReadResourceRequestParams,
        options: &CallOptions,
        ctx: &mut CallContext,
    ) -> Result<mcp::ReadResourceResult, GatewayError> {
        let _in_flight = self.in_flight();
        let asked = params.uri.clone();
        let route = self
            .inventory()
            .resource_route(&asked)
            .filter(|route| self.reaches(ctx, &route.upstream))
            .ok_or_else(|| GatewayError::UnknownResource(asked.clone()))?;
        self.routed::<ReadResource>(
            &route,
            &asked,
            params,
            options,
            ctx,
            async |params, upstream, options| {
                let mut params = params;
                params.uri = route.original.clone();
                let mut result = upstream.read_resource(params, options).await?;
                if asked != route.original {
                    for contents in &mut result.contents {
                        restore_uri(contents, &route.original, &asked);
                    }
                }
                Ok(result)
            },
        )
        .await
    }

    /// `completion/complete`: routed by the prompt name or resource URI it refers to, through
    /// the pipeline.
    pub async fn complete(
        &self,
        params: mcp::CompleteRequestParams,
        options: &CallOptions,
        ctx: &mut CallContext,
    ) -> Result<mcp::CompleteResult, GatewayError> {
        let _in_flight = self.in_flight();
        let inventory = self.inventory();
        let route = match &params.r#ref {
            mcp::Reference::Prompt(prompt) => prompt_route(&inventory, &prompt.name)
                .ok()
                .filter(|route| self.reaches(ctx, &route.upstream))
                .ok_or_else(|| GatewayError::UnknownPrompt(prompt.name.clone()))?,
            mcp::Reference::Resource(resource) => inventory
                .resource_route(&resource.uri)
                .filter(|route| self.reaches(ctx, &route.upstream))
                .ok_or_else(|| GatewayError::UnknownResource(resource.uri.clone()))?,
            // Nothing toolgate can route: nobody offers completions for it.
            _ => return Ok(mcp::CompleteResult::default()),
        };
        let exposed = match &params.r#ref {
            mcp::Reference::Prompt(prompt) => prompt.name.clone(),
            mcp::Reference::Resource(resource) => resource.uri.clone(),
            _ => String::new(),
        };
        self.routed::<Complete>(
            &route,
            &exposed,
            params,
            options,
            ctx,
            async |params, upstream, options| {
                let mut params = params;
                match &mut params.r#ref {
                    mcp::Reference::Prompt(prompt) => prompt.name = route.original.clone(),
                    mcp::Reference::Resource(resource) => resource.uri = route.original.clone(),
                    _ => {}
                }
                Ok(upstream.complete(params, options).await?)
            },
        )
        .await
    }

    /// The tail every request routed to one upstream by name or URI shares: its target is the
    /// route's, it passes the pipeline, `send` takes it to the route's upstream (with the
    /// caller's relays), and its end is recorded.
    async fn routed<E: Exchange>(
        &self,
        route: &Route,
        exposed: &str,
        params: E::Params,
        options: &CallOptions,
        ctx: &mut CallContext,
        send: impl AsyncFnOnce(E::Params, &Upstream, &CallOptions) -> Result<E::Output, GatewayError>,
    ) -> Result<E::Output, GatewayError> {
        ctx.target = Some(target_of(route, exposed));
        let options = self.relayed(options, ctx);
        let outcome = through_pipeline::<E>(&self.pipeline, params, ctx, async |params, ctx| {
            let upstream = self.upstream_for(&route.upstream, ctx).await?;
            let sent = send(params, &upstream, &options).await;
            self.signed_out(&route.upstream, ctx, sent).await
        })
        .await;
        self.recorder.request_ended(ctx, E::EVENT, &outcome);
        outcome
    }

    /// `subscriptions/listen` (2026-07-28): the stream is opened only if the pipeline lets it,
    /// and each resource it names that an upstream offers is subscribed to as by
    /// `resources/subscribe` (those no upstream offers are left out). Returns the URIs
    /// subscribed, to acknowledge and to release when the stream closes.
    pub(crate) async fn listen(
        &self,
        filter: mcp::SubscriptionFilter,
        ctx: &mut CallContext,
    ) -> Result<Vec<String>, GatewayError> {
        let mut followed = Vec::new();
        let mut unconfirmed = Unconfirmed::default();
        let outcome =
            through_pipeline::<Listen>(&self.pipeline, filter, ctx, async |filter, ctx| {
                let mut uris = filter.resource_subscriptions.unwrap_or_default();
                uris.sort();
                uris.dedup();
                let bytes = uris.iter().map(String::len).sum();
                self.subscription_bounds().check(uris.len(), bytes)?;
                let inventory = self.inventory();
                for uri in uris {
                    // Only what an upstream offers is followed (and acknowledged): a URI no
                    // upstream lists would only make one hold a subscription for nothing.
                    let offered = inventory.offered_resource_route(&uri);
                    if offered.is_none_or(|route| !self.reaches(ctx, &route.upstream)) {
                        continue;
                    }
                    let mut one = ctx.for_another_request();
                    let params = mcp::SubscribeRequestParams::new(uri.clone());
                    self.subscribe_unconfirmed(None, params, &mut one, &mut unconfirmed).await?;
                    followed.push(uri);
                }
                Ok(())
            })
            .await;
        self.recorder.request_ended(ctx, Listen::EVENT, &outcome);
        if let Err(error) = outcome {
            self.release_listened(&followed).await;
            return Err(error);
        }
        // Once for all the stream names, not once per resource.
        unconfirmed.followed().await;
        Ok(followed)
    }

    /// `interceptors/list`: the configured chain, as SEP-2624 descriptors, through the
    /// pipeline (it tells a client how it is being checked, which a policy may keep to
    /// itself).
    pub async fn interceptors_list(
        &self,
        ctx: &mut CallContext,
    ) -> Result<serde_json::Value, GatewayError> {
        // A tenant's own entries are for its callers' eyes only.
        let tenant = ctx.principal.tenant.clone();
        let list = interceptors_list_of(&self.pipeline, |d| d.covers_tenant(tenant.as_deref()));
        let outcome =
            through_pipeline::<ListInterceptors>(&self.pipeline, (), ctx, async |(), _| Ok(list))
                .await;
        self.recorder.request_ended(ctx, ListInterceptors::EVENT, &outcome);
        outcome
    }

    /// `options` with its caller wrapped so that what the upstream asks it passes the
    /// pipeline on behalf of `ctx`'s caller (see `relay`).
    fn relayed(&self, options: &CallOptions, ctx: &CallContext) -> CallOptions {
        relay::wrap(options, &self.pipeline, &self.recorder, ctx)
    }
}

/// `items` with the upstream each comes from (`route` finds it by exposed name).
pub(super) fn listed<'a, T: Clone>(
    items: &'a [T],
    route: impl Fn(&'a T) -> Option<&'a Route>,
) -> Vec<Listed<T>> {
    items
        .iter()
        .filter_map(|item| {
            let route = route(item)?;
            Some(Listed {
                server: route.upstream.to_string(),
                original: route.original.clone(),
                item: item.clone(),
            })
        })
        .collect()
}

/// What the exposed tool `name` stands for: a tool an interceptor serves, or one of
/// `inventory`'s, with its definition as listed.
fn tool_target(pipeline: &Pipeline, inventory: &Inventory, name: &str) -> Option<Target> {
    if let Some(own) = pipeline.own_tool(name) {
        return Some(Target {
            server: OWN_SERVER.to_owned(),
            original: own.original.clone(),
            exposed: name.to_owned(),
            tool: Some(own.tool.clone()),
        });
    }
    let route =
        inventory.tool_route(name).cloned().or_else(|| inventory.unlisted_tool_route(name))?;
    Some(Target {
        server: route.upstream.to_string(),
        tool: inventory.tool_definition(name).cloned(),
        original: route.original,
        exposed: name.to_owned(),
    })
}

fn prompt_route(inventory: &Inventory, name: &str) -> Result<Route, GatewayError> {
    inventory
        .prompt_route(name)
        .cloned()
        .or_else(|| inventory.unlisted_prompt_route(name))
        .ok_or_else(|| GatewayError::UnknownPrompt(name.to_owned()))
}

fn target_of(route: &Route, exposed: &str) -> Target {
    Target {
        server: route.upstream.to_string(),
        original: route.original.clone(),
        exposed: exposed.to_owned(),
        tool: None,
    }
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

impl Gateway {
    /// Who is calling, for a server inside toolgate (a script's tools, which call other tools
    /// on that caller's behalf): put in `_meta` under `toolgate_scripts::calls::CALLER_META`,
    /// which is taken out of every call first, so that no client can pose as another through
    /// it. The person at the caller's client is lent for the call (the guard returned), so an
    /// approval of a call the script tool makes can ask them.
    fn tell_caller(
        &self,
        params: &mut mcp::CallToolRequestParams,
        upstream: &Upstream,
        ctx: &CallContext,
    ) -> Option<crate::askers::Lent<'_>> {
        use toolgate_scripts::calls::{CALLER_META, Origin, PrincipalName};
        if let Some(meta) = &mut params.meta {
            meta.0.0.remove(CALLER_META);
        }
        if !upstream.is_in_process() {
            return None;
        }
        let lent = ctx.elicitor.clone().map(|elicitor| self.askers().lend(elicitor));
        let origin = Origin {
            principal: Some(PrincipalName {
                kind: ctx.principal.kind.clone(),
                id: ctx.principal.id.clone(),
                groups: ctx.principal.groups.clone(),
                tenant: ctx.principal.tenant.clone(),
            }),
            session: ctx.session.clone(),
            depth: ctx.get::<crate::script_tools::CallDepth>().map_or(0, |depth| depth.0),
            asker: lent.as_ref().map(|lent| lent.handle.clone()),
        };
        params.meta.get_or_insert_default().0.0.insert(CALLER_META.to_owned(), origin.to_meta());
        lent
    }
}

/// The custom method that returns the pipeline as SEP-2624 descriptors.
pub const INTERCEPTORS_LIST: &str = "interceptors/list";

/// `interceptors/list`: the chain in config order, and the order each phase runs in.
pub fn interceptors_list(pipeline: &toolgate_intercept::Pipeline) -> serde_json::Value {
    interceptors_list_of(pipeline, |_| true)
}

/// [`interceptors_list`] of the entries `shown` keeps.
fn interceptors_list_of(
    pipeline: &toolgate_intercept::Pipeline,
    shown: impl Fn(&toolgate_intercept::Descriptor) -> bool,
) -> serde_json::Value {
    use toolgate_intercept::Phase;
    let names = |phase: Phase| -> Vec<String> {
        let order = pipeline.run_order(phase).into_iter().filter(|d| shown(d));
        order.map(|d| d.name.clone()).collect()
    };
    let descriptors = pipeline.descriptors();
    serde_json::json!({
        "interceptors": descriptors.iter().filter(|d| shown(d)).map(|d| d.to_json()).collect::<Vec<_>>(),
        "runOrder": { "request": names(Phase::Request), "response": names(Phase::Response) },
    })
}
