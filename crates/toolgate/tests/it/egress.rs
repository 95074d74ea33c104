//! MCP traffic through a real proxy: Debian's tinyproxy, started here on a free 127.0.0.1 port
//! with a config written here. The upstream is the fixture, served in this process behind a
//! relay that keeps the head of every request it is sent: a request that came through the
//! proxy carries tinyproxy's `Via` header, one that came direct does not. `toolgate call` runs
//! as a process with the proxy variables it is given and no others.
//!
//! The upstream is at 127.0.0.1 on purpose: reqwest makes no exception for loopback addresses
//! (only `NO_PROXY` does), so what goes direct here goes direct because toolgate said so.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;
use toolgate_testkit::FixtureOptions;
use toolgate_testkit::tinyproxy::Tinyproxy;

use crate::support::{ConfigDir, toolgate_bin};

/// Every variable a proxy may come from; each run of toolgate starts without them.
const PROXY_VARS: &[&str] = &[
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// A proxy address where nothing listens: a request sent there fails.
const DEAD_PROXY: &str = "http://127.0.0.1:1";

/// The fixture on streamable HTTP, in this process, behind a relay that keeps the head of each
/// connection's first request.
struct Upstream {
    url: String,
    heads: Arc<Mutex<Vec<String>>>,
    stop: CancellationToken,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Upstream {
    async fn start() -> Upstream {
        let stop = CancellationToken::new();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the fixture");
        let fixture = listener.local_addr().expect("the fixture's address");
        let shutdown = stop.clone();
        tokio::spawn(async move {
            toolgate_testkit::serve_http(listener, shutdown, FixtureOptions::default())
                .await
                .expect("the fixture serves");
        });
        let relay = TcpListener::bind("127.0.0.1:0").await.expect("bind the relay");
        let address = relay.local_addr().expect("the relay's address");
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (kept, stopped) = (heads.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let (client, _) = tokio::select! {
                    () = stopped.cancelled() => return,
                    accepted = relay.accept() => accepted.expect("accept"),
                };
                let (kept, stopped) = (kept.clone(), stopped.clone());
                tokio::spawn(async move {
                    tokio::select! {
                        () = stopped.cancelled() => {}
                        () = relay_one(client, fixture, &kept) => {}
                    }
                });
            }
        });
        Upstream { url: format!("http://{address}/mcp"), heads, stop }
    }

    /// The heads of the requests that reached the fixture, lowercased.
    fn heads(&self) -> Vec<String> {
        self.heads.lock().expect("the heads").clone()
    }
}

/// Reads the head of the first request on `client`, keeps it, then joins the connection to the
/// fixture's.
async fn relay_one(
    mut client: TcpStream,
    target: std::net::SocketAddr,
    heads: &Mutex<Vec<String>>,
) {
    let mut head = Vec::new();
    let mut chunk = [0; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match client.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    heads.lock().expect("the heads").push(String::from_utf8_lossy(&head).to_ascii_lowercase());
    let mut server = TcpStream::connect(target).await.expect("connect to the fixture");
    if server.write_all(&head).await.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
    }
}

/// `toolgate call fx__echo text=<text>` with `config`, the proxy variables `vars` and no others.
async fn call(config: &ConfigDir, vars: &[(&str, &str)], text: &str) -> std::process::Output {
    let mut command = Command::new(toolgate_bin());
    command
        .args(["call", "fx__echo", &format!("text={text}"), "--config"])
        .arg(config.path())
        .stdin(Stdio::null())
        .env_remove("TOOLGATE_CONFIG");
    for var in PROXY_VARS {
        command.env_remove(var);
    }
    command.envs(vars.iter().copied());
    tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("toolgate finishes in time")
        .expect("run toolgate")
}

/// The config of the fixture server `fx` at `url`, with `server` lines in its table and
/// `top` before it. `pool = false`: tinyproxy closes its client's connection after each
/// answer without saying so (no `Connection: close`), and a request sent on it meanwhile
/// fails.
fn config(top: &str, url: &str, server: &str) -> ConfigDir {
    ConfigDir::new(&format!(
        "{top}\n[servers.fx]\nurl = \"{url}\"\ntransport = \"streamable-http\"\nrequired = true\n\
         startup_timeout = \"20s\"\npool = false\n{server}\n"
    ))
}

/// Runs the call and checks that it answered; returns whether its requests came through
/// tinyproxy (all of them, or none: a mix fails).
async fn through_proxy(upstream: &Upstream, config: &ConfigDir, vars: &[(&str, &str)]) -> bool {
    let output = call(config, vars, "over the wire").await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "toolgate failed:\n{stderr}");
    assert_eq!(stdout.trim(), "over the wire", "{stderr}");
    let heads = upstream.heads();
    assert!(!heads.is_empty(), "no request reached the fixture");
    let via = heads.iter().filter(|head| head.contains("\r\nvia: ") && head.contains("tinyproxy"));
    let via = via.count();
    assert!(
        via == 0 || via == heads.len(),
        "some requests through the proxy, some not: {heads:#?}"
    );
    via > 0
}

#[tokio::test]
async fn mcp_traffic_takes_the_proxy_of_the_proxy_table_over_the_variables() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let proxy = Tinyproxy::start(dir.path(), "").await;
    let upstream = Upstream::start().await;
    let config = config(&format!("[proxy]\nhttp = \"{}\"", proxy.url()), &upstream.url, "");
    // The variable names a proxy where nothing listens: `[proxy]` is used instead.
    assert!(through_proxy(&upstream, &config, &[("HTTP_PROXY", DEAD_PROXY)]).await);
    proxy.saw(&format!("POST {}", upstream.url)).await;
}

#[tokio::test]
async fn mcp_traffic_takes_the_proxy_of_the_variables_without_a_proxy_table() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let proxy = Tinyproxy::start(dir.path(), "").await;
    for var in ["HTTP_PROXY", "http_proxy", "ALL_PROXY"] {
        let upstream = Upstream::start().await;
        let config = config("", &upstream.url, "");
        assert!(through_proxy(&upstream, &config, &[(var, proxy.url())]).await, "{var}");
        proxy.saw(&format!("POST {}", upstream.url)).await;
    }
    // And NO_PROXY is read with them.
    let upstream = Upstream::start().await;
    let config = config("", &upstream.url, "");
    let vars = [("HTTP_PROXY", DEAD_PROXY), ("NO_PROXY", "127.0.0.1")];
    assert!(!through_proxy(&upstream, &config, &vars).await);
}

#[tokio::test]
async fn a_server_proxy_wins_over_the_proxy_table() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let proxy = Tinyproxy::start(dir.path(), "").await;
    let upstream = Upstream::start().await;
    let config = config(
        &format!("[proxy]\nhttp = \"{DEAD_PROXY}\""),
        &upstream.url,
        &format!("proxy = \"{}\"", proxy.url()),
    );
    assert!(through_proxy(&upstream, &config, &[("HTTP_PROXY", DEAD_PROXY)]).await);
    proxy.saw(&format!("POST {}", upstream.url)).await;
}

#[tokio::test]
async fn no_proxy_hosts_and_proxy_false_go_direct() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let proxy = Tinyproxy::start(dir.path(), "").await;

    let upstream = Upstream::start().await;
    let table =
        format!("[proxy]\nhttp = \"{}\"\nno_proxy = [\"localhost\", \"127.0.0.1\"]", proxy.url());
    let listed = config(&table, &upstream.url, "");
    assert!(!through_proxy(&upstream, &listed, &[]).await);
    assert!(!proxy.mentions(&upstream.url));

    let upstream = Upstream::start().await;
    let table =
        format!("[proxy]\nhttp = \"{}\"\nno_proxy = \"10.0.0.0/8, 127.0.0.0/8\"", proxy.url());
    let range = config(&table, &upstream.url, "");
    assert!(!through_proxy(&upstream, &range, &[]).await);

    // `proxy = false`: neither `[proxy]` nor the variables.
    let upstream = Upstream::start().await;
    let direct =
        config(&format!("[proxy]\nhttp = \"{DEAD_PROXY}\""), &upstream.url, "proxy = false");
    assert!(!through_proxy(&upstream, &direct, &[("HTTP_PROXY", DEAD_PROXY)]).await);
    assert!(!proxy.mentions(&upstream.url));
}

#[tokio::test]
async fn proxy_credentials_are_sent_and_never_shown() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let proxy = Tinyproxy::start(dir.path(), "BasicAuth toolgate s3cret-pw").await;
    let upstream = Upstream::start().await;
    let with_password = proxy.url().replace("http://", "http://toolgate:${PROXY_PW}@");
    let good = config(&format!("[proxy]\nhttp = \"{with_password}\""), &upstream.url, "");
    let vars = [("PROXY_PW", "s3cret-pw"), ("TOOLGATE_LOG", "debug")];
    assert!(through_proxy(&upstream, &good, &vars).await);

    // A wrong password: the proxy refuses (tinyproxy answers 401, not 407), and nothing shows
    // the password given, not even the debug log.
    let upstream = Upstream::start().await;
    let wrong = config(&format!("[proxy]\nhttp = \"{with_password}\""), &upstream.url, "");
    let output = call(&wrong, &[("PROXY_PW", "wrong-pw"), ("TOOLGATE_LOG", "debug")], "x").await;
    assert!(!output.status.success());
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(shown.contains("required server `fx` did not start"), "{shown}");
    assert!(!shown.contains("wrong-pw"), "{shown}");
    assert!(upstream.heads().is_empty());
}

/// `toolgate run` against the fake model at `fake`, with `config` (written in `dir`) and the
/// proxy variables `vars` and no others.
async fn run_agent(
    dir: &Path,
    config: &str,
    fake: &toolgate_testkit::fake_llm::FakeLlm,
    vars: &[(&str, &str)],
) -> std::process::Output {
    let file = dir.join("agent.toml");
    std::fs::write(&file, config).expect("write the config");
    let mut command = Command::new(toolgate_bin());
    command
        .args(["run", "--provider", "compatible", "--model", "m", "--no-save"])
        .args(["--base-url", &fake.base_url(), "--config"])
        .arg(&file)
        .arg("hello")
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env_remove("TOOLGATE_CONFIG")
        .env_remove("TOOLGATE_MODEL")
        .stdin(Stdio::null());
    for var in PROXY_VARS {
        command.env_remove(var);
    }
    command.envs(vars.iter().copied());
    tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("toolgate finishes in time")
        .expect("run toolgate")
}

#[tokio::test]
async fn the_agent_model_takes_the_agent_proxy_not_the_proxy_table() {
    use toolgate_testkit::fake_llm::{FakeLlm, Script, Turn};
    let dir = tempfile::tempdir().expect("a temporary directory");
    let proxy = Tinyproxy::start(dir.path(), "").await;
    let fake = FakeLlm::start(Script::always(Turn::text("answered"))).await.expect("the fake LLM");
    let via = |fake: &FakeLlm| {
        let requests = fake.requests();
        assert!(!requests.is_empty(), "the model was not asked");
        requests.iter().all(|r| r.header("via").is_some_and(|via| via.contains("tinyproxy")))
    };

    let config = format!("[agent]\nproxy = \"{}\"\n", proxy.url());
    let output = run_agent(dir.path(), &config, &fake, &[("HTTP_PROXY", DEAD_PROXY)]).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains("answered"));
    assert!(via(&fake), "the model's requests did not come through the proxy");

    // `proxy = false`: not the variables', and `[proxy]` is not the model's.
    let fake = FakeLlm::start(Script::always(Turn::text("answered"))).await.expect("the fake LLM");
    let config = format!("[proxy]\nhttp = \"{}\"\n[agent]\nproxy = false\n", proxy.url());
    let output = run_agent(dir.path(), &config, &fake, &[("HTTP_PROXY", DEAD_PROXY)]).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!via(&fake));
}
