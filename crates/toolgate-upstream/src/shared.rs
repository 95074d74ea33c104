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
}
