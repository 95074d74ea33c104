//! One module per subcommand.

pub(crate) mod agent;
pub(crate) mod audit;
pub(crate) mod call;
pub(crate) mod chat;
pub(crate) mod completions;
pub(crate) mod config;
pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod import;
pub(crate) mod install;
pub(crate) mod interceptors;
pub(crate) mod keys;
pub(crate) mod login;
pub(crate) mod man;
mod offered;
pub(crate) mod pin;
pub(crate) mod run;
pub(crate) mod scan;
pub(crate) mod script;
pub(crate) mod serve;
pub(crate) mod servers;
pub(crate) mod sessions;
pub(crate) mod tools;
pub(crate) mod trust;
