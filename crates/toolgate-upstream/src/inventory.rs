//! The merged inventory: every upstream's tools, prompts, resources and templates under the
//! names clients see, and the table back to `(upstream, original)`.
//!
//! Tools and prompts are exposed as `<prefix>__<name>` ([`toolgate_core::name`]). When two
//! entries would get the same exposed name, the one from the upstream that sorts first keeps
//! it and the other gets a stable hash-suffixed name; the collision is reported, never
//! silently shadowed. Resource URIs are kept when unique; a URI (or URI template) offered by
//! two upstreams is rewritten reversibly to `toolgate://<upstream>/<percent-encoded original>`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use toolgate_config::{CompiledToolFilter, ToolFilter};
use toolgate_core::mcp;
use toolgate_core::name::{disambiguated_name, exposed_name};

use crate::catalog::Catalog;

/// Scheme of rewritten resource URIs.
pub const REWRITTEN_SCHEME: &str = "toolgate://";

/// Characters escaped in a rewritten URI: all but alphanumerics and the template braces, so
/// that clients can still expand a rewritten template.
const URI_ESCAPE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'{').remove(b'}').remove(b'-').remove(b'_');

/// Where an exposed name or URI leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The upstream's configured name.
    pub upstream: Arc<str>,
    /// The name or URI as the upstream knows it.
    pub original: String,
}

/// Two entries wanted the same exposed name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    /// `tool` or `prompt`.
    pub kind: &'static str,
    /// The contested name.
    pub exposed: String,
    /// Who kept it.
    pub kept: Route,
    /// Who did not.
    pub other: Route,
    /// The name `other` got instead (`None` when it could not be exposed at all).
    pub renamed_to: Option<String>,
}

/// What one upstream contributes.
#[derive(Debug, Clone, Copy)]
pub struct Contribution<'a> {
    /// The upstream's configured name.
    pub upstream: &'a str,
    /// Its prefix (empty = passthrough).
    pub prefix: &'a str,
    /// Which of its tools to expose.
    pub filter: &'a ToolFilter,
    /// What it offers.
    pub catalog: &'a Catalog,
}

/// The merged view of all upstreams.
#[derive(Debug, Default)]
pub struct Inventory {
    tools: Vec<mcp::Tool>,
    tool_routes: HashMap<String, Route>,
    /// Each exposed tool's definition as its upstream listed it (original name).
    tool_definitions: HashMap<String, Arc<mcp::Tool>>,
    prompts: Vec<mcp::Prompt>,
    prompt_routes: HashMap<String, Route>,
    resources: Vec<mcp::Resource>,
    resource_routes: HashMap<String, Route>,
    templates: Vec<mcp::ResourceTemplate>,
    /// Each exposed template (`uriTemplate`) and the upstream that listed it.
    template_origins: HashMap<String, Route>,
    template_routes: Vec<TemplateRoute>,
    /// The templates two upstreams list (exposed rewritten), each matched against the original
    /// URI of a rewritten one.
    shared_template_routes: Vec<TemplateRoute>,
    resource_upstreams: Vec<Arc<str>>,
    passthrough: Option<Passthrough>,
    collisions: Vec<Collision>,
}

/// The only upstream without a prefix, if there is exactly one: names nobody lists may still
/// be its own (a tool it did not list, or one it does not know and should answer for itself).
#[derive(Debug)]
struct Passthrough {
    upstream: Arc<str>,
    filter: CompiledToolFilter,
}

#[derive(Debug)]
struct TemplateRoute {
    prefix: String,
    suffix: String,
    upstream: Arc<str>,
}

impl TemplateRoute {
    fn new(template: &str, upstream: &Arc<str>) -> TemplateRoute {
        let (prefix, suffix) = literal_ends(template);
        TemplateRoute {
            prefix: prefix.to_owned(),
            suffix: suffix.to_owned(),
            upstream: upstream.clone(),
        }
    }

    /// Whether `uri` could be an expansion of the template.
    fn matches(&self, uri: &str) -> bool {
        uri.len() >= self.prefix.len() + self.suffix.len()
            && uri.starts_with(&self.prefix)
            && uri.ends_with(&self.suffix)
    }
}

impl Inventory {
    /// Merges `contributions`. The result does not depend on their order.
    pub fn build<'a>(contributions: impl IntoIterator<Item = Contribution<'a>>) -> Inventory {
        let mut contributions: Vec<_> = contributions.into_iter().collect();
        contributions.sort_by(|a, b| a.upstream.cmp(b.upstream));
        let mut inventory = Inventory::default();
        let mut tools = Names::new("tool");
        let mut prompts = Names::new("prompt");
        for c in &contributions {
            let upstream: Arc<str> = c.upstream.into();
            // The config loader rejected patterns that do not compile; a filter that still
            // fails hides everything rather than exposing what it meant to hide.
            let filter = c.filter.compile().ok();
            let exposes = |name: &str| filter.as_ref().is_some_and(|f| f.matches(name));
            for tool in c.catalog.tools.iter().filter(|t| exposes(&t.name)) {
                if let Some(exposed) = tools.claim(&upstream, c.prefix, &tool.name) {
                    let mut shown = tool.clone();
                    shown.name = exposed.clone().into();
                    inventory.tools.push(shown);
                    inventory.tool_definitions.insert(exposed, Arc::new(tool.clone()));
                }
            }
            for prompt in &c.catalog.prompts {
                if let Some(exposed) = prompts.claim(&upstream, c.prefix, &prompt.name) {
                    let mut prompt = prompt.clone();
                    prompt.name = exposed;
                    inventory.prompts.push(prompt);
                }
            }
            if !c.catalog.resources.is_empty() || !c.catalog.resource_templates.is_empty() {
                inventory.resource_upstreams.push(upstream);
            }
        }
        let mut passthrough = contributions.iter().filter(|c| c.prefix.is_empty());
        if let (Some(only), None) = (passthrough.next(), passthrough.next()) {
            inventory.passthrough = only
                .filter
                .compile()
                .ok()
                .map(|filter| Passthrough { upstream: only.upstream.into(), filter });
        }
        inventory.tool_routes = tools.routes;
        inventory.prompt_routes = prompts.routes;
        inventory.collisions = tools.collisions;
        inventory.collisions.extend(prompts.collisions);
        inventory.tools.sort_by(|a, b| a.name.cmp(&b.name));
        inventory.prompts.sort_by(|a, b| a.name.cmp(&b.name));
        inventory.merge_resources(&contributions);
        inventory
    }

    fn merge_resources(&mut self, contributions: &[Contribution<'_>]) {
        let shared_uris =
            shared(contributions.iter().map(|c| {
                c.catalog.resources.iter().map(|r| r.uri.as_str()).collect::<HashSet<_>>()
            }));
        let shared_templates = shared(contributions.iter().map(|c| {
            c.catalog.resource_templates.iter().map(|t| t.uri_template.as_str()).collect()
        }));
        for c in contributions {
            let upstream: Arc<str> = c.upstream.into();
            for resource in &c.catalog.resources {
                let mut resource = resource.clone();
                let original = std::mem::take(&mut resource.uri);
                resource.uri = if shared_uris.contains(original.as_str()) {
                    rewrite_uri(c.upstream, &original)
                } else {
                    original.clone()
                };
                self.resource_routes
                    .insert(resource.uri.clone(), Route { upstream: upstream.clone(), original });
                self.resources.push(resource);
            }
            for template in &c.catalog.resource_templates {
                let mut template = template.clone();
                let original = template.uri_template.clone();
                let route = TemplateRoute::new(&template.uri_template, &upstream);
                if shared_templates.contains(template.uri_template.as_str()) {
                    template.uri_template = rewrite_uri(c.upstream, &template.uri_template);
                    self.shared_template_routes.push(route);
                } else {
                    self.template_routes.push(route);
                }
                self.template_origins.insert(
                    template.uri_template.clone(),
                    Route { upstream: upstream.clone(), original },
                );
                self.templates.push(template);
            }
        }
        self.resources.sort_by(|a, b| a.uri.cmp(&b.uri));
        // Longest literal prefix first, so the most specific template wins.
        self.template_routes.sort_by_key(|t| std::cmp::Reverse(t.prefix.len()));
    }

    /// Exposed tools, sorted by name.
    pub fn tools(&self) -> &[mcp::Tool] {
        &self.tools
    }

    /// Exposed prompts, sorted by name.
    pub fn prompts(&self) -> &[mcp::Prompt] {
        &self.prompts
    }

    /// Exposed resources, sorted by URI.
    pub fn resources(&self) -> &[mcp::Resource] {
        &self.resources
    }

    /// Exposed resource templates.
    pub fn resource_templates(&self) -> &[mcp::ResourceTemplate] {
        &self.templates
    }

    /// The definition of the exposed tool `name` as its upstream listed it (under its
    /// original name), for interceptors that look at what a tool says about itself.
    pub fn tool_definition(&self, name: &str) -> Option<&Arc<mcp::Tool>> {
        self.tool_definitions.get(name)
    }

    /// Name collisions found while merging.
    pub fn collisions(&self) -> &[Collision] {
        &self.collisions
    }

    /// Where the exposed tool `name` leads.
    pub fn tool_route(&self, name: &str) -> Option<&Route> {
        self.tool_routes.get(name)
    }

    /// Where a tool name that no upstream lists leads: to the only passthrough upstream
    /// (empty prefix), when its tool filter admits the name, so that it answers as it would
    /// to a direct client. `None` when there is no such upstream, or when the name is listed.
    pub fn unlisted_tool_route(&self, name: &str) -> Option<Route> {
        let passthrough = self.passthrough.as_ref()?;
        (!self.tool_routes.contains_key(name) && passthrough.filter.matches(name))
            .then(|| Route { upstream: passthrough.upstream.clone(), original: name.to_owned() })
    }

    /// Where a prompt name that no upstream lists leads: to the only passthrough upstream, as
    /// for [`unlisted_tool_route`](Self::unlisted_tool_route).
    pub fn unlisted_prompt_route(&self, name: &str) -> Option<Route> {
        let passthrough = self.passthrough.as_ref()?;
        (!self.prompt_routes.contains_key(name))
            .then(|| Route { upstream: passthrough.upstream.clone(), original: name.to_owned() })
    }

    /// Where the exposed prompt `name` leads.
    pub fn prompt_route(&self, name: &str) -> Option<&Route> {
        self.prompt_routes.get(name)
    }

    /// Where the listed resource with the exposed URI `uri` comes from (only URIs in
    /// [`resources`](Self::resources); see [`resource_route`](Self::resource_route) for
    /// reads).
    pub fn listed_resource_route(&self, uri: &str) -> Option<&Route> {
        self.resource_routes.get(uri)
    }

    /// Where the listed resource template with the exposed `uri_template` comes from, with the
    /// template as its upstream wrote it.
    pub fn template_route(&self, uri_template: &str) -> Option<&Route> {
        self.template_origins.get(uri_template)
    }

    /// Where a resource URI leads: a listed URI, a rewritten `toolgate://` URI, a URI that
    /// matches a template, or the only upstream that offers resources at all.
    pub fn resource_route(&self, uri: &str) -> Option<Route> {
        if let Some(route) = self.resource_routes.get(uri) {
            return Some(route.clone());
        }
        if let Some(route) = parse_rewritten_uri(uri) {
            return self
                .resource_upstreams
                .iter()
                .find(|u| u.as_ref() == route.upstream.as_ref())
                .map(|upstream| Route { upstream: upstream.clone(), original: route.original });
        }
        if let Some(t) = self.template_routes.iter().find(|t| t.matches(uri)) {
            return Some(Route { upstream: t.upstream.clone(), original: uri.to_owned() });
        }
        match self.resource_upstreams.as_slice() {
            [only] => Some(Route { upstream: only.clone(), original: uri.to_owned() }),
            _ => None,
        }
    }

    /// Where a resource URI leads when an upstream offers it: a URI an upstream lists, or one
    /// that matches a template an upstream lists (in its rewritten `toolgate://` form too).
    /// Unlike [`resource_route`](Self::resource_route) this never guesses, for subscriptions:
    /// an upstream subscribed to URIs it never offered would only hold them for nothing.
    pub fn offered_resource_route(&self, uri: &str) -> Option<Route> {
        if let Some(route) = self.resource_routes.get(uri) {
            return Some(route.clone());
        }
        if let Some(route) = parse_rewritten_uri(uri) {
            let offered = self
                .template_routes
                .iter()
                .chain(&self.shared_template_routes)
                .any(|t| t.upstream == route.upstream && t.matches(&route.original));
            return offered.then_some(route);
        }
        self.template_routes
            .iter()
            .find(|t| t.matches(uri))
            .map(|t| Route { upstream: t.upstream.clone(), original: uri.to_owned() })
    }
}

/// Exposed names handed out so far, and the table back.
struct Names {
    kind: &'static str,
    routes: HashMap<String, Route>,
    collisions: Vec<Collision>,
}

impl Names {
    fn new(kind: &'static str) -> Self {
        Names { kind, routes: HashMap::new(), collisions: Vec::new() }
    }

    /// The exposed name for `name`, or `None` when it cannot be exposed.
    fn claim(&mut self, upstream: &Arc<str>, prefix: &str, name: &str) -> Option<String> {
        let route = Route { upstream: upstream.clone(), original: name.to_owned() };
        let exposed = exposed_name(prefix, name);
        let Some(kept) = self.routes.get(&exposed).cloned() else {
            self.routes.insert(exposed.clone(), route);
            return Some(exposed);
        };
        let alternative = disambiguated_name(&exposed, upstream, name);
        let renamed_to =
            (!self.routes.contains_key(&alternative) && kept != route).then(|| alternative.clone());
        if let Some(alternative) = &renamed_to {
            self.routes.insert(alternative.clone(), route.clone());
        }
        tracing::warn!(
            kind = self.kind,
            exposed,
            kept = %kept.upstream,
            other = %upstream,
            renamed_to = renamed_to.as_deref().unwrap_or("(not exposed)"),
            "name collision"
        );
        self.collisions.push(Collision {
            kind: self.kind,
            exposed,
            kept,
            other: route,
            renamed_to: renamed_to.clone(),
        });
        renamed_to
    }
}

/// The values that occur in more than one of `sets`.
fn shared<'a>(sets: impl Iterator<Item = HashSet<&'a str>>) -> HashSet<&'a str> {
    let mut seen = HashSet::new();
    let mut shared = HashSet::new();
    for set in sets {
        for value in set {
            if !seen.insert(value) {
                shared.insert(value);
            }
        }
    }
    shared
}

/// `toolgate://<upstream>/<escaped original>`.
pub fn rewrite_uri(upstream: &str, original: &str) -> String {
    let upstream = utf8_percent_encode(upstream, URI_ESCAPE);
    let original = utf8_percent_encode(original, URI_ESCAPE);
    format!("{REWRITTEN_SCHEME}{upstream}/{original}")
}

/// The inverse of [`rewrite_uri`].
pub fn parse_rewritten_uri(uri: &str) -> Option<Route> {
    let rest = uri.strip_prefix(REWRITTEN_SCHEME)?;
    let (upstream, original) = rest.split_once('/')?;
    let upstream = percent_decode_str(upstream).decode_utf8().ok()?;
    let original = percent_decode_str(original).decode_utf8().ok()?;
    Some(Route { upstream: upstream.as_ref().into(), original: original.into_owned() })
}

/// The literal text before the first and after the last `{...}` of a URI template.
fn literal_ends(template: &str) -> (&str, &str) {
    match (template.find('{'), template.rfind('}')) {
        (Some(open), Some(close)) if open < close => (&template[..open], &template[close + 1..]),
        _ => (template, ""),
    }
}

#[cfg(test)]
mod tests;
