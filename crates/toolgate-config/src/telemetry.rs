//! `[telemetry]`: OpenTelemetry traces sent over OTLP, with the standard `OTEL_*` variables
//! filling in what the file does not say.

use std::collections::BTreeMap;

use crate::check::{Checker, optional};
use crate::error::key_path;
use crate::model::{Secret, TelemetryConfig};
use crate::value::Value;

const TELEMETRY_KEYS: &[&str] =
    &["otlp_endpoint", "protocol", "headers", "sampling", "service_name", "record_arguments"];

/// The only OTLP protocol toolgate speaks.
pub const OTLP_HTTP_PROTOBUF: &str = "http/protobuf";
/// The path OTLP/HTTP receivers take traces on.
const TRACES_PATH: &str = "/v1/traces";

/// `[telemetry]` (`value`, when written), with the `OTEL_EXPORTER_OTLP_*` variables, and
/// `OTEL_SERVICE_NAME`, where the file is silent. A problem in a variable is reported under
/// `telemetry` with the variable's name.
pub(crate) fn check_telemetry(cx: &mut Checker<'_>, value: Option<&Value>) -> TelemetryConfig {
    let defaults = TelemetryConfig::default();
    let fields = match value {
        Some(value) => match cx.table(value, "telemetry") {
            Some(entries) => cx.known_keys(entries, "telemetry", TELEMETRY_KEYS),
            None => return defaults,
        },
        None => BTreeMap::new(),
    };
    let at = |key: &str| key_path("telemetry", key);
    let endpoint = match fields.get("otlp_endpoint") {
        Some(value) => cx.url(value, &at("otlp_endpoint")).map(|url| traces_url(url, true)),
        None => env_endpoint(cx),
    };
    let protocol = match fields.get("protocol") {
        Some(value) => cx.string(value, &at("protocol")).map(str::to_owned),
        None => cx
            .env()
            .var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| cx.env().var("OTEL_EXPORTER_OTLP_PROTOCOL")),
    };
    if let Some(protocol) = protocol
        && protocol != OTLP_HTTP_PROTOBUF
    {
        let problem = match protocol.as_str() {
            "grpc" | "http/json" => format!(
                "{protocol:?} is not supported: toolgate sends OTLP as \"{OTLP_HTTP_PROTOBUF}\" \
                 (collectors take it on port 4318)"
            ),
            _ => format!("unknown protocol {protocol:?} (expected \"{OTLP_HTTP_PROTOBUF}\")"),
        };
        let path = if fields.contains_key("protocol") {
            at("protocol")
        } else {
            "telemetry (OTEL_EXPORTER_OTLP_PROTOCOL)".to_owned()
        };
        cx.error(&path, problem);
    }
    let headers = match fields.get("headers") {
        Some(value) => cx.secret(|cx| cx.headers(value, &at("headers"))),
        None => Some(env_headers(cx)),
    };
    let sampling = optional(fields.get("sampling").copied(), |v| ratio(cx, v, &at("sampling")));
    let service_name = match fields.get("service_name") {
        Some(value) => cx.interpolated_string(value, &at("service_name")).and_then(|name| {
            if name.trim().is_empty() {
                cx.error(&at("service_name"), "must not be empty");
                return None;
            }
            Some(name)
        }),
        None => cx.env().var("OTEL_SERVICE_NAME").filter(|name| !name.trim().is_empty()),
    };
    let record_arguments = optional(fields.get("record_arguments").copied(), |v| {
        cx.boolean(v, &at("record_arguments"))
    });
    let disabled =
        cx.env().var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"));
    TelemetryConfig {
        endpoint: if disabled && !fields.contains_key("otlp_endpoint") { None } else { endpoint },
        headers: headers.unwrap_or_default(),
        sampling: sampling.flatten().unwrap_or(defaults.sampling),
        service_name: service_name.unwrap_or(defaults.service_name),
        record_arguments: record_arguments.flatten().unwrap_or(defaults.record_arguments),
    }
}

/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with
/// `/v1/traces` appended, as the OTLP exporter specification says.
fn env_endpoint(cx: &mut Checker<'_>) -> Option<url::Url> {
    for (name, append) in
        [("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", false), ("OTEL_EXPORTER_OTLP_ENDPOINT", true)]
    {
        let Some(text) = cx.env().var(name).filter(|text| !text.trim().is_empty()) else {
            continue;
        };
        let path = format!("telemetry ({name})");
        return cx.url(&Value::String(text), &path).map(|url| traces_url(url, append));
    }
    None
}

/// `url` with `/v1/traces` appended to its path, unless it ends so already (or `append` is
/// false).
fn traces_url(mut url: url::Url, append: bool) -> url::Url {
    if append && !url.path().ends_with(TRACES_PATH) {
        let path = format!("{}{TRACES_PATH}", url.path().trim_end_matches('/'));
        url.set_path(&path);
    }
    url
}

/// `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, else `OTEL_EXPORTER_OTLP_HEADERS`: `name=value` pairs
/// separated by commas, the values percent-encoded. Pairs that cannot be read are reported.
fn env_headers(cx: &mut Checker<'_>) -> BTreeMap<String, Secret> {
    let mut headers = BTreeMap::new();
    for name in ["OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"] {
        let Some(text) = cx.env().var(name) else { continue };
        for pair in text.split(',').filter(|pair| !pair.trim().is_empty()) {
            let parsed = pair.split_once('=').and_then(|(key, value)| {
                let value =
                    percent_encoding::percent_decode_str(value.trim()).decode_utf8().ok()?;
                let key = key.trim();
                (crate::check::is_header_name(key) && crate::check::is_header_value(&value))
                    .then(|| (key.to_owned(), value.into_owned()))
            });
            match parsed {
                Some((key, value)) => {
                    headers.insert(key, Secret::new(value));
                }
                None => cx.error(
                    &format!("telemetry ({name})"),
                    "expected comma-separated `name=value` pairs (values percent-encoded)",
                ),
            }
        }
        break;
    }
    headers
}

/// A ratio from 0.0 to 1.0 (an integer 0 or 1 is accepted).
fn ratio(cx: &mut Checker<'_>, value: &Value, path: &str) -> Option<f64> {
    let ratio = match value {
        Value::Float(ratio) => *ratio,
        Value::Integer(n) => *n as f64,
        other => {
            cx.expected(path, "a number from 0.0 to 1.0", other);
            return None;
        }
    };
    if !(0.0..=1.0).contains(&ratio) {
        cx.error(path, format!("{ratio} is out of range (0.0 to 1.0: the share of traces kept)"));
        return None;
    }
    Some(ratio)
}

#[cfg(test)]
mod tests;
