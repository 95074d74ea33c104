//! `subscriptions/listen` (2026-07-28) as every front serves it: what toolgate accepts of what
//! the client asked to follow (of the resources, those an upstream offers), the upstream
//! subscriptions that takes (through the pipeline), and the messages of the stream: the
//! acknowledgment first, then each notification the filter accepts tagged with the request's
//! id as `subscriptionId`, and the result that ends it. How the messages travel, how long the
//! stream lasts and how many may be open is the front's.

#![allow(deprecated)] // the resource subscriptions it makes are legacy upstream

use rmcp::model::GetMeta as _;
use toolgate_core::mcp;
use toolgate_intercept::CallContext;

use crate::error::to_mcp_error;
use crate::gateway::Gateway;
use crate::protocol::{self, Client};

/// One open `subscriptions/listen` stream: what it follows.
#[derive(Debug)]
pub struct Subscription {
    /// The `subscriptions/listen` request's id: the `subscriptionId` of every notification.
    id: mcp::RequestId,
    /// What toolgate accepted of what the client asked for.
    accepted: mcp::SubscriptionFilter,
    /// The resource URIs followed upstream, released by [`Subscription::close`].
    followed: Vec<String>,
}

impl Subscription {
    /// Opens the subscriptions `params` ask for, on behalf of `client`'s request `id`, through
    /// the pipeline.
    pub async fn open(
        gateway: &Gateway,
        client: &Client,
        id: mcp::RequestId,
        params: mcp::SubscriptionsListenRequestParams,
    ) -> Result<Subscription, mcp::ErrorData> {
        let requested = params.notifications;
        let mut accepted =
            requested.intersection(&requested.supported_by(&protocol::capabilities()));
        let mut ctx = CallContext::new(client.principal.clone());
        ctx.request_id = Some(id.to_string());
        ctx.session = client.session_id.clone();
        ctx.client_address = client.address;
        let followed = gateway.listen(accepted.clone(), &mut ctx).await.map_err(to_mcp_error)?;
        if accepted.resource_subscriptions.is_some() {
            // Only what is followed: the resources an upstream offers.
            accepted.resource_subscriptions = Some(followed.clone());
        }
        Ok(Subscription { id, accepted, followed })
    }

    /// The `subscriptions/listen` request's id.
    pub fn id(&self) -> &mcp::RequestId {
        &self.id
    }

    /// `notifications/subscriptions/acknowledged`, with what was accepted: the stream's first
    /// message.
    pub fn acknowledgment(&self) -> mcp::ServerJsonRpcMessage {
        let mut acknowledgment = mcp::SubscriptionsAcknowledgedNotification::new(
            mcp::SubscriptionsAcknowledgedNotificationParams::new(self.accepted.clone()),
        );
        let mut meta = mcp::NotificationMetaObject::new();
        meta.set_subscription_id(self.id.clone());
        acknowledgment.extensions.insert(meta);
        mcp::ServerJsonRpcMessage::notification(
            mcp::ServerNotification::SubscriptionsAcknowledgedNotification(acknowledgment),
        )
    }

    /// The result that ends the stream (at shutdown, or when it has lasted long enough).
    pub fn ending(&self) -> mcp::ServerJsonRpcMessage {
        let mut result = mcp::SubscriptionsListenResult::complete(self.id.clone());
        result.meta.set_server_info(protocol::implementation());
        mcp::ServerJsonRpcMessage::response(
            mcp::ServerResult::SubscriptionsListenResult(result),
            self.id.clone(),
        )
    }

    /// `notification` as this stream sends it (tagged with its `subscriptionId`), or `None`
    /// when the client did not ask for it.
    pub fn message(
        &self,
        mut notification: mcp::ServerNotification,
    ) -> Option<mcp::ServerJsonRpcMessage> {
        if !self.accepts(&notification) {
            return None;
        }
        notification.get_meta_mut().set_subscription_id(self.id.clone());
        Some(mcp::ServerJsonRpcMessage::notification(notification))
    }

    /// Whether the client asked for (and toolgate accepted) `notification`.
    fn accepts(&self, notification: &mcp::ServerNotification) -> bool {
        let accepted = &self.accepted;
        match notification {
            mcp::ServerNotification::ToolListChangedNotification(_) => {
                accepted.tools_list_changed == Some(true)
            }
            mcp::ServerNotification::PromptListChangedNotification(_) => {
                accepted.prompts_list_changed == Some(true)
            }
            mcp::ServerNotification::ResourceListChangedNotification(_) => {
                accepted.resources_list_changed == Some(true)
            }
            mcp::ServerNotification::ResourceUpdatedNotification(updated) => accepted
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.contains(&updated.params.uri)),
            _ => false,
        }
    }

    /// Releases the upstream subscriptions the stream held (the front has stopped offering it
    /// notifications).
    pub async fn close(&self, gateway: &Gateway) {
        gateway.release_listened(&self.followed).await;
    }
}
