//! The cells of `observability`: one toolgate each, the same but for what watches it.

use serde::Serialize;

/// What a cell's toolgate has on besides the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum, Serialize)]
pub(crate) enum CellKind {
    /// Nothing: no metrics, no traces (the baseline).
    #[value(name = "plain")]
    #[serde(rename = "plain")]
    Plain,
    /// `[gateway] metrics = true`: the collector subscribed to every event.
    #[value(name = "metrics")]
    #[serde(rename = "metrics")]
    Metrics,
    /// `[telemetry]` with `sampling = 1.0`: every call traced and exported.
    #[value(name = "traces-1")]
    #[serde(rename = "traces-1")]
    Traces100,
    /// `[telemetry]` with `sampling = 0.01`: one call in a hundred traced.
    #[value(name = "traces-0.01")]
    #[serde(rename = "traces-0.01")]
    Traces1,
}

impl CellKind {
    pub(crate) const ALL: [CellKind; 4] =
        [CellKind::Plain, CellKind::Metrics, CellKind::Traces100, CellKind::Traces1];

    pub(crate) fn name(self) -> &'static str {
        match self {
            CellKind::Plain => "plain",
            CellKind::Metrics => "metrics",
            CellKind::Traces100 => "traces-1",
            CellKind::Traces1 => "traces-0.01",
        }
    }

    /// The trace sampling ratio, for the traced cells.
    pub(crate) fn sampling(self) -> Option<f64> {
        match self {
            CellKind::Traces100 => Some(1.0),
            CellKind::Traces1 => Some(0.01),
            CellKind::Plain | CellKind::Metrics => None,
        }
    }

    /// What the cell's toolgate has on, for the report.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            CellKind::Plain => "no metrics, no traces",
            CellKind::Metrics => "[gateway] metrics = true (GET /metrics, scraped after the run)",
            CellKind::Traces100 => {
                "[telemetry] sampling = 1.0: every call's spans exported over OTLP/HTTP to a \
                 local sink that drops them"
            }
            CellKind::Traces1 => "[telemetry] sampling = 0.01: the same, one call in a hundred",
        }
    }

    /// The config that follows the pipeline: what the cell turns on. `sink` is the OTLP
    /// receiver's base URL, for the traced cells.
    pub(crate) fn fragment(self, sink: Option<&str>) -> String {
        let quoted = |text: &str| toml::Value::String(text.to_owned()).to_string();
        match (self, self.sampling(), sink) {
            (CellKind::Metrics, _, _) => "\n[gateway]\nmetrics = true\n".to_owned(),
            (_, Some(sampling), Some(sink)) => format!(
                "\n[telemetry]\notlp_endpoint = {}\nsampling = {sampling:?}\n\
                 service_name = \"toolgate-bench\"\n",
                quoted(sink)
            ),
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cell_turns_on_its_own_thing_only() {
        assert_eq!(CellKind::Plain.fragment(Some("http://127.0.0.1:1")), "");
        assert!(CellKind::Metrics.fragment(None).contains("metrics = true"));
        let traced = CellKind::Traces1.fragment(Some("http://127.0.0.1:9"));
        assert!(traced.contains("otlp_endpoint = \"http://127.0.0.1:9\""), "{traced}");
        assert!(traced.contains("sampling = 0.01"), "{traced}");
        assert!(CellKind::Traces100.fragment(Some("x")).contains("sampling = 1.0"));
        assert!(!traced.contains("metrics"), "{traced}");
    }
}
