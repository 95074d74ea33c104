//! The HTTP connections of both listeners (the MCP endpoint and the admin API), bounded so that
//! slow or silent clients cannot hold the gateway: at most so many connections at once (one
//! more is closed as soon as it is accepted), a deadline for a request's head (from the moment
//! the connection is ready for one) and for its whole body, and a shutdown that stops waiting
//! when its caller says so.
//!
//! Written by hand over hyper rather than with `axum::serve`, because `axum::serve` has none of
//! these: no timer (so hyper's header timeout never runs), no way to cap connections, and a
//! graceful shutdown that waits for every connection to close, for ever if a client sent half
//! a request. Only HTTP/1 is served: hyper's header timeout is an HTTP/1 setting, and the
//! automatic choice between HTTP/1 and HTTP/2 first waits, with no deadline, for the bytes
//! that tell them apart. MCP clients and browsers speak HTTP/1.1 to a plain-text endpoint.

use std::error::Error as StdError;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt as _;

/// How many connections a listener keeps open at once by default: room for every session's
/// standalone stream and its requests, below the usual limit of 1024 open files per process.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// How long a client has by default to send a request's head, from the moment the connection
/// is ready for one (so also how long an unused kept-alive connection stays open).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client has by default to send a request's whole body, once its head arrived.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Bounds on the connections of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections open at once; one more is closed at once.
    pub max_connections: usize,
    /// Time to send a request's head.
    pub header_timeout: Duration,
    /// Time to send a request's body.
    pub body_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
        }
    }
}

/// Serves `app` on `listener` until `stop` fires. Then it accepts no more connections, asks
/// those open to close after their request (an idle one closes at once), and waits for them
/// until `kill` fires, which drops whatever is left; so does dropping this future.
pub(crate) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnectionLimits,
    stop: CancellationToken,
    kill: CancellationToken,
) {
    let _kill_when_dropped = kill.clone().drop_guard();
    let open = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let refusing = AtomicBool::new(false);
    let connections = TaskTracker::new();
    loop {
        let (tcp, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    accept_failed(&error, &stop).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            // Closed at once: a client past the cap learns it now instead of waiting in the
            // backlog, and holds nothing.
            if !refusing.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    most = limits.max_connections,
                    "refusing connections: as many are open as may be"
                );
            }
            drop(tcp);
            continue;
        };
        refusing.store(false, Ordering::Relaxed);
        set_no_delay(&tcp);
        let (app, stop, kill) = (app.clone(), stop.clone(), kill.clone());
        connections.spawn(async move {
            let _open = permit;
            connection(tcp, remote, app, limits, stop, kill).await;
        });
    }
    drop(listener);
    connections.close();
    tokio::select! {
        () = connections.wait() => {}
        () = kill.cancelled() => {
            tracing::debug!(left = connections.len(), "closing the connections still open");
        }
    }
}

/// One connection, until it ends, or `kill`.
async fn connection(
    tcp: TcpStream,
    remote: SocketAddr,
    app: axum::Router,
    limits: ConnectionLimits,
    stop: CancellationToken,
    kill: CancellationToken,
) {
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let mut request = request.map(|body| Body::new(Deadline::new(body, limits.body_timeout)));
        request.extensions_mut().insert(ConnectInfo(remote));
        app.clone().oneshot(request)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    let served = builder.serve_connection(TokioIo::new(tcp), service);
    let mut served = std::pin::pin!(served);
    tokio::select! {
        ended = served.as_mut() => return log_end(remote, ended),
        () = stop.cancelled() => {}
        () = kill.cancelled() => return,
    }
    // Shutdown: the connection closes after the request it is serving (now, when idle).
    served.as_mut().graceful_shutdown();
    tokio::select! {
        ended = served.as_mut() => log_end(remote, ended),
        () = kill.cancelled() => {}
    }
}

fn log_end(remote: SocketAddr, ended: Result<(), hyper::Error>) {
    if let Err(error) = ended {
        tracing::debug!(%remote, %error, "a connection ended with an error");
    }
}

/// An accept that failed: the next one may work (the client gave up), or the process is out
/// of file descriptors and should not spin while it is.
async fn accept_failed(error: &std::io::Error, stop: &CancellationToken) {
    use std::io::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::Interrupted
    ) {
        return;
    }
    tracing::warn!(%error, "cannot accept a connection; trying again in a moment");
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(250)) => {}
        () = stop.cancelled() => {}
    }
}

fn set_no_delay(tcp: &TcpStream) {
    // An answer goes out as several small writes (an SSE stream: priming event, message, end);
    // with Nagle's algorithm on, a client that keeps its connection open waits for its own
    // delayed ACK (about 40 ms) on every call.
    if let Err(error) = tcp.set_nodelay(true) {
        tracing::debug!(%error, "cannot set TCP_NODELAY");
    }
}

/// A request body that fails once its time is up, however it arrives: all of it must come
/// within the deadline, so a client cannot hold a request open by sending a byte now and then.
/// (tower-http's body timeout restarts with every frame, which such a client passes.)
struct Deadline {
    body: Incoming,
    /// When it must have arrived.
    due: Instant,
    /// The timer, set on the first read (a body nobody reads costs nothing).
    timer: Option<Pin<Box<Sleep>>>,
    took: Duration,
}

impl Deadline {
    fn new(body: Incoming, took: Duration) -> Deadline {
        Deadline { body, due: Instant::now() + took, timer: None, took }
    }
}

/// A request body that did not arrive in time.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {}", toolgate_core::duration::format(*.0))]
pub(crate) struct BodyTimedOut(Duration);

impl HttpBody for Deadline {
    type Data = Bytes;
    type Error = Box<dyn StdError + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        let due = this.due;
        let timer = this.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut(this.took))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Whether reading a body failed because it did not arrive in time.
pub(crate) fn is_body_timeout(error: &(dyn StdError + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if error.is::<BodyTimedOut>() {
            return true;
        }
        cause = error.source();
    }
    false
}

#[cfg(test)]
mod tests;
