//! End-to-end tests: the real `toolgate` binary, real processes, real transports, 127.0.0.1 only.

mod approvals;
mod audit_cli;
mod bad_input;
mod builtins;
mod cli;
mod config_check;
mod conformance;
mod deps;
mod failures;
mod fidelity;
mod http_front;
mod matrix;
mod pipeline;
mod real_servers;
mod recorder;
mod sdk_clients;
mod stdio_front;
mod supervision;
mod support;
