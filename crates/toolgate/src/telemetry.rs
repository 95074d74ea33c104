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
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(sampler(config.sampling))
        .with_resource(Resource::builder().with_service_name(config.service_name.clone()).build())
        .build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    toolgate_core::trace::enable(config.record_arguments);
    tracing::info!(%endpoint, sampling = config.sampling, "sending traces");
    *installed = Some(provider);
    Ok(())
}

/// Parent-based sampling: a span follows its parent's choice (a remote parent's `sampled`
/// flag included), and `ratio` of new traces are kept, chosen by their trace id.
fn sampler(ratio: f64) -> Sampler {
    Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(ratio)))
}

/// The trace context this process was started in (`TRACEPARENT`, `TRACESTATE`), as the
/// `_meta` entries with which `toolgate call` and the agent continue it; empty when tracing is
/// off or the variables hold no valid parent.
pub(crate) fn started_in() -> serde_json::Map<String, serde_json::Value> {
    if !toolgate_core::trace::enabled() {
        return serde_json::Map::new();
    }
    toolgate_core::trace::env_meta(|name| std::env::var(name).ok())
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

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{
        SpanContext, SpanId, SpanKind, TraceContextExt as _, TraceFlags, TraceId, TraceState,
    };
    use opentelemetry_sdk::trace::{SamplingDecision, ShouldSample as _};

    use super::*;

    /// A trace id whose low half is `low` (what the ratio sampler decides by).
    fn trace_id(low: u64) -> TraceId {
        TraceId::from(u128::from(low) | (0xabcd_u128 << 64))
    }

    fn decide(sampler: &Sampler, parent: Option<(TraceId, bool)>, id: TraceId) -> SamplingDecision {
        let parent = parent.map(|(trace, sampled)| {
            let flags = if sampled { TraceFlags::SAMPLED } else { TraceFlags::default() };
            let span = SpanContext::new(trace, SpanId::from(7), flags, true, TraceState::NONE);
            opentelemetry::Context::new().with_remote_span_context(span)
        });
        sampler
            .should_sample(parent.as_ref(), id, "tools/call", &SpanKind::Server, &[], &[])
            .decision
    }

    #[test]
    fn new_traces_are_kept_by_ratio_and_the_others_follow_their_parent() {
        use SamplingDecision::{Drop, RecordAndSample};
        let (kept, dropped) = (trace_id(1), trace_id(u64::MAX));
        let half = sampler(0.5);
        assert_eq!(decide(&half, None, kept), RecordAndSample);
        assert_eq!(decide(&half, None, dropped), Drop);
        // A parent's choice wins over the ratio, either way.
        assert_eq!(decide(&half, Some((dropped, true)), dropped), RecordAndSample);
        assert_eq!(decide(&half, Some((kept, false)), kept), Drop);
        assert_eq!(decide(&sampler(0.0), None, kept), Drop);
        assert_eq!(decide(&sampler(0.0), Some((kept, true)), kept), RecordAndSample);
        assert_eq!(decide(&sampler(1.0), None, dropped), RecordAndSample);
        assert_eq!(decide(&sampler(1.0), Some((dropped, false)), dropped), Drop);
    }
}
