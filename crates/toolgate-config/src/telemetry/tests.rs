//! `[telemetry]`: the file's keys, the `OTEL_*` variables where it is silent, and every
//! error with its path.

use std::path::Path;

use super::*;
use crate::{FixedEnvironment, Format};

fn load(text: &str, env: &FixedEnvironment) -> Result<TelemetryConfig, String> {
    crate::parse_str(text, Format::Toml, Path::new("/etc/toolgate"), env)
        .map(|config| config.telemetry)
        .map_err(|errors| errors.to_string())
}

fn telemetry(text: &str) -> TelemetryConfig {
    load(text, &FixedEnvironment::new()).unwrap_or_else(|e| panic!("{text}\nmust be valid:\n{e}"))
}

fn errors(text: &str, env: &FixedEnvironment) -> String {
    load(text, env).expect_err("must fail")
}

#[test]
fn without_a_section_or_variables_tracing_is_off() {
    let config = telemetry("");
    assert_eq!(config, TelemetryConfig::default());
    assert_eq!(config.endpoint, None);
    assert_eq!(config.sampling, 1.0);
    assert_eq!(config.service_name, "toolgate");
    assert!(!config.record_arguments);
}

#[test]
fn every_key_is_read() {
    let env = FixedEnvironment::new().with_var("OTLP_TOKEN", "s3cret");
    let text = r#"
        [telemetry]
        otlp_endpoint = "http://127.0.0.1:4318"
        protocol = "http/protobuf"
        headers = { Authorization = "Bearer ${OTLP_TOKEN}" }
        sampling = 0.25
        service_name = "gateway-eu"
        record_arguments = true
    "#;
    let config = load(text, &env).unwrap();
    assert_eq!(config.endpoint.unwrap().as_str(), "http://127.0.0.1:4318/v1/traces");
    assert_eq!(config.headers["Authorization"].expose(), "Bearer s3cret");
    assert_eq!(config.sampling, 0.25);
    assert_eq!(config.service_name, "gateway-eu");
    assert!(config.record_arguments);
    let full = crate::parse_str(text, Format::Toml, Path::new("/"), &env).unwrap();
    assert!(full.secret_env.contains("OTLP_TOKEN"), "the header's variable is a secret");
}

#[test]
fn an_endpoint_that_names_the_traces_path_is_kept() {
    let config = telemetry("[telemetry]\notlp_endpoint = \"https://otel.example/v1/traces\"");
    assert_eq!(config.endpoint.unwrap().as_str(), "https://otel.example/v1/traces");
    let config = telemetry("[telemetry]\notlp_endpoint = \"https://otel.example/base/\"");
    assert_eq!(config.endpoint.unwrap().as_str(), "https://otel.example/base/v1/traces");
}

#[test]
fn the_standard_variables_fill_in_what_the_file_does_not_say() {
    let env = FixedEnvironment::new()
        .with_var("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
        .with_var("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b,x-tenant=eu")
        .with_var("OTEL_SERVICE_NAME", "from-env");
    let config = load("", &env).unwrap();
    assert_eq!(config.endpoint.unwrap().as_str(), "http://collector:4318/v1/traces");
    assert_eq!(config.headers["api-key"].expose(), "a b");
    assert_eq!(config.headers["x-tenant"].expose(), "eu");
    assert_eq!(config.service_name, "from-env");

    // The traces endpoint is taken as it is, and wins over the general one.
    let env = env.with_var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:9999/custom");
    assert_eq!(load("", &env).unwrap().endpoint.unwrap().as_str(), "http://traces:9999/custom");

    // The file wins over the variables.
    let text = "[telemetry]\notlp_endpoint = \"http://file:4318\"\nservice_name = \"file\"\n\
                headers = {}";
    let config = load(text, &env).unwrap();
    assert_eq!(config.endpoint.unwrap().as_str(), "http://file:4318/v1/traces");
    assert_eq!(config.service_name, "file");
    assert!(config.headers.is_empty());

    // OTEL_SDK_DISABLED turns the variables' endpoint off, not the file's.
    let off = env.clone().with_var("OTEL_SDK_DISABLED", "true");
    assert_eq!(load("", &off).unwrap().endpoint, None);
    assert!(
        load("[telemetry]\notlp_endpoint = \"http://file:4318\"", &off).unwrap().endpoint.is_some()
    );
}

#[test]
fn every_problem_is_reported_with_its_path() {
    let env = FixedEnvironment::new();
    let text = r#"
        [telemetry]
        otlp_endpoint = "ftp://collector"
        protocol = "grpc"
        sampling = 1.5
        service_name = ""
        record_arguments = "yes"
        colour = "blue"
    "#;
    let found = errors(text, &env);
    for expected in [
        "telemetry.otlp_endpoint: unsupported URL scheme \"ftp\"",
        "telemetry.protocol: \"grpc\" is not supported",
        "telemetry.sampling: 1.5 is out of range",
        "telemetry.service_name: must not be empty",
        "telemetry.record_arguments:",
        "telemetry.colour:",
    ] {
        assert!(found.contains(expected), "{expected:?} not in:\n{found}");
    }
    assert_eq!(found.lines().count(), 6, "{found}");
    assert!(errors("[telemetry]\nsampling = \"all\"", &env).contains("telemetry.sampling:"));
    assert!(errors("telemetry = 1", &env).contains("telemetry:"));
}

#[test]
fn bad_variables_are_named() {
    let env = FixedEnvironment::new()
        .with_var("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url")
        .with_var("OTEL_EXPORTER_OTLP_HEADERS", "novalue")
        .with_var("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
    let found = errors("", &env);
    assert!(found.contains("telemetry (OTEL_EXPORTER_OTLP_ENDPOINT): invalid URL"), "{found}");
    assert!(found.contains("telemetry (OTEL_EXPORTER_OTLP_HEADERS): expected"), "{found}");
    assert!(found.contains("telemetry (OTEL_EXPORTER_OTLP_PROTOCOL): \"http/json\""), "{found}");
}

#[test]
fn sampling_takes_integers_zero_and_one() {
    assert_eq!(telemetry("[telemetry]\nsampling = 0").sampling, 0.0);
    assert_eq!(telemetry("[telemetry]\nsampling = 1").sampling, 1.0);
}
