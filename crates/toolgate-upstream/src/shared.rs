//! What an upstream's supervisor, its requests and its connection's handler share: the name,
//! where events go, the catalog, and the requests in flight.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use rmcp::{Peer, RoleClient};
use toolgate_core::mcp;

use crate::call_table::Calls;
use crate::catalog::{Catalog, list_catalog};
use crate::event::{ChangedLists, EventSender, UpstreamEvent};
use crate::stream_mark::StreamMark;

/// State shared with the connection's handler.
pub(crate) struct Shared {
    pub(crate) name: String,
    events: Option<EventSender>,
    catalog: RwLock<Arc<Catalog>>,
    /// The catalog's tools by name, so that a call finds its tool's definition at once.
    tools: RwLock<HashMap<String, Arc<mcp::Tool>>>,
    /// Held while listing and storing the catalog: rmcp handles each `list_changed` in a task
    /// of its own, and one may arrive during the first listing; unserialised, a slower listing
    /// would overwrite a newer one with what it read before the change.
    listing: tokio::sync::Mutex<()>,
    pub(crate) calls: Calls,
    /// The server itself, for an upstream inside toolgate ([`crate::InProcessServer`]).
    pub(crate) in_process: Option<Arc<dyn crate::InProcessServer>>,
    /// How the HTTP client marks the log messages a request's response stream carries.
    pub(crate) stream_mark: StreamMark,
    /// The server's sign-in (an HTTP server that may ask for OAuth), kept across reconnects.
    pub(crate) login: Option<Arc<toolgate_oauth::Login>>,
    /// The last connection attempt failed for want of a login.
    pub(crate) needs_login: std::sync::atomic::AtomicBool,
    /// When the catalog was last listed whole or in part (its age, for `tool_ttl`).
    listed_at: std::sync::Mutex<Option<tokio::time::Instant>>,
    /// When a call of an unknown tool last had the tools listed again (`refresh_on_error`).
    pub(crate) refreshed_for_unknown: std::sync::Mutex<Option<tokio::time::Instant>>,
}

impl Shared {
    pub(crate) fn new(name: String, events: Option<EventSender>) -> Shared {
        Shared {
            name,
            events,
            catalog: RwLock::default(),
            tools: RwLock::default(),
            listing: tokio::sync::Mutex::default(),
            calls: Calls::default(),
            in_process: None,
            stream_mark: StreamMark::new(),
            login: None,
            needs_login: std::sync::atomic::AtomicBool::new(false),
            listed_at: std::sync::Mutex::new(None),
            refreshed_for_unknown: std::sync::Mutex::new(None),
        }
    }

    pub(crate) fn emit(&self, event: UpstreamEvent) {
        if let Some(events) = &self.events {
            let _ = events.send(event);
        }
    }

    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().expect("catalog lock must not be poisoned").clone()
    }

    /// The tool the upstream lists as `name`, as it lists it now.
    pub(crate) fn tool(&self, name: &str) -> Option<Arc<mcp::Tool>> {
        self.tools.read().expect("tool index lock must not be poisoned").get(name).cloned()
    }

    pub(crate) fn set_catalog(&self, catalog: Catalog) {
        let tools =
            catalog.tools.iter().map(|t| (t.name.to_string(), Arc::new(t.clone()))).collect();
        *self.tools.write().expect("tool index lock must not be poisoned") = tools;
        *self.catalog.write().expect("catalog lock must not be poisoned") = Arc::new(catalog);
        *self.listed_at.lock().expect("listed_at lock") = Some(tokio::time::Instant::now());
    }

    /// When the catalog was last listed (`None`: never).
    pub(crate) fn listed_at(&self) -> Option<tokio::time::Instant> {
        *self.listed_at.lock().expect("listed_at lock")
    }

    /// Serialises listings (see the `listing` field): held while a catalog is listed and
    /// stored.
    pub(crate) async fn listing(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.listing.lock().await
    }

    /// Re-lists what changed and tells the gateway.
    pub(crate) async fn relist(&self, peer: &Peer<RoleClient>, lists: ChangedLists) {
        let _listing = self.listing().await;
        let mut catalog = Catalog::clone(&self.catalog());
        let fresh = list_catalog(&self.name, peer, lists).await;
        if lists.tools {
            catalog.tools = fresh.tools;
        }
        if lists.prompts {
            catalog.prompts = fresh.prompts;
        }
        if lists.resources {
            catalog.resources = fresh.resources;
            catalog.resource_templates = fresh.resource_templates;
        }
        if peer.is_transport_closed() {
            // That connection is gone; the next one lists the catalog afresh.
            return;
        }
        self.set_catalog(catalog);
        self.emit(UpstreamEvent::CatalogChanged { upstream: self.name.clone(), lists });
    }

    /// Lists everything again, unless `still_fresh` says (once the listing is ours) that
    /// another did meanwhile; tells the gateway of the lists that changed, and returns them.
    pub(crate) async fn relist_all(
        &self,
        peer: &Peer<RoleClient>,
        still_fresh: impl FnOnce(Option<tokio::time::Instant>) -> bool,
    ) -> ChangedLists {
        let _listing = self.listing().await;
        if still_fresh(self.listed_at()) {
            return ChangedLists::default();
        }
        let old = self.catalog();
        let fresh = list_catalog(&self.name, peer, ChangedLists::ALL).await;
        if peer.is_transport_closed() {
            return ChangedLists::default();
        }
        let changed = ChangedLists {
            tools: old.tools != fresh.tools,
            prompts: old.prompts != fresh.prompts,
            resources: old.resources != fresh.resources
                || old.resource_templates != fresh.resource_templates,
        };
        self.set_catalog(fresh);
        if changed.tools || changed.prompts || changed.resources {
            self.emit(UpstreamEvent::CatalogChanged {
                upstream: self.name.clone(),
                lists: changed,
            });
        }
        changed
    }
}
