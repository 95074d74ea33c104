//! A throwaway Redis server for a test, Debian's `redis-server` ([`crate::deps::redis_server`]):
//! on 127.0.0.1 and a free port, with a config file of its own in a temporary folder, nothing
//! saved to disk, and a password if asked for; killed and removed when dropped.
//! [`RedisServer::stop`] and [`RedisServer::restart`] let a test take it away and bring it
//! back on the same port, empty, to test an outage; [`RedisServer::pause`] and
//! [`RedisServer::resume`] freeze it and thaw it, to test a server that does not answer.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;

/// How long the server may take to start, or to stop, on a busy machine.
const PATIENCE: Duration = Duration::from_secs(30);

/// A Redis server of the test's own, stopped and removed when dropped.
pub struct RedisServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    password: Option<String>,
    running: Option<Running>,
}

/// The server, and what it has logged.
struct Running {
    child: Child,
    log: Arc<watch::Sender<Log>>,
}

#[derive(Default)]
struct Log {
    lines: Vec<String>,
    /// Its stdout is closed: it has exited.
    ended: bool,
}

impl RedisServer {
    /// Starts a server on a free port, open to any client on 127.0.0.1.
    ///
    /// # Panics
    ///
    /// When redis-server is not installed (saying how to install it), or does not start.
    pub async fn start() -> RedisServer {
        RedisServer::launch(None).await
    }

    /// Starts a server that asks for a password (a fresh one, [`RedisServer::password`]).
    ///
    /// # Panics
    ///
    /// As [`RedisServer::start`].
    pub async fn start_with_password() -> RedisServer {
        RedisServer::launch(Some(format!("pw{}", uuid::Uuid::new_v4().simple()))).await
    }

    async fn launch(password: Option<String>) -> RedisServer {
        let bin = crate::deps::redis_server();
        let dir = tempfile::Builder::new().prefix("toolgate-redis-").tempdir().expect("a temp dir");
        let mut server = RedisServer { bin, dir, port: 0, password, running: None };
        // The port is free when asked, and may be taken before the server binds it: try again.
        for _ in 0..5 {
            server.port = {
                let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
                probe.local_addr().expect("its address").port()
            };
            if server.run().await {
                return server;
            }
            let log = server.log();
            assert!(log.contains("Address already in use"), "redis-server did not start:\n{log}");
            server.running = None;
        }
        panic!("redis-server found no free port in five tries");
    }

    /// `redis://[:<password>@]127.0.0.1:<port>/0`.
    pub fn url(&self) -> String {
        match &self.password {
            Some(password) => format!("redis://:{password}@127.0.0.1:{}/0", self.port),
            None => format!("redis://127.0.0.1:{}/0", self.port),
        }
    }

    /// The password it asks for, if it does.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.running.as_ref().and_then(|running| running.child.id())
    }

    /// Its TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Everything it has logged so far.
    pub fn log(&self) -> String {
        self.running
            .as_ref()
            .map(|running| running.log.borrow().lines.join("\n"))
            .unwrap_or_default()
    }

    /// Stops the server (SIGTERM: it closes every connection and exits, saving nothing) and
    /// waits until it has exited. Stopping a stopped server does nothing.
    ///
    /// # Panics
    ///
    /// When it does not stop in time.
    pub async fn stop(&mut self) {
        let Some(mut running) = self.running.take() else { return };
        if let Some(pid) = running.child.id() {
            let pid = nix::unistd::Pid::from_raw(pid as i32);
            // A paused server is thawed first, or it would not hear the SIGTERM.
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        }
        let exited = tokio::time::timeout(PATIENCE, running.child.wait()).await;
        assert!(
            exited.is_ok(),
            "redis-server did not stop:\n{}",
            running.log.borrow().lines.join("\n")
        );
    }

    /// Freezes the server (SIGSTOP): its connections stay open and nothing answers, as when a
    /// server hangs or the network drops packets. [`RedisServer::resume`] thaws it.
    pub fn pause(&self) {
        self.signal(nix::sys::signal::Signal::SIGSTOP);
    }

    /// Thaws a server [`RedisServer::pause`] froze (SIGCONT).
    pub fn resume(&self) {
        self.signal(nix::sys::signal::Signal::SIGCONT);
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = self.running.as_ref().and_then(|running| running.child.id()).expect("running");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).expect("signal it");
    }

    /// Starts the server again on the same port (stopping it first if it runs), empty.
    ///
    /// # Panics
    ///
    /// When it does not start.
    pub async fn restart(&mut self) {
        self.stop().await;
        let started = self.run().await;
        assert!(started, "redis-server did not start again:\n{}", self.log());
    }

    /// Starts the server on `self.port`; whether it is accepting connections (else it exited,
    /// and `self.running` keeps its log).
    async fn run(&mut self) -> bool {
        // In a file, not on the command line, where `ps` would show the password.
        let config = self.dir.path().join("redis.conf");
        let mut text = format!(
            "port {}\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\nlogfile \"\"\n\
             save \"\"\nappendonly no\ndir {}\n",
            self.port,
            self.dir.path().display()
        );
        if let Some(password) = &self.password {
            text.push_str(&format!("requirepass {password}\n"));
        }
        std::fs::write(&config, text).expect("write redis.conf");
        let mut child = Command::new(&self.bin)
            .arg(&config)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start redis-server");
        let log = Arc::new(watch::Sender::new(Log::default()));
        let stdout = child.stdout.take().expect("stdout");
        let writer = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                writer.send_modify(|log| log.lines.push(line));
            }
            writer.send_modify(|log| log.ended = true);
        });
        let mut seen = log.subscribe();
        let ready = tokio::time::timeout(
            PATIENCE,
            seen.wait_for(|log| {
                log.ended || log.lines.iter().any(|l| l.contains("Ready to accept connections"))
            }),
        )
        .await
        .map(|log| !log.expect("the log").ended);
        drop(seen);
        let in_time = ready.is_ok();
        let ready = ready.unwrap_or(false);
        // Kept even when late or gone, so that dropping the server stops it and the log stays.
        self.running = Some(Running { child, log });
        assert!(in_time, "redis-server did not start in time:\n{}", self.log());
        ready
    }
}

impl std::fmt::Debug for RedisServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisServer")
            .field("port", &self.port)
            .field("dir", &self.dir.path())
            .field("running", &self.running.is_some())
            .finish_non_exhaustive()
    }
}
