//! A local OTLP/HTTP receiver that takes trace exports and drops them, counting what came: the
//! cheapest collector toolgate could send to, so that a traced cell measures toolgate's side
//! of tracing and not a collector's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context as _;
use axum::body::Bytes;

/// What a sink has received.
#[derive(Debug, Default)]
pub(crate) struct Received {
    exports: AtomicU64,
    bytes: AtomicU64,
}

impl Received {
    /// Export requests received.
    pub(crate) fn exports(&self) -> u64 {
        self.exports.load(Ordering::Relaxed)
    }

    /// Bytes of their bodies.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

/// A running sink on 127.0.0.1; it stops when the harness's runtime does.
pub(crate) struct Sink {
    /// Its base URL, for `[telemetry] otlp_endpoint` (toolgate adds `/v1/traces`).
    pub(crate) url: String,
    pub(crate) received: Arc<Received>,
}

impl Sink {
    pub(crate) async fn start() -> anyhow::Result<Sink> {
        let received = Arc::new(Received::default());
        let counted = received.clone();
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: Bytes| {
                let counted = counted.clone();
                async move {
                    counted.exports.fetch_add(1, Ordering::Relaxed);
                    counted.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
                    // An empty ExportTraceServiceResponse: everything accepted.
                    ([("content-type", "application/x-protobuf")], Vec::<u8>::new())
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("cannot bind the OTLP sink to 127.0.0.1")?;
        let address = listener.local_addr().context("the OTLP sink's address")?;
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Sink { url: format!("http://{address}"), received })
    }
}
