//! `/metrics` and `/readyz` end to end: calls over HTTP show in the series the admin API and
//! the main listener serve (with each interceptor's time, what `truncate` keeps, how long the
//! upstream took to connect), `promtool check metrics` accepts them, and a real Prometheus
//! (Debian's, started here on a free 127.0.0.1 port) scrapes the admin API with its token and
//! answers queries about them. Responses of `/v1/responses` and `/v1/chat/completions` count
//! their model's tokens and cost, labelled only by the models the config names.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;
use tokio::process::Command;
use toolgate_testkit::fake_llm::{FakeLlm, Script, Turn};

use crate::support::*;

const TOKEN: &str = "prometheus-token-0123456789";

/// The fixture as `fx`, a policy that refuses `env_get`, `truncate` at 2000 bytes,
/// `[gateway] metrics`, and the admin API.
fn config() -> ConfigDir {
    ConfigDir::new(&format!(
        "{}\n[gateway]\nmetrics = true\n\n[admin]\nlisten = \"127.0.0.1:0\"\ntokens = {{ prometheus = \"{TOKEN}\" }}\n\n\
         [[pipeline]]\nkind = \"policy\"\ndefault = \"allow\"\n\
         rules = [{{ tools = [\"env_get\"], decision = \"deny\", reason = \"no\" }}]\n\n\
         [[pipeline]]\nkind = \"truncate\"\nmax_bytes = 2000\n",
        fixture_server("fx", "stdio", None),
    ))
}

/// The value of the series `series` (name and labels exactly as written) in `text`.
fn value_of(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The admin API's base URL, from the gateway's log.
async fn admin_url(gateway: &HttpGateway) -> String {
    let line = gateway.wait_for_log(&["admin API at http://"]).await;
    let at = line.find("http://").expect("url");
    line[at..].split_whitespace().next().expect("url").to_owned()
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

/// `promtool check metrics` on `text`: its exit status and what it said.
async fn promtool(text: &str) -> (bool, String) {
    let mut child = Command::new(toolgate_testkit::deps::promtool())
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start promtool");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(text.as_bytes()).await.expect("write to promtool");
    drop(stdin);
    let output = child.wait_with_output().await.expect("promtool ends");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), said)
}

/// Debian's Prometheus scraping `target`'s `/metrics` every second with `token`, on a free
/// port; killed when dropped.
struct Prometheus {
    _child: tokio::process::Child,
    _dir: tempfile::TempDir,
    url: String,
}

impl Prometheus {
    async fn start(target: &str, token: &str) -> Prometheus {
        let binary = toolgate_testkit::deps::prometheus();
        let dir = tempfile::tempdir().expect("a folder for prometheus");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: toolgate\n    metrics_path: /metrics\n\
                 \x20   authorization:\n      credentials: {token}\n\
                 \x20   static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .expect("write prometheus.yml");
        let http = reqwest::Client::new();
        // The port is free when asked, and may be taken before prometheus binds it: try again.
        for _ in 0..5 {
            let port = {
                let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
                probe.local_addr().expect("its address").port()
            };
            let mut child = Command::new(&binary)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .expect("start prometheus");
            let url = format!("http://127.0.0.1:{port}");
            // Prometheus says nothing on a channel of ours when it is ready: ask /-/ready.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while tokio::time::Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                let ready = http.get(format!("{url}/-/ready")).send().await;
                if ready.is_ok_and(|r| r.status().is_success()) {
                    return Prometheus { _child: child, _dir: dir, url };
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        panic!("prometheus did not start");
    }

    /// The result of `query` once it is not empty (Prometheus scrapes every second).
    async fn query(&self, query: &str) -> Vec<Value> {
        let http = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let answer: Value = http
                .get(
                    url::Url::parse_with_params(
                        &format!("{}/api/v1/query", self.url),
                        [("query", query)],
                    )
                    .expect("a URL"),
                )
                .send()
                .await
                .expect("query prometheus")
                .json()
                .await
                .expect("JSON");
            assert_eq!(answer["status"], "success", "{answer}");
            let result = answer["data"]["result"].as_array().cloned().unwrap_or_default();
            if !result.is_empty() {
                return result;
            }
            assert!(tokio::time::Instant::now() < deadline, "nothing for {query} in 30 s");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

#[tokio::test]
async fn calls_show_in_metrics_that_promtool_and_prometheus_accept() {
    let config = config();
    let gateway = HttpGateway::start(&config.path()).await;
    let admin = admin_url(&gateway).await;
    let client = http_client(&gateway.url).await;
    for text in ["one", "two", "three"] {
        let echo = client
            .call_tool(
                rmcp::model::CallToolRequestParams::new("fx__echo")
                    .with_arguments(object(json!({"text": text}))),
            )
            .await
            .expect("echo");
        assert_eq!(first_text(&echo), text);
    }
    let denied = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("fx__env_get")
                .with_arguments(object(json!({"name": "HOME"}))),
        )
        .await
        .expect("a refusal");
    assert_eq!(denied.is_error, Some(true));
    // A name nobody lists: one `unknown` label, whatever the name.
    let made_up = rmcp::model::CallToolRequestParams::new("fx__secret_customer_4711");
    let _ = client.call_tool(made_up).await;
    // 8 KiB of text: cut to the budget, the whole kept for `toolgate__read_result`.
    let large = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("fx__large")
                .with_arguments(object(json!({"kb": 8}))),
        )
        .await
        .expect("a cut result");
    assert!(first_text(&large).len() < 2000, "cut: {large:?}");

    let http = reqwest::Client::new();
    let refused = http.get(format!("{admin}/metrics")).send().await.expect("GET");
    assert_eq!(refused.status(), 401, "the admin API's /metrics needs a token");
    let scraped =
        http.get(format!("{admin}/metrics")).bearer_auth(TOKEN).send().await.expect("GET /metrics");
    assert_eq!(scraped.status(), 200);
    let content_type = scraped.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
    let text = scraped.text().await.expect("text");
    assert_eq!(
        sorted(&text, "toolgate_requests_total{method=\"tools/call\""),
        sorted_all(vec![
            r#"toolgate_requests_total{method="tools/call",server="fx",tool="fx__echo",outcome="ok"} 3"#,
            r#"toolgate_requests_total{method="tools/call",server="fx",tool="fx__large",outcome="ok"} 1"#,
            r#"toolgate_requests_total{method="tools/call",server="fx",tool="fx__env_get",outcome="denied"} 1"#,
            r#"toolgate_requests_total{method="tools/call",server="",tool="unknown",outcome="rejected"} 1"#,
        ]),
        "{text}"
    );
    for expected in [
        r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="fx__echo",error_type=""} 3"#,
        r#"mcp_client_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="fx__echo",server="fx",error_type=""} 3"#,
        r#"mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="fx__echo",error_type="",le="300"} 3"#,
        r#"toolgate_interceptor_decisions_total{interceptor="policy",phase="request",decision="refused"} 1"#,
        r#"toolgate_upstream_up{server="fx"} 1"#,
        r#"toolgate_sessions_open 1"#,
        r#"toolgate_approvals_waiting 0"#,
        r#"toolgate_pool_connections 0"#,
        // The one result `truncate` cut, kept whole.
        r#"toolgate_spill_entries{interceptor="truncate"} 1"#,
        r#"toolgate_spill_bytes{interceptor="truncate"} 8192"#,
        // fx connected once, when the gateway started.
        r#"toolgate_upstream_connect_seconds_count{server="fx"} 1"#,
        // Every call that reached the pipeline, timed at the policy; the results at truncate.
        r#"toolgate_interceptor_duration_seconds_count{interceptor="policy",phase="request"} 5"#,
        r#"toolgate_interceptor_duration_seconds_count{interceptor="truncate",phase="response"} 4"#,
    ] {
        assert!(text.contains(expected), "{expected} missing from\n{text}");
    }
    // Each decision is timed: as many times for each interceptor and phase as decisions.
    for line in lines(&text, "toolgate_interceptor_decisions_total{") {
        let labels = line.split('}').next().expect("labels");
        let of = labels.split(",decision=").next().expect("interceptor and phase");
        let decided: f64 = lines(&text, &format!("{of},decision="))
            .iter()
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        let timed = of.replace("toolgate_interceptor_decisions_total{", "");
        let count = format!("toolgate_interceptor_duration_seconds_count{{{timed}}}");
        assert_eq!(value_of(&text, &count), Some(decided), "{count} in\n{text}");
    }
    let connect = value_of(&text, r#"toolgate_upstream_connect_seconds_sum{server="fx"}"#);
    assert!(connect.is_some_and(|s| s > 0.0 && s < 60.0), "{connect:?}");
    assert!(!text.contains("secret_customer") && !text.contains("HOME"), "{text}");
    let (accepted, said) = promtool(&text).await;
    assert!(accepted, "promtool check metrics refused it: {said}\n{text}");

    // The main listener serves them too (`[gateway] metrics = true`), and both say ready.
    let main = gateway.url.trim_end_matches("/mcp");
    let text = http.get(format!("{main}/metrics")).send().await.expect("GET").text().await.unwrap();
    assert!(text.contains("toolgate_requests_total{"), "{text}");
    for base in [main, admin.as_str()] {
        let ready = http.get(format!("{base}/readyz")).send().await.expect("GET /readyz");
        assert_eq!(ready.status(), 200);
        assert_eq!(ready.json::<Value>().await.unwrap(), json!({"ready": true}));
    }

    // A real Prometheus scrapes the admin API with the token.
    let target = admin.trim_start_matches("http://");
    let prometheus = Prometheus::start(target, TOKEN).await;
    let up = prometheus.query("up{job=\"toolgate\"} == 1").await;
    assert_eq!(up.len(), 1, "{up:?}");
    let echoes =
        prometheus.query("toolgate_requests_total{tool=\"fx__echo\",outcome=\"ok\"}").await;
    assert_eq!(echoes[0]["metric"]["server"], "fx", "{echoes:?}");
    assert_eq!(echoes[0]["value"][1], "3", "{echoes:?}");
    let timed = prometheus
        .query("mcp_server_operation_duration_seconds_count{gen_ai_tool_name=\"fx__echo\"}")
        .await;
    assert_eq!(timed[0]["value"][1], "3", "{timed:?}");
    let policy = prometheus
        .query("toolgate_interceptor_duration_seconds_count{interceptor=\"policy\"}")
        .await;
    assert_eq!(policy[0]["value"][1], "5", "{policy:?}");
    let kept = prometheus.query("toolgate_spill_bytes").await;
    assert_eq!(kept[0]["value"][1], "8192", "{kept:?}");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn readyz_names_a_required_server_that_is_not_connected() {
    let upstream = FixtureUpstream::start("http").await;
    let config = ConfigDir::new(&fixture_server("fx", "http", Some(&upstream.url)));
    let gateway = HttpGateway::start(&config.path()).await;
    let main = gateway.url.trim_end_matches("/mcp").to_owned();
    let http = reqwest::Client::new();
    let ready = http.get(format!("{main}/readyz")).send().await.expect("GET /readyz");
    assert_eq!(ready.status(), 200);
    // Not served on the main listener without `[gateway] metrics`.
    let metrics = http.get(format!("{main}/metrics")).send().await.expect("GET /metrics");
    assert_eq!(metrics.status(), 404);
    drop(upstream);
    // The gateway notices when its next request to the server fails.
    let client = http_client(&gateway.url).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let _ = client
            .call_tool(
                rmcp::model::CallToolRequestParams::new("fx__echo")
                    .with_arguments(object(json!({"text": "x"}))),
            )
            .await;
        let ready = http.get(format!("{main}/readyz")).send().await.expect("GET /readyz");
        if ready.status() == 503 {
            let body: Value = ready.json().await.expect("JSON");
            assert_eq!(body["ready"], false);
            assert_eq!(body["not_connected"], json!(["fx"]), "{body}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "still ready 30 s after fx went away");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The fake model as `[agent]`'s provider (model `unpriced-default`, which the price table
/// does not know), and `[llm.models.cheap]`, which is gpt-4o-mini at the provider.
fn llm_config(fake: &FakeLlm) -> ConfigDir {
    ConfigDir::new(&format!(
        "{}\n[gateway]\nllm_api = true\nmetrics = true\n\n\
         [agent]\nprovider = \"compatible\"\nbase_url = {}\nmodel = \"unpriced-default\"\n\n\
         [llm]\nstore = \"off\"\n\n[llm.models.cheap]\nmodel = \"gpt-4o-mini\"\n",
        fixture_server("fx", "stdio", None),
        toml_str(&fake.base_url()),
    ))
}

#[tokio::test]
async fn model_tokens_and_their_cost_are_counted_by_the_models_the_config_names() {
    let turns: Vec<Turn> =
        (0..4).map(|i| Turn::text(format!("answer {i}")).with_usage(1000, 500)).collect();
    let fake = FakeLlm::start(Script::turns(turns)).await.expect("the fake LLM starts");
    let config = llm_config(&fake);
    let gateway = HttpGateway::start(&config.path()).await;
    let main = gateway.url.trim_end_matches("/mcp").to_owned();
    let http = reqwest::Client::new();
    let responses = |model: &str| json!({"model": model, "input": "hello", "store": false});
    for (path, body) in [
        // A configured name, priced as the provider's gpt-4o-mini.
        ("responses", responses("cheap")),
        // A name the request made up, served by [agent]'s provider: priced as gpt-4o, and
        // labelled `other`.
        ("responses", responses("gpt-4o")),
        // [agent]'s own model, which has no price: counted, not priced.
        ("responses", responses("unpriced-default")),
        (
            "chat/completions",
            json!({"model": "cheap", "messages": [{"role": "user", "content": "hi"}]}),
        ),
    ] {
        let answer = http.post(format!("{main}/v1/{path}")).json(&body).send().await.expect("POST");
        assert_eq!(
            answer.status(),
            200,
            "{path} {body}: {}",
            answer.text().await.unwrap_or_default()
        );
    }
    let text = http.get(format!("{main}/metrics")).send().await.expect("GET").text().await.unwrap();
    for expected in [
        r#"toolgate_llm_responses_total{model="cheap",status="completed"} 2"#,
        r#"toolgate_llm_responses_total{model="other",status="completed"} 1"#,
        r#"toolgate_llm_responses_total{model="unpriced-default",status="completed"} 1"#,
        r#"toolgate_llm_tokens_total{model="cheap",direction="input"} 2000"#,
        r#"toolgate_llm_tokens_total{model="cheap",direction="output"} 1000"#,
        "# TYPE toolgate_llm_cost_usd_total counter",
    ] {
        assert!(text.contains(expected), "{expected} missing from\n{text}");
    }
    // gpt-4o-mini: 0.15 and 0.60 USD per million input and output tokens; gpt-4o: 2.50, 10.
    let cost =
        |model: &str| value_of(&text, &format!("toolgate_llm_cost_usd_total{{model=\"{model}\"}}"));
    let cheap = cost("cheap").expect("cheap is priced");
    assert!((cheap - 2.0 * (1000.0 * 0.15 + 500.0 * 0.60) / 1e6).abs() < 1e-12, "{cheap}");
    let other = cost("other").expect("gpt-4o is priced");
    assert!((other - (1000.0 * 2.50 + 500.0 * 10.0) / 1e6).abs() < 1e-12, "{other}");
    assert_eq!(cost("unpriced-default"), None, "no made-up price:\n{text}");
    assert!(!text.contains("gpt-4o"), "a model a request named is no label:\n{text}");
    let (accepted, said) = promtool(&text).await;
    assert!(accepted, "promtool check metrics refused it: {said}\n{text}");
}
