//! Debian's HAProxy as a test's load balancer in front of several gateways: a config written to
//! a temporary folder (HTTP mode, `balance roundrobin`, no stickiness), its frontend on a free
//! 127.0.0.1 port, in the foreground (`-W -db`), in a process group of its own that is killed
//! when dropped, its log (every request, and every backend going down or up) kept for the test
//! to look at.
//!
//! What it does with a backend that fails ([`config`]): a health check (`GET /healthz`) every
//! 250 ms takes a backend out after one failure and back after one success, and a request whose
//! connection a backend refuses is retried, each retry on another backend (`retries 2`,
//! `option redispatch 1`), so that a request sent before the check noticed a dead backend still
//! reaches a live one. Only a failed connection is retried (HAProxy's default `retry-on
//! conn-failure`): a request that reached a backend is never sent twice.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

/// How long HAProxy may take to start, or a backend to be seen down, on a busy machine.
const PATIENCE: Duration = Duration::from_secs(30);

/// HAProxy, running until dropped, and what it has logged.
pub struct Haproxy {
    child: Child,
    _dir: tempfile::TempDir,
    url: String,
    log: Arc<tokio::sync::watch::Sender<Vec<String>>>,
}

/// The config of a load balancer on `port` in front of `backends` (named `r1`, `r2`, ... in
/// that order), logging to stdout.
pub fn config(port: u16, backends: &[SocketAddr]) -> String {
    let servers: String = backends
        .iter()
        .enumerate()
        .map(|(i, at)| format!("    server r{} {at} check inter 250ms fall 1 rise 1\n", i + 1))
        .collect();
    format!(
        "global\n\
         \x20   log stdout format raw local0 info\n\
         defaults\n\
         \x20   mode http\n\
         \x20   log global\n\
         \x20   option httplog\n\
         \x20   option log-health-checks\n\
         \x20   retries 2\n\
         \x20   option redispatch 1\n\
         \x20   timeout connect 2s\n\
         \x20   timeout client 120s\n\
         \x20   timeout server 120s\n\
         frontend mcp\n\
         \x20   bind 127.0.0.1:{port}\n\
         \x20   default_backend replicas\n\
         backend replicas\n\
         \x20   balance roundrobin\n\
         \x20   option httpchk GET /healthz\n\
         {servers}"
    )
}

impl Haproxy {
    /// Starts HAProxy on a free port in front of `backends`.
    ///
    /// # Panics
    ///
    /// When HAProxy is not installed (saying how to install it), or does not start.
    pub async fn start(backends: &[SocketAddr]) -> Haproxy {
        let binary = crate::deps::haproxy();
        let dir = tempfile::tempdir().expect("a folder for haproxy's config");
        // The port is free when asked, and may be taken before HAProxy binds it: try again.
        for _ in 0..5 {
            let port = {
                let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
                probe.local_addr().expect("its address").port()
            };
            let path = dir.path().join("haproxy.cfg");
            std::fs::write(&path, config(port, backends)).expect("write haproxy's config");
            // `-W -db`: the master and its worker in the foreground; the master says "Loading
            // success." once the worker listens.
            let mut child = Command::new(&binary)
                .args(["-W", "-db", "-f"])
                .arg(&path)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .process_group(0)
                .spawn()
                .expect("start haproxy");
            let log = Arc::new(tokio::sync::watch::Sender::new(Vec::<String>::new()));
            for stream in [
                Box::new(child.stdout.take().expect("stdout"))
                    as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
                Box::new(child.stderr.take().expect("stderr")),
            ] {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut lines = BufReader::new(stream).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        log.send_modify(|log| log.push(line));
                    }
                    log.send_modify(|log| log.push("(exited)".to_owned()));
                });
            }
            let mut seen = log.subscribe();
            let started = tokio::time::timeout(
                PATIENCE,
                seen.wait_for(|log| {
                    log.iter().any(|l| l.contains("Loading success") || l == "(exited)")
                }),
            )
            .await
            .expect("haproxy starts or exits in time")
            .expect("the log")
            .iter()
            .any(|l| l.contains("Loading success"));
            if started {
                let url = format!("http://127.0.0.1:{port}");
                return Haproxy { child, _dir: dir, url, log };
            }
            eprintln!("haproxy did not start:\n{}", log.borrow().join("\n"));
        }
        panic!("haproxy did not start in five tries");
    }

    /// Its URL: `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every line it has logged so far.
    pub fn log(&self) -> Vec<String> {
        self.log.borrow().clone()
    }

    /// Waits until HAProxy has taken backend `r<n>` (1 for the first) out: its health check
    /// failed, or a request found it gone.
    pub async fn wait_down(&self, n: usize) {
        let down = format!("Server replicas/r{n} is DOWN");
        let mut log = self.log.subscribe();
        let seen = tokio::time::timeout(
            PATIENCE,
            log.wait_for(|log| log.iter().any(|l| l.contains(&down))),
        )
        .await;
        assert!(seen.is_ok(), "haproxy did not take r{n} out:\n{}", self.log().join("\n"));
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        // The master and its worker share its process group.
        if let Some(pid) = self.child.id() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_balances_without_stickiness_and_skips_a_dead_backend() {
        let backends: Vec<SocketAddr> =
            vec!["127.0.0.1:4001".parse().unwrap(), "127.0.0.1:4002".parse().unwrap()];
        let config = config(4000, &backends);
        assert!(config.contains("    bind 127.0.0.1:4000\n"), "{config}");
        assert!(config.contains("    balance roundrobin\n"));
        assert!(config.contains("    server r1 127.0.0.1:4001 check"));
        assert!(config.contains("    server r2 127.0.0.1:4002 check"));
        for sticky in ["cookie", "stick", "hash", "prefer-last-server"] {
            assert!(!config.contains(sticky), "no stickiness: {sticky}");
        }
        assert!(config.contains("option redispatch 1") && config.contains("retries 2"));
    }
}
