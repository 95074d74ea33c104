//! Slow clients cannot hold the gateway, on either listener (`/mcp` and the admin API): a
//! request's head and body must arrive in time, connections past the most are closed at once,
//! and a request sent halfway does not hold the shutdown (toolgate and its children are gone
//! within the grace period).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::time::Instant;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::support::*;

const TOKEN: &str = "ops-token-0123456789";

/// The grace period of a shutdown (`toolgate_server::DEFAULT_GRACE`).
const GRACE: Duration = Duration::from_secs(10);

/// toolgate serving the fixture, with the admin API, and `gateway` keys added.
async fn gateway_with(gateway: &str) -> (ConfigDir, HttpGateway, SocketAddr, SocketAddr) {
    let config = ConfigDir::new(&format!(
        "[gateway]\n{gateway}\n{}\n[admin]\nlisten = \"127.0.0.1:0\"\ntokens = {{ ops = \"{TOKEN}\" }}\n",
        fixture_server("fx", "stdio", None)
    ));
    let running = HttpGateway::start(&config.path()).await;
    let mcp = address_of(&running.url);
    let admin_line = running.wait_for_log(&["admin API at http://"]).await;
    let admin = address_of(&admin_line[admin_line.find("http://").expect("url")..]);
    (config, running, mcp, admin)
}

/// The address in `http://ADDRESS/...`.
fn address_of(url: &str) -> SocketAddr {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let end = rest.find(['/', ' ']).unwrap_or(rest.len());
    rest[..end].parse().expect("an address")
}

/// Everything the server sends until it closes the connection.
async fn read_all(tcp: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = tcp.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// A connection that sent `bytes` and nothing more.
async fn sent(address: SocketAddr, bytes: &str) -> TcpStream {
    let mut tcp = TcpStream::connect(address).await.expect("connect");
    tcp.write_all(bytes.as_bytes()).await.expect("write");
    tcp
}

fn post_head(path: &str, length: usize) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: {length}\r\n\r\n"
    )
}

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // `pid (comm) state ppid ...`; the command may hold spaces and parentheses.
        let after = &stat[stat.rfind(')').map_or(0, |at| at + 1)..];
        let parent = after.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
        if parent == Some(pid) {
            children.push(child);
        }
    }
    children
}

/// Whether process `pid` still runs (a zombie waiting to be reaped does not).
fn runs(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let after = &stat[stat.rfind(')').map_or(0, |at| at + 1)..];
        after.split_whitespace().next() != Some("Z")
    })
}

#[tokio::test]
async fn a_request_sent_halfway_does_not_hold_the_shutdown() {
    // Timeouts far longer than the test: only the shutdown may end these connections.
    let (_config, gateway, mcp, admin) =
        gateway_with("header_timeout = \"10m\"\nbody_timeout = \"10m\"").await;
    let pid = gateway.pid();
    let children = children_of(pid);
    assert!(!children.is_empty(), "the fixture runs as toolgate's child");
    let mut held = Vec::new();
    for (address, path) in [(mcp, "/mcp"), (admin, "/approvals/x")] {
        held.push(sent(address, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le").await);
        held.push(sent(address, &(post_head(path, 100) + "{\"jsonrpc\"")).await);
        held.push(TcpStream::connect(address).await.expect("an idle connection"));
    }
    // Each listener has accepted them once it answers on another connection.
    for address in [mcp, admin] {
        let mut probe =
            sent(address, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                .await;
        assert!(read_all(&mut probe).await.ends_with("ok\n"));
    }

    let started = Instant::now();
    let bound = GRACE + Duration::from_secs(5);
    let status = tokio::time::timeout(bound, gateway.terminate())
        .await
        .unwrap_or_else(|_| panic!("toolgate still runs {bound:?} after SIGTERM"));
    assert!(status.success(), "{status:?}");
    eprintln!("toolgate exited {:?} after SIGTERM", started.elapsed());
    let deadline = Instant::now() + Duration::from_secs(5);
    while children.iter().any(|child| runs(*child)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(children.iter().all(|child| !runs(*child)), "toolgate's children are gone");
    for mut connection in held {
        let _ = tokio::time::timeout(Duration::from_secs(5), read_all(&mut connection)).await;
    }
}

#[tokio::test]
async fn heads_and_bodies_sent_too_slowly_are_cut_off_on_both_listeners() {
    let (_config, gateway, mcp, admin) =
        gateway_with("header_timeout = \"1s\"\nbody_timeout = \"2s\"").await;
    for (address, path) in [(mcp, "/mcp"), (admin, "/approvals/x")] {
        // Half a head: the connection closes once the head is late.
        let started = Instant::now();
        let mut half = sent(address, "GET /healthz HTTP/1.1\r\nHost: 127.").await;
        let answer = tokio::time::timeout(Duration::from_secs(10), read_all(&mut half))
            .await
            .expect("closed, not left open");
        assert!(!answer.contains(" 200 "), "{path}: {answer}");
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(5), "{took:?}");

        // A body a byte at a time: refused once the whole of it is late, whatever the pace.
        let started = Instant::now();
        let mut slow = sent(address, &post_head(path, 200)).await;
        let trickle = async {
            for _ in 0..200 {
                if slow.write_all(b" ").await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(4), trickle).await;
        let answer = tokio::time::timeout(Duration::from_secs(10), read_all(&mut slow))
            .await
            .expect("answered and closed");
        let took = started.elapsed();
        assert!(took < Duration::from_secs(6), "{path}: {took:?}");
        if path == "/mcp" {
            assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        } else {
            // The admin API's JSON extractor says it could not read the body.
            assert!(answer.starts_with("HTTP/1.1 4"), "{answer}");
        }
        let mut probe =
            sent(address, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                .await;
        assert!(read_all(&mut probe).await.ends_with("ok\n"), "{path}: others are served");
    }
    assert!(gateway.terminate().await.success());
}

#[tokio::test]
async fn connections_past_the_most_are_closed_on_both_listeners() {
    let (_config, gateway, mcp, admin) = gateway_with("max_connections = 3").await;
    for address in [mcp, admin] {
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(TcpStream::connect(address).await.expect("connect"));
        }
        let mut refused =
            sent(address, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                .await;
        let answer = tokio::time::timeout(Duration::from_secs(10), read_all(&mut refused))
            .await
            .expect("closed at once");
        assert_eq!(answer, "", "{address}: nothing served past the most");
        held.pop();
        let served = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let mut probe = sent(
                    address,
                    "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                )
                .await;
                if read_all(&mut probe).await.ends_with("ok\n") {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(served.is_ok(), "{address}: a place that freed is taken again");
    }
    gateway.wait_for_log(&["refusing connections"]).await;
    assert!(gateway.terminate().await.success());
}
