//! A throwaway PostgreSQL server for a test, from Debian's packages ([`crate::deps::postgres_bin`]):
//! `initdb` into a temporary folder, `postgres` on 127.0.0.1 and a free port with its unix
//! socket in that folder, and a database made for the test; killed and removed when dropped.
//!
//! The server refuses to run as root, so under root (as CI runs) `initdb` and `postgres` run as
//! the `postgres` user that Debian's package makes (else `nobody`), which then owns the folder.
//! [`PostgresServer::stop`] and [`PostgresServer::restart`] let a test take the database away and
//! bring it back on the same port, to test an outage.

use std::io::BufRead as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::sync::watch;

/// The role the tests connect as (the cluster's superuser).
pub const USER: &str = "toolgate";
/// The database made for the test.
pub const DATABASE: &str = "toolgate";

/// How long the server may take to start, or to stop, on a busy machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// A PostgreSQL server of the test's own, stopped and removed when dropped.
pub struct PostgresServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    password: String,
    /// Who the server runs as when the test runs as root: (uid, gid).
    run_as: Option<(u32, u32)>,
    running: Option<Running>,
}

/// The postmaster, and what it and its backends have written to stderr.
struct Running {
    child: Child,
    log: Arc<watch::Sender<Log>>,
}

#[derive(Default)]
struct Log {
    lines: Vec<String>,
    /// Every holder of its stderr (the postmaster and its backends) has exited.
    ended: bool,
}

impl PostgresServer {
    /// Makes a cluster, starts it on a free port and creates [`DATABASE`].
    ///
    /// # Panics
    ///
    /// When PostgreSQL is not installed (saying how to install it), or does not start.
    pub async fn start() -> PostgresServer {
        let bin = crate::deps::postgres_bin();
        let run_as = unprivileged_user();
        let dir = tempfile::Builder::new().prefix("toolgate-pg-").tempdir().expect("a temp dir");
        let password = format!("pw{}", uuid::Uuid::new_v4().simple());
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, &password).expect("write the password file");
        if let Some((uid, gid)) = run_as {
            for path in [dir.path(), &pwfile] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown the temp dir");
            }
        }
        let mut server = PostgresServer { bin, dir, port: 0, password, run_as, running: None };
        let initdb = server
            .command("initdb")
            .arg("-D")
            .arg(server.data())
            .args(["-U", USER, "-E", "UTF8", "--no-locale", "--no-sync"])
            .args(["--auth-local=trust", "--auth-host=scram-sha-256"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .output()
            .expect("run initdb");
        assert!(
            initdb.status.success(),
            "initdb failed ({}){}:\n{}{}",
            initdb.status,
            if run_as.is_some() {
                " as an unprivileged user (the tests run as root): every folder above the temp \
                 dir must be open to it; TMPDIR chooses where that is"
            } else {
                ""
            },
            String::from_utf8_lossy(&initdb.stdout),
            String::from_utf8_lossy(&initdb.stderr)
        );
        std::fs::remove_file(&pwfile).expect("remove the password file");
        // The port is free when asked, and may be taken before the server binds it: try again.
        for _ in 0..5 {
            server.port = {
                let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
                probe.local_addr().expect("its address").port()
            };
            if server.run().await {
                break;
            }
            let log = server.log();
            assert!(log.contains("could not bind"), "postgres did not start:\n{log}");
            server.running = None;
        }
        assert!(server.running.is_some(), "postgres found no free port in five tries");
        let createdb = server
            .command("createdb")
            .args(["-h"])
            .arg(server.socket_dir())
            .args(["-p", &server.port.to_string(), "-U", USER, DATABASE])
            .output()
            .expect("run createdb");
        assert!(
            createdb.status.success(),
            "createdb failed ({}): {}",
            createdb.status,
            String::from_utf8_lossy(&createdb.stderr)
        );
        server
    }

    /// `postgres://toolgate:<password>@127.0.0.1:<port>/toolgate?sslmode=disable`.
    pub fn url(&self) -> String {
        format!(
            "postgres://{USER}:{}@127.0.0.1:{}/{DATABASE}?sslmode=disable",
            self.password, self.port
        )
    }

    /// The password of [`USER`] (over TCP the server asks for it, by SCRAM).
    pub fn password(&self) -> &str {
        &self.password
    }

    /// Its TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The folder of its unix socket (where [`USER`] needs no password).
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Its data folder (`postgresql.conf`, `pg_hba.conf`, ...).
    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Everything the server has logged so far.
    pub fn log(&self) -> String {
        self.running
            .as_ref()
            .map(|running| running.log.borrow().lines.join("\n"))
            .unwrap_or_default()
    }

    /// Stops the server as an administrator would (a fast shutdown: sessions are ended), and
    /// waits until it and every backend have exited. Stopping a stopped server does nothing.
    ///
    /// # Panics
    ///
    /// When it does not stop in time.
    pub async fn stop(&mut self) {
        let Some(mut running) = self.running.take() else { return };
        let pid = Pid::from_raw(running.child.id() as i32);
        let _ = kill(pid, Signal::SIGINT);
        let mut log = running.log.subscribe();
        let stopped = tokio::time::timeout(PATIENCE, log.wait_for(|log| log.ended)).await;
        assert!(
            stopped.is_ok(),
            "postgres did not stop:\n{}",
            running.log.borrow().lines.join("\n")
        );
        // Its stderr is closed: it has exited, and this only reaps it.
        running.child.wait().expect("reap postgres");
    }

    /// Serves TLS from now on with the certificate chain and key given in PEM (the server is
    /// restarted); plain connections are still accepted. Its log says which connections used it
    /// (`SSL enabled`).
    ///
    /// # Panics
    ///
    /// When the files cannot be written, or the server does not start with them.
    pub async fn use_tls(&mut self, cert_pem: &str, key_pem: &str) {
        let data = self.data();
        for (file, pem) in [("server.crt", cert_pem), ("server.key", key_pem)] {
            let path = data.join(file);
            std::fs::write(&path, pem).expect("write the TLS files");
            // The server refuses a key that others may read.
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .expect("chmod the TLS files");
            if let Some((uid, gid)) = self.run_as {
                std::os::unix::fs::chown(&path, Some(uid), Some(gid)).expect("chown");
            }
        }
        let conf = data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).expect("read postgresql.conf");
        text.push_str("\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
        std::fs::write(&conf, text).expect("write postgresql.conf");
        self.restart().await;
    }

    /// Starts the server again on the same port and data (stopping it first if it runs).
    ///
    /// # Panics
    ///
    /// When it does not start.
    pub async fn restart(&mut self) {
        self.stop().await;
        let started = self.run().await;
        assert!(started, "postgres did not start again:\n{}", self.log());
    }

    /// Starts the postmaster on `self.port`; whether it is accepting connections (else it
    /// exited, and `self.running` keeps its log).
    async fn run(&mut self) -> bool {
        let mut child = self
            .command("postgres")
            .arg("-D")
            .arg(self.data())
            .args(["-p", &self.port.to_string(), "-h", "127.0.0.1", "-k"])
            .arg(self.socket_dir())
            // A test's data is thrown away: nothing needs to reach the disk.
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
            .args(["-c", "max_connections=40", "-c", "shared_buffers=16MB"])
            // Each connection logged, with whether it uses TLS.
            .args(["-c", "log_connections=on"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start postgres");
        let log = Arc::new(watch::Sender::new(Log::default()));
        let stderr = child.stderr.take().expect("stderr");
        let writer = log.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                writer.send_modify(|log| log.lines.push(line));
            }
            writer.send_modify(|log| log.ended = true);
        });
        let mut seen = log.subscribe();
        let ready = tokio::time::timeout(
            PATIENCE,
            seen.wait_for(|log| {
                log.ended || log.lines.iter().any(|l| l.contains("ready to accept connections"))
            }),
        )
        .await
        .map(|log| !log.expect("the log").ended);
        drop(seen);
        let in_time = ready.is_ok();
        let ready = ready.unwrap_or(false);
        if in_time && !ready {
            // It has exited (its stderr is closed): reap it.
            let _ = child.wait();
        }
        // Kept even when late, so that dropping the server stops it.
        self.running = Some(Running { child, log });
        assert!(in_time, "postgres did not start in time:\n{}", self.log());
        ready
    }

    /// One of the server's programs, run as the unprivileged user under root.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bin.join(program));
        command.current_dir(self.dir.path()).env("LC_ALL", "C");
        if let Some((uid, gid)) = self.run_as {
            command.uid(uid).gid(gid);
        }
        command
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        if let Some(mut running) = self.running.take()
            && running.child.try_wait().ok().flatten().is_none()
        {
            // An immediate shutdown: the postmaster ends its backends, then itself.
            let _ = kill(Pid::from_raw(running.child.id() as i32), Signal::SIGQUIT);
            let _ = running.child.wait();
        }
        // Then the temporary folder goes, with the data and the socket.
    }
}

impl std::fmt::Debug for PostgresServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresServer")
            .field("port", &self.port)
            .field("dir", &self.dir.path())
            .field("running", &self.running.is_some())
            .finish_non_exhaustive()
    }
}

/// Under root, who the server runs as: Debian's `postgres` user, else `nobody`.
fn unprivileged_user() -> Option<(u32, u32)> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let user = ["postgres", "nobody"]
        .into_iter()
        .find_map(|name| nix::unistd::User::from_name(name).ok().flatten())
        .expect(
            "running as root, and no `postgres` or `nobody` user to run PostgreSQL as (it refuses \
             root): install Debian's postgresql package, which makes `postgres`",
        );
    Some((user.uid.as_raw(), user.gid.as_raw()))
}
