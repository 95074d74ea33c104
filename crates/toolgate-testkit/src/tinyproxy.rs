//! Debian's tinyproxy as a test's HTTP proxy: started on a free 127.0.0.1 port with a config
//! written for it, in the foreground, its log (every request it relays, `LogLevel Info`) kept
//! for the test to look at.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

/// tinyproxy, running until dropped, and what it has logged.
pub struct Tinyproxy {
    _child: Child,
    url: String,
    log: Arc<tokio::sync::watch::Sender<Vec<String>>>,
}

impl Tinyproxy {
    /// Starts tinyproxy on a free port, with `extra` lines in its config (`BasicAuth ...`).
    pub async fn start(dir: &Path, extra: &str) -> Tinyproxy {
        let binary = crate::deps::tinyproxy();
        // The port is free when asked, and may be taken before tinyproxy binds it: try again.
        for _ in 0..5 {
            let port = {
                let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
                probe.local_addr().expect("its address").port()
            };
            let config = dir.join("tinyproxy.conf");
            std::fs::write(
                &config,
                format!(
                    "Port {port}\nListen 127.0.0.1\nAllow 127.0.0.1\nTimeout 60\nMaxClients 50\n\
                     LogLevel Info\n{extra}\n"
                ),
            )
            .expect("write tinyproxy's config");
            // `-d`: in the foreground, logging to stdout.
            let mut child = Command::new(&binary)
                .arg("-d")
                .arg("-c")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .expect("start tinyproxy");
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
                Duration::from_secs(30),
                seen.wait_for(|log| {
                    log.iter().any(|l| l.contains("Accepting connections") || l == "(exited)")
                }),
            )
            .await
            .expect("tinyproxy starts or exits in time")
            .expect("the log")
            .iter()
            .any(|l| l.contains("Accepting connections"));
            if started {
                return Tinyproxy { _child: child, url: format!("http://127.0.0.1:{port}"), log };
            }
        }
        panic!("tinyproxy did not start in five tries");
    }

    /// Its URL: `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Waits until tinyproxy has logged a request line holding `what` (`POST http://...`,
    /// `CONNECT host:port`); it logs each request as it comes.
    pub async fn saw(&self, what: &str) {
        let mut log = self.log.subscribe();
        let seen = tokio::time::timeout(
            Duration::from_secs(10),
            log.wait_for(|log| log.iter().any(|l| l.contains("Request") && l.contains(what))),
        )
        .await;
        assert!(seen.is_ok(), "tinyproxy logged no `{what}`:\n{}", self.log.borrow().join("\n"));
    }

    /// Whether tinyproxy has logged anything about `url` so far.
    pub fn mentions(&self, url: &str) -> bool {
        self.log.borrow().iter().any(|l| l.contains(url))
    }
}
