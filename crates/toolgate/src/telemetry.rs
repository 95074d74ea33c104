//! OpenTelemetry traces over OTLP (`[telemetry]`): the SDK's tracer provider, installed as the
//! global one, exporting in batches over HTTP/protobuf, and flushed when the process ends.
//! The spans themselves are made where requests arrive and leave (`toolgate_core::trace`).

use std::collections::HashMap;
use std::sync::Mutex;

use anyhow::Context as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use toolgate_config::TelemetryConfig;

/// The installed provider, shut down (its last spans sent) by [`shutdown`].
static PROVIDER: Mutex<Option<SdkTracerProvider>> = Mutex::new(None);

/// Starts exporting traces when `config` names an endpoint (once per process; later calls do
/// nothing).
pub(crate) fn start(config: &TelemetryConfig) -> anyhow::Result<()> {
    let Some(endpoint) = &config.endpoint else { return Ok(()) };
    let mut installed = PROVIDER.lock().expect("telemetry lock");
    if installed.is_some() {
        return Ok(());
    }
    // The exporter's blocking reqwest client speaks TLS through rustls: ring, as everywhere.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let headers: HashMap<String, String> = config
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.expose().to_owned()))
        .collect();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint.as_str())
        .with_headers(headers)
        .build()
        .with_context(|| format!("cannot start sending traces to {endpoint}"))?;
    let sampler = Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(config.sampling)));
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(sampler)
        .with_resource(Resource::builder().with_service_name(config.service_name.clone()).build())
        .build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    toolgate_core::trace::enable(config.record_arguments);
    tracing::info!(%endpoint, sampling = config.sampling, "sending traces");
    *installed = Some(provider);
    Ok(())
}

/// Sends what is left and stops exporting (at the end of `main`, off the async runtime: the
/// exporter's client blocks).
pub(crate) fn shutdown() {
    let provider = PROVIDER.lock().expect("telemetry lock").take();
    if let Some(provider) = provider
        && let Err(error) = provider.shutdown()
    {
        eprintln!("toolgate: could not send the last traces: {error}");
    }
}
