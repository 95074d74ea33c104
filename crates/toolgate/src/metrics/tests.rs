//! Events into series: what each event counts, and that labels stay bounded.

use serde_json::json;

use super::*;

/// One server `fx` listing `fx__echo`, and one model `gpt-test`.
struct Fixture;

impl Known for Fixture {
    fn is_server(&self, name: &str) -> bool {
        name == "fx"
    }

    fn is_tool(&self, name: &str) -> bool {
        name == "fx__echo"
    }

    fn is_model(&self, name: &str) -> bool {
        name == "gpt-test"
    }
}

fn call(kind: &str, exposed: &str, server: &str) -> Event {
    Event::new(kind)
        .with("exposed", exposed)
        .with("server", server)
        .with("principal", "user:alice")
        .with("duration_ms", 30.0)
        .with("upstream_ms", 20.0)
        .with(
            "decisions",
            json!([
                {"interceptor": "policy", "phase": "request", "decision": "continued",
                 "duration_ms": 0.04},
                {"interceptor": "truncate", "phase": "response", "decision": "rewrote",
                 "duration_ms": 3.0},
            ]),
        )
}

/// The lines of `text` that start with `prefix`.
fn lines<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines().filter(|line| line.starts_with(prefix)).collect()
}

/// The same, sorted (the exporter writes series in no particular order).
fn sorted<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut found = lines(text, prefix);
    found.sort_unstable();
    found
}

/// `expected`, sorted.
fn sorted_all(mut expected: Vec<&str>) -> Vec<&str> {
    expected.sort_unstable();
    expected
}

#[test]
fn a_finished_call_is_counted_timed_and_its_decisions_counted() {
    let collector = Collector::new();
    collector.record(
        &call(kind::TOOLS_CALL_FINISHED, "fx__echo", "fx").with("is_error", false),
        &Fixture,
    );
    collector.record(
        &call(kind::TOOLS_CALL_FINISHED, "fx__echo", "fx").with("is_error", true),
        &Fixture,
    );
    let text = collector.render();
    assert_eq!(
        sorted(&text, "toolgate_requests_total{"),
        sorted_all(vec![
            r#"toolgate_requests_total{method="tools/call",server="fx",tool="fx__echo",outcome="ok"} 1"#,
            r#"toolgate_requests_total{method="tools/call",server="fx",tool="fx__echo",outcome="error"} 1"#,
        ]),
        "{text}"
    );
    assert!(text.contains(
        r#"mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="fx__echo",error_type="",le="0.05"} 1"#
    ), "{text}");
    assert!(text.contains(
        r#"mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="fx__echo",error_type="",le="0.02"} 0"#
    ), "{text}");
    assert!(text.contains(
        r#"mcp_client_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="fx__echo",server="fx",error_type="error",le="0.02"} 1"#
    ), "{text}");
    assert!(text.contains(
        r#"toolgate_interceptor_decisions_total{interceptor="policy",phase="request",decision="continued"} 2"#
    ), "{text}");
    assert!(!text.contains("alice"), "no principal in a label: {text}");
}

#[test]
fn each_interceptor_is_timed_by_phase() {
    let collector = Collector::new();
    collector.record(&call(kind::TOOLS_CALL_FINISHED, "fx__echo", "fx"), &Fixture);
    collector.record(&call(kind::TOOLS_CALL_DENIED, "fx__echo", "fx"), &Fixture);
    let text = collector.render();
    for expected in [
        r#"toolgate_interceptor_duration_seconds_bucket{interceptor="policy",phase="request",le="0.00001"} 0"#,
        r#"toolgate_interceptor_duration_seconds_bucket{interceptor="policy",phase="request",le="0.00005"} 2"#,
        r#"toolgate_interceptor_duration_seconds_count{interceptor="policy",phase="request"} 2"#,
        r#"toolgate_interceptor_duration_seconds_bucket{interceptor="truncate",phase="response",le="0.0025"} 0"#,
        r#"toolgate_interceptor_duration_seconds_bucket{interceptor="truncate",phase="response",le="0.005"} 2"#,
        r#"toolgate_interceptor_duration_seconds_sum{interceptor="truncate",phase="response"} 0.006"#,
    ] {
        assert!(text.contains(expected), "{expected} missing from\n{text}");
    }
    // A decision recorded before decisions were timed is counted, not timed.
    let untimed = Event::new(kind::TOOLS_CALL_FINISHED).with("exposed", "fx__echo").with(
        "decisions",
        json!([{"interceptor": "old", "phase": "request", "decision": "continued"}]),
    );
    collector.record(&untimed, &Fixture);
    let text = collector.render();
    assert!(text.contains(r#"toolgate_interceptor_decisions_total{interceptor="old""#), "{text}");
    assert!(!text.contains(r#"toolgate_interceptor_duration_seconds_count{interceptor="old""#));
}

#[test]
fn buckets_are_the_opentelemetry_mcp_ones() {
    let collector = Collector::new();
    collector.record(&call(kind::TOOLS_CALL_FINISHED, "fx__echo", "fx"), &Fixture);
    let text = collector.render();
    let bounds: Vec<&str> = lines(&text, "mcp_server_operation_duration_seconds_bucket")
        .iter()
        .filter_map(|line| line.split("le=\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(
        bounds,
        [
            "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "30", "60", "120",
            "300", "+Inf"
        ]
    );
}

#[test]
fn made_up_tools_and_servers_get_one_label() {
    let collector = Collector::new();
    for made_up in ["fx__nope", "fx__nope2", "anything at all"] {
        let event = Event::new(kind::REQUEST_REJECTED).with("exposed", made_up);
        collector.record(&event, &Fixture);
    }
    // A server a request named by URL, whose label the request chose.
    let dynamic = call(kind::TOOLS_CALL_FINISHED, "mine__echo", "mine").with("is_error", false);
    collector.record(&dynamic, &Fixture);
    let denied = call(kind::TOOLS_CALL_DENIED, "fx__echo", "fx");
    collector.record(&denied, &Fixture);
    let text = collector.render();
    assert_eq!(
        sorted(&text, "toolgate_requests_total{"),
        sorted_all(vec![
            r#"toolgate_requests_total{method="tools/call",server="",tool="unknown",outcome="rejected"} 3"#,
            r#"toolgate_requests_total{method="tools/call",server="dynamic",tool="unknown",outcome="ok"} 1"#,
            r#"toolgate_requests_total{method="tools/call",server="fx",tool="fx__echo",outcome="denied"} 1"#,
        ]),
        "{text}"
    );
    assert!(!text.contains("nope") && !text.contains("mine"), "{text}");
}

#[test]
fn other_requests_are_counted_by_method_and_unknown_methods_are_other() {
    let collector = Collector::new();
    let finished = Event::new("tools/list/finished").with("duration_ms", 1.0);
    collector.record(&finished, &Fixture);
    collector.record(&Event::new("resources/read/finished").with("error", "gone"), &Fixture);
    collector.record(&Event::new("prompts/get/denied"), &Fixture);
    collector.record(&Event::new("made/up/finished"), &Fixture);
    // Not the end of a request.
    collector.record(&Event::new(kind::TOOLS_CALL_STARTED).with("exposed", "fx__echo"), &Fixture);
    // Nor what a script or an `emit` entry publishes, whatever its kind ends with and holds.
    let decisions = json!([{"interceptor": "made-up-by-a-script", "phase": "request",
                            "decision": "continued", "duration_ms": 1.0}]);
    for kind in ["script/x/finished", "emit/finished", "script/tools/call/denied"] {
        collector.record(&Event::new(kind).with("decisions", decisions.clone()), &Fixture);
    }
    collector.record(&Event::new(kind::TOOLS_LIST_CHANGED), &Fixture);
    let text = collector.render();
    assert_eq!(
        sorted(&text, "toolgate_requests_total{"),
        sorted_all(vec![
            r#"toolgate_requests_total{method="tools/list",server="",tool="",outcome="ok"} 1"#,
            r#"toolgate_requests_total{method="resources/read",server="",tool="",outcome="error"} 1"#,
            r#"toolgate_requests_total{method="prompts/get",server="",tool="",outcome="denied"} 1"#,
            r#"toolgate_requests_total{method="other",server="",tool="",outcome="ok"} 1"#,
        ]),
        "{text}"
    );
    assert!(!text.contains("made-up-by-a-script"), "{text}");
}

#[test]
fn upstreams_approvals_transforms_and_models() {
    let collector = Collector::new();
    let upstream = |kind: &str, server: &str| Event::new(kind).with("server", server);
    let connected = upstream(kind::UPSTREAM_CONNECTED, "fx").with("startup_ms", 150.0);
    collector.record(&connected, &Fixture);
    collector.record(&upstream(kind::UPSTREAM_FAILED, "fx"), &Fixture);
    let restarted = upstream(kind::UPSTREAM_RESTARTED, "fx").with("startup_ms", 40.0);
    collector.record(&restarted, &Fixture);
    collector
        .record(&upstream(kind::UPSTREAM_FAILED, "https-evil").with("dynamic", true), &Fixture);
    collector.record(
        &upstream(kind::UPSTREAM_CLOSED, "x").with("dynamic", true).with("reason", "idle"),
        &Fixture,
    );
    collector.record(&Event::new(kind::APPROVAL_REQUESTED), &Fixture);
    collector.record(&Event::new(kind::APPROVAL_GRANTED), &Fixture);
    let applied = Event::new(kind::TRANSFORM_APPLIED)
        .with("interceptor", "trim")
        .with("transform", "truncate")
        .with("tokens_before", 100)
        .with("tokens_after", 40);
    collector.record(&applied, &Fixture);
    let answered = |model: &str, cost: Option<f64>| {
        let event = Event::new(kind::LLM_RESPONSE_FINISHED)
            .with("model", model.to_owned())
            .with("status", "completed")
            .with("input_tokens", 12)
            .with("output_tokens", 5);
        match cost {
            Some(cost) => event.with("cost_usd", cost),
            None => event,
        }
    };
    collector.record(&answered("gpt-test", Some(0.25)), &Fixture);
    collector.record(&answered("gpt-test", Some(0.125)), &Fixture);
    // A model the config does not name, whatever a request called it; one without a price.
    collector.record(&answered("made-up-4711", Some(0.5)), &Fixture);
    collector.record(&answered("made-up-4712", None), &Fixture);
    let text = collector.render();
    for expected in [
        r#"toolgate_upstream_restarts_total{server="fx"} 1"#,
        r#"toolgate_upstream_failures_total{server="fx"} 1"#,
        r#"toolgate_upstream_failures_total{server="dynamic"} 1"#,
        r#"toolgate_upstream_reconnect_seconds_count{server="fx"} 1"#,
        // The first connection only: a reconnection is timed by how long it was down.
        r#"toolgate_upstream_connect_seconds_count{server="fx"} 1"#,
        r#"toolgate_upstream_connect_seconds_sum{server="fx"} 0.15"#,
        r#"toolgate_upstream_connect_seconds_bucket{server="fx",le="0.1"} 0"#,
        r#"toolgate_upstream_connect_seconds_bucket{server="fx",le="0.2"} 1"#,
        r#"toolgate_upstream_closed_total{reason="idle"} 1"#,
        r#"toolgate_approvals_total{outcome="requested"} 1"#,
        r#"toolgate_approvals_total{outcome="granted"} 1"#,
        r#"toolgate_transform_tokens_saved_total{interceptor="trim",transform="truncate"} 60"#,
        r#"toolgate_llm_tokens_total{model="gpt-test",direction="input"} 24"#,
        r#"toolgate_llm_tokens_total{model="gpt-test",direction="output"} 10"#,
        r#"toolgate_llm_responses_total{model="gpt-test",status="completed"} 2"#,
        r#"toolgate_llm_responses_total{model="other",status="completed"} 2"#,
        "# TYPE toolgate_llm_cost_usd_total counter\n",
        r#"toolgate_llm_cost_usd_total{model="gpt-test"} 0.375"#,
        r#"toolgate_llm_cost_usd_total{model="other"} 0.5"#,
    ] {
        assert!(text.contains(expected), "{expected} missing from\n{text}");
    }
    assert!(!text.contains("evil") && !text.contains("made-up"), "{text}");
}
