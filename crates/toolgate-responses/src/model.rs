//! Which model answers a request: the application names one (`model`), and the gateway maps
//! the name to a provider and the provider's model ([`Models`], built by the binary from
//! `[agent]` and `[llm.models]`).

use std::sync::Arc;

use toolgate_llm::provider::Provider;

/// A model to send turns to.
#[derive(Clone)]
pub struct Model {
    /// Who serves it.
    pub provider: Arc<dyn Provider>,
    /// Its name at the provider.
    pub name: String,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Maps a request's `model` to a [`Model`].
pub trait Models: Send + Sync {
    /// The model for `requested`, or why there is none (shown to the application).
    fn resolve(&self, requested: &str) -> Result<Model, String>;
}

/// One provider for every name: the request's `model` is passed to it as it is.
pub struct OneProvider(pub Arc<dyn Provider>);

impl Models for OneProvider {
    fn resolve(&self, requested: &str) -> Result<Model, String> {
        Ok(Model { provider: self.0.clone(), name: requested.to_owned() })
    }
}
