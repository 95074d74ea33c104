//! toolgate's built-in interceptors, one module each; the module name is the config `kind`
//! and the name in audit records (see ARCHITECTURE.md, `toolgate-interceptors`).
//!
//! [`build_pipeline`] turns the `[[pipeline]]` entries of a config into a [`Pipeline`],
//! reporting every problem at once with the entry's path.

mod options;
pub mod policy;

use std::sync::Arc;

use toolgate_config::InterceptorConfig;
use toolgate_intercept::{Descriptor, Interceptor, Mode, Pipeline};

pub use options::OptionError;

/// The kinds this build knows.
pub const KINDS: &[&str] = &[policy::KIND];

/// Builds the pipeline `entries` describe, or every reason it cannot be built.
pub fn build_pipeline(entries: &[InterceptorConfig]) -> Result<Pipeline, Vec<OptionError>> {
    let mut errors = Vec::new();
    let mut chain: Vec<Arc<dyn Interceptor>> = Vec::new();
    for entry in entries {
        match build(entry) {
            Ok(interceptor) => chain.push(interceptor),
            Err(mut more) => errors.append(&mut more),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Pipeline::new(chain)
        .map_err(|duplicate| vec![OptionError::new("pipeline", duplicate.to_string())])
}

fn build(entry: &InterceptorConfig) -> Result<Arc<dyn Interceptor>, Vec<OptionError>> {
    match entry.kind.as_str() {
        policy::KIND => Ok(Arc::new(policy::Policy::from_config(entry)?)),
        other => Err(vec![OptionError::new(
            &format!("{}.kind", entry.path),
            format!("unknown interceptor kind {other:?} (known: {})", KINDS.join(", ")),
        )]),
    }
}

/// Applies the settings every entry has (name, mode, fail_open, priority, timeout, filters)
/// to a kind's default descriptor.
pub(crate) fn configure(
    mut descriptor: Descriptor,
    entry: &InterceptorConfig,
) -> Result<Descriptor, Vec<OptionError>> {
    if let Some(name) = &entry.name {
        descriptor.name = name.clone();
    }
    if entry.audit == Some(true) {
        descriptor.mode = Mode::Audit;
    }
    if let Some(fail_open) = entry.fail_open {
        descriptor.fail_open = fail_open;
    }
    descriptor.priority = entry.priority;
    if let Some(timeout) = entry.timeout {
        descriptor.timeout = timeout;
    }
    let bad = |what: &str, e: toolgate_intercept::DescriptorError| {
        vec![OptionError::new(&format!("{}.{what}", entry.path), e.to_string())]
    };
    descriptor = descriptor.for_servers(&entry.servers).map_err(|e| bad("servers", e))?;
    descriptor.for_tools(&entry.tools).map_err(|e| bad("tools", e))
}
