//! `subscriptions/listen` (2026-07-28): a request whose answer is a stream of the notifications
//! its client asked for (list changes, updates of named resources), acknowledged first with
//! what toolgate accepted, each tagged with the request's id as `subscriptionId`. It lasts
//! until the client closes it; at shutdown it ends with its result.

#![allow(deprecated)] // the resource subscriptions it makes are legacy upstream

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures::future::BoxFuture;
use http::StatusCode;
use rmcp::model::GetMeta as _;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolgate_core::mcp;

use super::Front;
use super::reply::{event_stream, json_message};
use super::sse::{EventBody, event};
use crate::link::{Closed, Listener};
use crate::protocol::{self, Client, Era};

/// Opens the stream.
pub(crate) async fn listen(
    front: Arc<Front>,
    id: mcp::RequestId,
    params: mcp::SubscriptionsListenRequestParams,
    era: &Era,
    client: Client,
) -> Response {
    if !era.modern {
        // The handshake era follows changes on the session's GET stream instead.
        let error = mcp::ErrorData::new(
            mcp::ErrorCode::METHOD_NOT_FOUND,
            "Method not found: subscriptions/listen (a method of protocol 2026-07-28; a session \
             follows changes on its GET stream)",
            None,
        );
        return json_message(StatusCode::OK, &mcp::ServerJsonRpcMessage::error(error, Some(id)));
    }
    let requested = params.notifications;
    let accepted = requested.intersection(&requested.supported_by(&protocol::capabilities()));
    let followed = match protocol::listen(&front.gateway, &client, &id, accepted.clone()).await {
        Ok(followed) => followed,
        Err(error) => {
            return json_message(
                StatusCode::OK,
                &mcp::ServerJsonRpcMessage::error(error, Some(id)),
            );
        }
    };
    let (sender, receiver) = mpsc::unbounded_channel();
    let listener = Arc::new(StreamListener { id: id.clone(), accepted, sender });
    listener.acknowledge();
    let registered: Arc<dyn Listener> = listener.clone();
    front.gateway.sessions().add_listener(registered.clone());
    let gone = CancellationToken::new();
    // The body ends when the task below lets go of the last sender.
    let body = EventBody::new(Some(receiver), CancellationToken::new()).on_drop(gone.clone());
    tokio::spawn(async move {
        tokio::select! {
            () = gone.cancelled() => {}
            () = front.shutdown.cancelled() => listener.finish(),
        }
        front.gateway.sessions().remove_listener(&registered);
        front.gateway.release_listened(&followed).await;
    });
    event_stream(Body::from_stream(body))
}

/// One listen stream, as the gateway's sessions see it.
#[derive(Debug)]
struct StreamListener {
    /// The `subscriptions/listen` request's id: the `subscriptionId` of every notification.
    id: mcp::RequestId,
    /// What toolgate accepted of what the client asked for.
    accepted: mcp::SubscriptionFilter,
    sender: mpsc::UnboundedSender<Bytes>,
}

impl StreamListener {
    fn send(&self, message: &mcp::ServerJsonRpcMessage) -> Result<(), Closed> {
        let json = serde_json::to_vec(message).map_err(|_| Closed)?;
        self.sender.send(event(None, &json)).map_err(|_| Closed)
    }

    /// `notifications/subscriptions/acknowledged`, with what was accepted.
    fn acknowledge(&self) {
        let mut acknowledgment = mcp::SubscriptionsAcknowledgedNotification::new(
            mcp::SubscriptionsAcknowledgedNotificationParams::new(self.accepted.clone()),
        );
        let mut meta = mcp::NotificationMetaObject::new();
        meta.set_subscription_id(self.id.clone());
        acknowledgment.extensions.insert(meta);
        let _ = self.send(&mcp::ServerJsonRpcMessage::notification(
            mcp::ServerNotification::SubscriptionsAcknowledgedNotification(acknowledgment),
        ));
    }

    /// The result that ends the stream when the server shuts down.
    fn finish(&self) {
        let mut result = mcp::SubscriptionsListenResult::complete(self.id.clone());
        result.meta.set_server_info(protocol::implementation());
        let _ = self.send(&mcp::ServerJsonRpcMessage::response(
            mcp::ServerResult::SubscriptionsListenResult(result),
            self.id.clone(),
        ));
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
}

impl Listener for StreamListener {
    fn offer(
        &self,
        notification: mcp::ServerNotification,
    ) -> BoxFuture<'static, Result<(), Closed>> {
        let sent = if self.sender.is_closed() {
            Err(Closed)
        } else if self.accepts(&notification) {
            let mut notification = notification;
            notification.get_meta_mut().set_subscription_id(self.id.clone());
            self.send(&mcp::ServerJsonRpcMessage::notification(notification))
        } else {
            Ok(())
        };
        Box::pin(async move { sent })
    }
}
