//! End-to-end tests: the real `toolgate` binary, real processes, real transports, 127.0.0.1 only.

mod approvals;
mod audit_cli;
mod bad_input;
mod builtins;
mod cli;
mod conformance;
mod demo;
mod denials;
mod deps;
mod error_messages;
mod every_method;
mod failures;
mod fidelity;
mod http_front;
mod limits;
mod matrix;
mod meta;
mod pipeline;
mod real_servers;
mod recorder;
mod recording_upstream;
mod relays;
mod sdk_clients;
mod stdio_front;
mod supervision;
mod support;
