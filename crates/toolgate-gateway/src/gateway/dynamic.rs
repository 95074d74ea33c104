//! Servers a request names by URL (the Responses endpoint's `server_url`): connected on demand
//! as the caller, kept in a pool (`pool`), and served through the pipeline like a configured
//! server whose prefix is the request's label, yet never put in the shared inventory: only the
//! holder of a [`DynamicHandle`] lists and calls their tools.
//!
//! A connection is keyed by the URL, the label, the SHA-256 of the credentials (the headers and
//! the bearer token) and its owner: the caller's tenant, else the caller (as `CallerKey` tells
//! callers apart). So two tenants never share a connection or an MCP session, nor does one
//! tenant with two sets of credentials. The credentials go to that server only, as
//! `Authorization: Bearer` and the headers given: the upstream's config holds them as
//! `Secret`s, which never print, errors name only header names, and events name the server by
//! its label and its URL without its query.
//!
//! A call's target names the label as its server, so policy rules, approvals' digests and
//! `integrity`'s pins (all keyed by server and tool) treat a dynamic server as a configured
//! server of that name. A label that names a configured server, or toolgate's own, is refused,
//! so that neither is taken for the other.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use toolgate_config::{
    HttpConfig, HttpTransport, OAuthConfig, Secret, ServerConfig, TransportConfig,
};
use toolgate_core::mcp;
use toolgate_intercept::{CallContext, CallerKey, OWN_SERVER, Retarget, Target};
use toolgate_upstream::{CallOptions, Catalog, Contribution, Inventory, Upstream, UpstreamError};

use super::Gateway;
use super::exchange::ListTools;
use crate::error::GatewayError;
use crate::record::{Recorder, shown_url};

mod pool;

use pool::{Activity, Closing, Connection};
pub use pool::{PoolSettings, PoolStats};

/// Headers a request may not set: the transport's own (framing, the MCP session, content
/// negotiation) and the proxy's.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "content-type",
    "content-encoding",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "expect",
    "accept",
    "accept-encoding",
    "proxy-authorization",
    "proxy-authenticate",
    "proxy-connection",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// A server a request names by URL.
#[derive(Clone)]
pub struct DynamicServer {
    /// Where it is: an `http` or `https` URL, without user or password.
    pub url: url::Url,
    /// What the request calls it: the prefix of its tools' names (`<label>__<tool>`) and the
    /// server that policy rules, approvals and pins know it by.
    pub label: String,
    /// Headers sent with each request to it; their values are credentials, never shown.
    pub headers: Vec<(String, String)>,
    /// A bearer token, sent as `Authorization: Bearer <token>`.
    pub authorization: Option<String>,
}

impl std::fmt::Debug for DynamicServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("DynamicServer")
            .field("url", &shown_url(&self.url))
            .field("label", &self.label)
            .field("headers", &names)
            .field("authorization", &self.authorization.as_ref().map(|_| "***"))
            .finish()
    }
}

/// Whose a pooled connection is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Owner {
    /// Every caller of a tenant.
    Tenant(String),
    /// One caller that is in no tenant.
    Caller(CallerKey),
}

impl Owner {
    fn of(ctx: &CallContext) -> Owner {
        match &ctx.principal.tenant {
            Some(tenant) => Owner::Tenant(tenant.clone()),
            None => Owner::Caller(ctx.caller_key()),
        }
    }
}

/// What a pooled connection is found by.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    url: String,
    label: String,
    /// The SHA-256 of the headers sent (the bearer token among them).
    credentials: String,
    owner: Owner,
}

/// The pool of a gateway's dynamic servers.
pub(crate) type DynamicPool = pool::Pool<Key, Arc<Pooled>>;

/// One pooled connection to a dynamic server.
pub(crate) struct Pooled {
    label: String,
    upstream: Arc<Upstream>,
    owner: Owner,
    recorder: Arc<Recorder>,
    /// Its tools under exposed names, with the catalog they were named from.
    named: Mutex<Option<(Arc<Catalog>, Arc<Inventory>)>>,
    /// Set when the pool closed it: its tools are gone with it.
    closed: std::sync::atomic::AtomicBool,
}

impl Pooled {
    /// Its label: its tools' prefix, and their target's server.
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// Its connection.
    pub(crate) fn upstream(&self) -> &Arc<Upstream> {
        &self.upstream
    }

    /// Its tools as `<label>__<tool>`, named again when its catalog changed.
    fn inventory(&self) -> Arc<Inventory> {
        let catalog = self.upstream.catalog();
        let mut named = self.named.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((from, inventory)) = &*named
            && Arc::ptr_eq(from, &catalog)
        {
            return inventory.clone();
        }
        let filter = toolgate_config::ToolFilter::default();
        let inventory = Arc::new(Inventory::build([Contribution {
            upstream: &self.label,
            prefix: &self.label,
            filter: &filter,
            catalog: &catalog,
        }]));
        *named = Some((catalog, inventory.clone()));
        inventory
    }

    /// What the exposed name `name` stands for among its tools.
    pub(crate) fn target(&self, name: &str) -> Option<Target> {
        target_in(&self.inventory(), name)
    }

    /// Finds the target of a name a mutator renamed a call to, among its tools only.
    pub(crate) fn retarget(&self) -> Retarget {
        let inventory = self.inventory();
        Arc::new(move |name: &str| target_in(&inventory, name))
    }
}

fn target_in(inventory: &Inventory, name: &str) -> Option<Target> {
    let route = inventory.tool_route(name)?;
    Some(Target {
        server: route.upstream.to_string(),
        original: route.original.clone(),
        exposed: name.to_owned(),
        tool: inventory.tool_definition(name).cloned(),
    })
}

impl Connection for Arc<Pooled> {
    fn is_alive(&self) -> bool {
        self.upstream.is_connected()
    }

    async fn close(self, why: Closing) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        *self.named.lock().unwrap_or_else(PoisonError::into_inner) = None;
        self.upstream.shutdown().await;
        self.recorder.dynamic_closed(&self.label, why.as_str());
    }
}

/// A pooled dynamic server, for one caller (or tenant): its tools through the pipeline.
#[derive(Clone)]
pub struct DynamicHandle {
    gateway: Arc<Gateway>,
    server: Arc<Pooled>,
    activity: Arc<Activity>,
}

impl std::fmt::Debug for DynamicHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicHandle").field("label", &self.server.label).finish_non_exhaustive()
    }
}

impl DynamicHandle {
    /// The server's label.
    pub fn label(&self) -> &str {
        &self.server.label
    }

    /// Whether its connection is open: false once the pool closed it (a handle kept past
    /// that fails its lists and calls; ask [`Gateway::dynamic`] again).
    pub fn is_connected(&self) -> bool {
        self.server.upstream.is_connected()
    }

    /// Its tools as the pipeline lets `ctx`'s caller see them, named `<label>__<tool>`, as
    /// [`Gateway::list_tools`] lists the configured servers'.
    pub async fn list_tools(&self, ctx: &mut CallContext) -> Result<Vec<mcp::Tool>, GatewayError> {
        self.owned_by(ctx)?;
        let _busy = self.activity.busy();
        let inventory = self.server.inventory();
        if self.gateway.pipeline.is_empty() {
            return Ok(inventory.tools().to_vec());
        }
        let listed =
            super::dispatch::listed(inventory.tools(), |tool| inventory.tool_route(&tool.name));
        let shown = self.gateway.list::<ListTools>(listed, ctx).await?;
        Ok(shown.into_iter().map(|l| l.item).collect())
    }

    /// Calls one of its tools by its exposed name through the whole pipeline (policy,
    /// approval, integrity, transforms, events), as [`Gateway::call_tool`] calls a configured
    /// server's.
    pub async fn call_tool(
        &self,
        params: mcp::CallToolRequestParams,
        options: &CallOptions,
        ctx: &mut CallContext,
    ) -> Result<mcp::CallToolResult, GatewayError> {
        self.owned_by(ctx)?;
        let _busy = self.activity.busy();
        self.gateway.call_dynamic(params, options, ctx, &self.server).await
    }

    /// A handle serves the caller (or tenant) it was made for only, and only until the pool
    /// closes its connection.
    fn owned_by(&self, ctx: &CallContext) -> Result<(), GatewayError> {
        let label = &self.server.label;
        if self.server.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(GatewayError::Upstream(UpstreamError::Disconnected {
                upstream: label.clone(),
            }));
        }
        if Owner::of(ctx) == self.server.owner {
            return Ok(());
        }
        Err(GatewayError::DynamicServer {
            label: label.clone(),
            reason: "this connection belongs to another caller".into(),
        })
    }
}

impl Gateway {
    /// The pooled connection to `server` of `ctx`'s caller (their tenant's, when they are in
    /// one), made on a miss: streamable HTTP, else legacy SSE, as for a configured server.
    /// Refused when its URL is not `http` or `https` or carries a user or password, when its
    /// label is not a valid prefix or names a configured server, and when a header is one the
    /// transport sets itself.
    pub async fn dynamic(
        &self,
        server: &DynamicServer,
        ctx: &CallContext,
    ) -> Result<DynamicHandle, GatewayError> {
        let headers = self.check_dynamic(server)?;
        let gateway = self.me.upgrade().ok_or_else(|| {
            GatewayError::Upstream(UpstreamError::Disconnected { upstream: server.label.clone() })
        })?;
        let owner = Owner::of(ctx);
        let key = Key {
            url: server.url.to_string(),
            label: server.label.clone(),
            credentials: credentials_digest(&headers),
            owner: owner.clone(),
        };
        let (pooled, activity) = self
            .dynamic
            .get(key, async || self.connect_dynamic(server, headers, owner, ctx).await)
            .await?;
        Ok(DynamicHandle { gateway, server: pooled, activity })
    }

    /// Connects `servers` for `ctx`'s caller ahead of their first request (`warmup`): the pool
    /// never lends one caller's connection to another, so a warm connection is one caller's
    /// (or tenant's). Returns each one's outcome, in order.
    pub async fn warm(
        &self,
        servers: &[DynamicServer],
        ctx: &CallContext,
    ) -> Vec<Result<(), GatewayError>> {
        let each = servers.iter().map(|server| async { self.dynamic(server, ctx).await.map(drop) });
        futures::future::join_all(each).await
    }

    /// The pool's size, hits, misses and evictions.
    pub fn dynamic_stats(&self) -> PoolStats {
        self.dynamic.stats()
    }

    /// Sets how many dynamic servers stay connected, and for how long unused (`[pool]`);
    /// connections over a lower bound are closed at once.
    pub fn set_pool_settings(&self, settings: PoolSettings) {
        self.dynamic.set_settings(settings);
    }

    /// How many dynamic servers stay connected, and for how long unused.
    pub fn pool_settings(&self) -> PoolSettings {
        self.dynamic.settings()
    }

    /// The headers `server` is sent, if it may be reached.
    fn check_dynamic(
        &self,
        server: &DynamicServer,
    ) -> Result<BTreeMap<String, Secret>, GatewayError> {
        let label = &server.label;
        let refused = |reason: String| GatewayError::DynamicServer { label: label.clone(), reason };
        let url = &server.url;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(refused(format!("{} is not an http or https URL", shown_url(url))));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(refused(
                "its URL carries a user or password; send credentials as authorization or \
                 headers"
                    .into(),
            ));
        }
        if !toolgate_core::name::is_valid_exposed(label) {
            return Err(refused(
                "a label is 1 to 64 letters, digits, `_` and `-` (it prefixes its tools' names)"
                    .into(),
            ));
        }
        if label == OWN_SERVER || self.upstream_set().by_name.contains_key(label.as_str()) {
            return Err(refused(
                "a configured server has this name; name it with server_label alone, or choose \
                 another label"
                    .into(),
            ));
        }
        sent_headers(server).map_err(refused)
    }

    async fn connect_dynamic(
        &self,
        server: &DynamicServer,
        headers: BTreeMap<String, Secret>,
        owner: Owner,
        ctx: &CallContext,
    ) -> Result<Arc<Pooled>, GatewayError> {
        let upstream = Upstream::start(dynamic_config(server, headers), None);
        match upstream.ready().await {
            Ok(()) => {
                self.recorder.dynamic_connected(&server.label, &server.url, ctx);
                Ok(Arc::new(Pooled {
                    label: server.label.clone(),
                    upstream,
                    owner,
                    recorder: self.recorder.clone(),
                    named: Mutex::default(),
                    closed: Default::default(),
                }))
            }
            Err(error) => {
                upstream.shutdown().await;
                self.recorder.dynamic_failed(&server.label, &server.url, ctx, &error);
                Err(GatewayError::Upstream(error))
            }
        }
    }
}

/// The headers sent to `server`: its own and its bearer token, each checked. Errors name
/// headers, never their values.
fn sent_headers(server: &DynamicServer) -> Result<BTreeMap<String, Secret>, String> {
    let mut headers = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    for (name, value) in &server.headers {
        let lower = name.to_ascii_lowercase();
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(format!("{name:?} is not a header name"));
        }
        if RESERVED_HEADERS.contains(&lower.as_str()) {
            return Err(format!("the header {name} is the transport's own and cannot be set"));
        }
        if !seen.insert(lower) {
            return Err(format!("the header {name} is given twice"));
        }
        if !is_header_value(value) {
            return Err(format!("the value of the header {name} has a control character"));
        }
        headers.insert(name.clone(), Secret::new(value.clone()));
    }
    if let Some(token) = &server.authorization {
        if seen.contains("authorization") {
            return Err("both authorization and an Authorization header are given".into());
        }
        let token = token.strip_prefix("Bearer ").unwrap_or(token).trim();
        if token.is_empty() || !is_header_value(token) {
            return Err("the authorization token is empty or has a control character".into());
        }
        headers.insert("Authorization".to_owned(), Secret::new(format!("Bearer {token}")));
    }
    Ok(headers)
}

/// A character of an HTTP token (RFC 9110).
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// Whether `value` may be a header's value: no control character but tab.
fn is_header_value(value: &str) -> bool {
    value.bytes().all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

/// The SHA-256 of `headers`, the same however their names are cased or ordered.
fn credentials_digest(headers: &BTreeMap<String, Secret>) -> String {
    let mut sorted: Vec<(String, &str)> =
        headers.iter().map(|(name, value)| (name.to_ascii_lowercase(), value.expose())).collect();
    sorted.sort();
    let mut bytes = Vec::new();
    for (name, value) in sorted {
        for part in [name.as_bytes(), value.as_bytes()] {
            bytes.extend_from_slice(&(part.len() as u64).to_be_bytes());
            bytes.extend_from_slice(part);
        }
    }
    toolgate_core::hash::sha256_hex(&bytes)
}

/// The upstream config of a dynamic server: named and prefixed by its label, OAuth off (its
/// credentials are the request's), every timeout at its default.
fn dynamic_config(server: &DynamicServer, headers: BTreeMap<String, Secret>) -> ServerConfig {
    let mut http = HttpConfig::new(server.url.clone());
    http.transport = HttpTransport::Auto;
    http.headers = headers;
    http.oauth = OAuthConfig { enabled: false, ..OAuthConfig::default() };
    ServerConfig::new(server.label.clone(), TransportConfig::Http(http))
}

#[cfg(test)]
mod tests {
    use toolgate_intercept::Principal;

    use super::*;

    fn server(headers: &[(&str, &str)], authorization: Option<&str>) -> DynamicServer {
        DynamicServer {
            url: "https://mcp.example.com/mcp?k=v".parse().expect("a URL"),
            label: "x".into(),
            headers: headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
            authorization: authorization.map(str::to_owned),
        }
    }

    fn key(server: &DynamicServer, ctx: &CallContext) -> Key {
        Key {
            url: server.url.to_string(),
            label: server.label.clone(),
            credentials: credentials_digest(&sent_headers(server).expect("valid headers")),
            owner: Owner::of(ctx),
        }
    }

    fn caller(id: &str, tenant: Option<&str>) -> CallContext {
        CallContext::new(Principal::new("key", id).with_tenant(tenant.map(str::to_owned)))
    }

    #[test]
    fn tenants_and_credentials_each_get_their_own_connection() {
        let token = server(&[], Some("t1"));
        let (alice, bob) = (caller("alice", Some("acme")), caller("bob", Some("acme")));
        assert!(key(&token, &alice) == key(&token, &bob), "one tenant, one connection");
        let other = caller("alice", Some("globex"));
        assert!(key(&token, &alice) != key(&token, &other), "two tenants never share");
        let (carol, dave) = (caller("carol", None), caller("dave", None));
        assert!(key(&token, &carol) != key(&token, &dave), "without a tenant: each caller");
        let other_token = server(&[], Some("t2"));
        assert!(key(&token, &alice) != key(&other_token, &alice), "other credentials");
        let header = server(&[("X-Api-Key", "k")], Some("t1"));
        assert!(key(&token, &alice) != key(&header, &alice), "a header more");
        // The same credentials however written.
        let as_header = server(&[("authorization", "Bearer t1")], None);
        assert!(key(&token, &alice) == key(&as_header, &alice));
        let (a, b) =
            (server(&[("A", "1"), ("b", "2")], None), server(&[("B", "2"), ("a", "1")], None));
        assert!(key(&a, &alice) == key(&b, &alice));
        // Name and value do not run into each other.
        let (ab, a_b) = (server(&[("ab", "c")], None), server(&[("a", "bc")], None));
        assert!(key(&ab, &alice) != key(&a_b, &alice));
        let mut relabelled = token.clone();
        relabelled.label = "y".into();
        assert!(key(&token, &alice) != key(&relabelled, &alice), "each label its own prefix");
    }

    #[test]
    fn transport_headers_and_bad_values_are_refused_naming_no_value() {
        for name in ["Host", "content-length", "Mcp-Session-Id", "Transfer-Encoding"] {
            let error = sent_headers(&server(&[(name, "secret-value")], None)).unwrap_err();
            assert!(error.contains("transport's own"), "{name}: {error}");
        }
        for (name, value) in [("X Bad", "v"), ("X-Ok", "line\r\nInjected: secret-value")] {
            let error = sent_headers(&server(&[(name, value)], None)).unwrap_err();
            assert!(!error.contains("secret-value"), "{error}");
        }
        let twice = server(&[("Authorization", "Bearer secret-value")], Some("secret-value"));
        assert!(sent_headers(&twice).is_err());
        let sent = sent_headers(&server(&[("X-Api-Key", "k")], Some("Bearer tok"))).unwrap();
        assert_eq!(sent["Authorization"].expose(), "Bearer tok");
        assert!(!format!("{sent:?}").contains("tok"), "secrets never print");
        let shown = format!("{:?}", server(&[("X-Api-Key", "secret-value")], Some("tok")));
        assert!(!shown.contains("secret-value") && !shown.contains("tok"), "{shown}");
        assert!(!shown.contains("k=v"), "no query either: {shown}");
    }

    #[test]
    fn the_upstream_config_holds_the_credentials_as_secrets() {
        let config = dynamic_config(
            &server(&[], Some("s3cr3t")),
            sent_headers(&server(&[], Some("s3cr3t"))).unwrap(),
        );
        assert_eq!((config.name.as_str(), config.prefix.as_str()), ("x", "x"));
        assert!(!format!("{config:?}").contains("s3cr3t"));
    }
}
