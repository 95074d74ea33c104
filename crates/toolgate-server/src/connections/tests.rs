//! Tests of the connection bounds, over real sockets on 127.0.0.1.

use std::time::Duration;

use axum::response::IntoResponse as _;
use http::StatusCode;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use super::*;

/// `GET /` answers `ok`; `POST /` reads the body and answers with its length, or 408 when it
/// came too slowly.
fn app() -> axum::Router {
    async fn read(body: Body) -> axum::response::Response {
        match axum::body::to_bytes(body, 1 << 20).await {
            Ok(bytes) => bytes.len().to_string().into_response(),
            Err(error) if is_body_timeout(&error) => StatusCode::REQUEST_TIMEOUT.into_response(),
            Err(_) => StatusCode::BAD_REQUEST.into_response(),
        }
    }
    axum::Router::new().route("/", axum::routing::get(|| async { "ok" }).post(read))
}

struct Served {
    address: SocketAddr,
    stop: CancellationToken,
    kill: CancellationToken,
    task: JoinHandle<()>,
}

async fn serve_with(limits: ConnectionLimits) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let (stop, kill) = (CancellationToken::new(), CancellationToken::new());
    let task = tokio::spawn(serve(listener, app(), limits, stop.clone(), kill.clone()));
    Served { address, stop, kill, task }
}

fn limits(max_connections: usize, header: u64, body: u64) -> ConnectionLimits {
    ConnectionLimits {
        max_connections,
        header_timeout: Duration::from_secs(header),
        body_timeout: Duration::from_secs(body),
    }
}

/// Everything the server sends until it closes the connection.
async fn read_all(tcp: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = tcp.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

async fn get(address: SocketAddr) -> String {
    let mut tcp = TcpStream::connect(address).await.expect("connect");
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").await.expect("write");
    read_all(&mut tcp).await
}

#[tokio::test(start_paused = true)]
async fn a_head_sent_halfway_is_dropped_at_its_deadline() {
    let served = serve_with(limits(8, 10, 30)).await;
    let mut tcp = TcpStream::connect(served.address).await.expect("connect");
    tcp.write_all(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Le").await.expect("write");
    let started = Instant::now();
    read_all(&mut tcp).await;
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(10) && took < Duration::from_secs(11), "{took:?}");
    assert!(get(served.address).await.ends_with("ok"), "others are still served");
}

#[tokio::test(start_paused = true)]
async fn a_body_that_comes_too_slowly_is_cut_off() {
    let served = serve_with(limits(8, 10, 5)).await;
    let mut tcp = TcpStream::connect(served.address).await.expect("connect");
    tcp.write_all(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n")
        .await
        .expect("head");
    let started = Instant::now();
    // A byte a second, each well within any timeout per read, until the server stops taking
    // them.
    for _ in 0..100 {
        if started.elapsed() > Duration::from_secs(7) || tcp.write_all(b"x").await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let answer = read_all(&mut tcp).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(8));
    let mut quick = TcpStream::connect(served.address).await.expect("connect");
    quick
        .write_all(
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
        )
        .await
        .expect("write");
    assert!(read_all(&mut quick).await.ends_with("\r\n\r\n3"), "a body in time is read");
}

#[tokio::test]
async fn connections_past_the_most_are_closed_at_once() {
    let served = serve_with(limits(2, 60, 60)).await;
    let first = TcpStream::connect(served.address).await.expect("connect");
    let _second = TcpStream::connect(served.address).await.expect("connect");
    // Accepted in order: once a request on a third connection is answered or refused, the
    // first two hold their places.
    let mut third = TcpStream::connect(served.address).await.expect("connect");
    let _ = third.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").await;
    let refused = tokio::time::timeout(Duration::from_secs(10), read_all(&mut third))
        .await
        .expect("closed at once, not left waiting");
    assert_eq!(refused, "", "nothing served past the most");
    drop(first);
    let served_again = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if get(served.address).await.ends_with("ok") {
                break;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(served_again.is_ok(), "a place that freed is taken again");
}

#[tokio::test]
async fn shutdown_closes_idle_connections_and_kill_the_rest() {
    let served = serve_with(limits(8, 600, 600)).await;
    // Kept alive after one request: idle.
    let mut idle = TcpStream::connect(served.address).await.expect("connect");
    idle.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").await.expect("write");
    let mut answer = Vec::new();
    while !answer.ends_with(b"ok") {
        let mut chunk = [0; 512];
        let n = idle.read(&mut chunk).await.expect("read");
        assert!(n > 0, "answered before closing");
        answer.extend_from_slice(&chunk[..n]);
    }
    let mut half = TcpStream::connect(served.address).await.expect("connect");
    half.write_all(b"GET / HTTP/1.1\r\nHo").await.expect("write");
    // Accepted before the stop.
    assert!(get(served.address).await.ends_with("ok"));
    served.stop.cancel();
    let closed = tokio::time::timeout(Duration::from_secs(10), read_all(&mut idle)).await;
    assert_eq!(closed.ok().as_deref(), Some(""), "an idle connection closes at the stop");
    assert!(!served.task.is_finished(), "a request on its way is waited for");
    assert!(TcpStream::connect(served.address).await.is_err(), "no more connections");
    served.kill.cancel();
    tokio::time::timeout(Duration::from_secs(10), served.task)
        .await
        .expect("serving ends at the kill")
        .expect("no panic");
    assert_eq!(read_all(&mut half).await, "", "dropped");
}
