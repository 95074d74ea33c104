//! What toolgate tells an upstream about itself, and what it does with the upstream's
//! notifications.

#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577) but still spoken

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, LoggingLevel,
    LoggingMessageNotificationParam, ProtocolVersion,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};

/// The client side of one upstream connection.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamHandler {
    upstream: String,
}

impl UpstreamHandler {
    pub(crate) fn new(upstream: &str) -> Self {
        UpstreamHandler { upstream: upstream.to_owned() }
    }
}

impl ClientHandler for UpstreamHandler {
    fn get_info(&self) -> ClientConfig {
        // Sampling, elicitation and roots are claimed only once they can be forwarded to the
        // downstream client that made the call.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let logger = params.logger.as_deref().unwrap_or("-");
        let data = &params.data;
        let upstream = &self.upstream;
        match params.level {
            LoggingLevel::Debug => tracing::debug!(%upstream, logger, %data, "upstream log"),
            LoggingLevel::Info | LoggingLevel::Notice => {
                tracing::info!(%upstream, logger, %data, "upstream log")
            }
            LoggingLevel::Warning => tracing::warn!(%upstream, logger, %data, "upstream log"),
            _ => tracing::error!(%upstream, logger, %data, "upstream log"),
        }
    }
}
