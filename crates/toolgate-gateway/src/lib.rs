//! toolgate's gateway core (see ARCHITECTURE.md, `toolgate-gateway`): it knows no front.
//!
//! [`Gateway`] owns the upstreams, the merged inventory and the pipeline, and does what each
//! request asks (`gateway`: dispatch by exposed name, the relays of upstreams' questions,
//! events, subscriptions, log levels, recording). [`Dispatcher`] is the one function every
//! front hands a parsed request to: it checks the request against its protocol era, serves it
//! and shapes the answer for that era (`protocol`). A front brings only its transport: how
//! messages arrive and leave, and what [`link`] asks of it (where a client's notifications go,
//! how one request's progress and questions reach its client). `error` is the one place where
//! a [`GatewayError`] becomes an MCP answer.

mod answer;
mod askers;
mod caller;
mod error;
mod gateway;
pub mod link;
pub mod listen;
pub mod methods;
mod mrtr;
pub mod pinned;
pub mod protocol;
mod record;
mod script_tools;
pub mod session;
mod tenants;
mod trace;
pub mod unrecognised;

pub use error::{ErrorReply, GatewayError, reply as error_reply};
pub use gateway::{
    DynamicHandle, DynamicServer, FailedUpstream, Gateway, INTERCEPTORS_LIST, InProcess,
    PoolSettings, PoolStats, SubscriptionBounds, interceptors_list,
};
pub use protocol::Dispatcher;
pub use record::Recorder;
pub use script_tools::{GatewayCaller, ScriptTools};
pub use session::{MOST_SUBSCRIBED_BYTES, MOST_SUBSCRIPTIONS, Session, Sessions};
pub use tenants::{Tenants, TenantsError};
pub use toolgate_upstream::StartupWait;
