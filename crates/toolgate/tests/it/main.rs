//! End-to-end tests: the real `toolgate` binary, real processes, real transports, 127.0.0.1 only.

mod cli;
mod failures;
mod matrix;
mod support;
