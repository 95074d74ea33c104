//! Integration tests for the fixture server: one binary, a module per concern.
//!
//! Every transport runs the same [`support::standard_assertions`] through a real rmcp client.

// The client side of logging and sampling is SEP-2577-deprecated in rmcp.
#![allow(deprecated)]

mod http;
mod modern;
mod notifications;
mod process;
mod sse;
mod stdio;
mod support;
