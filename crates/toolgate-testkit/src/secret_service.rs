//! A Secret Service of a test's own: a session bus (Debian's dbus-daemon) on a socket in a
//! temporary folder, whose only service is gnome-keyring's secrets component, started by the
//! bus the first time a client asks for it (D-Bus activation: the client's call waits for it,
//! nothing polls) and unlocked with a password of the test's. Nothing of the machine's own
//! session or keyring is touched.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

/// The bus and its keyring, running until dropped.
pub struct SecretService {
    bus: Child,
    address: String,
    dir: tempfile::TempDir,
}

impl SecretService {
    /// Starts the bus; the keyring starts when first asked for.
    pub async fn start() -> SecretService {
        let keyring = crate::deps::gnome_keyring();
        let dbus = crate::deps::dbus_daemon();
        let dir = tempfile::tempdir().expect("a temporary folder");
        let services = dir.path().join("services");
        for folder in ["services", "data", "run"] {
            std::fs::create_dir_all(dir.path().join(folder)).expect("a folder");
        }
        let socket = dir.path().join("bus");
        std::fs::write(
            dir.path().join("bus.conf"),
            format!(
                "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\" \
                 \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n<busconfig>\n\
                 <type>session</type>\n<listen>unix:path={}</listen>\n<servicedir>{}</servicedir>\n\
                 <policy context=\"default\"><allow send_destination=\"*\" eavesdrop=\"true\"/>\
                 <allow eavesdrop=\"true\"/><allow own=\"*\"/></policy>\n</busconfig>\n",
                socket.display(),
                services.display()
            ),
        )
        .expect("write the bus's config");
        std::fs::write(
            services.join("org.freedesktop.secrets.service"),
            format!(
                "[D-BUS Service]\nName=org.freedesktop.secrets\nExec=/bin/sh -c 'printf \
                 test-keyring-password | exec {} --foreground --unlock --components=secrets'\n",
                keyring.display()
            ),
        )
        .expect("write the keyring's service file");
        let mut bus = Command::new(dbus)
            .arg(format!("--config-file={}", dir.path().join("bus.conf").display()))
            .args(["--nofork", "--nopidfile", "--print-address=1"])
            .env("HOME", dir.path())
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env("XDG_RUNTIME_DIR", dir.path().join("run"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .process_group(0)
            .spawn()
            .expect("start dbus-daemon");
        let stdout = bus.stdout.take().expect("stdout");
        let address = BufReader::new(stdout)
            .lines()
            .next_line()
            .await
            .expect("read dbus-daemon's address")
            .expect("dbus-daemon prints its address once it listens");
        SecretService { bus, address, dir }
    }

    /// The bus's address, for `DBUS_SESSION_BUS_ADDRESS`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The folder the keyring keeps its files in.
    pub fn data_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("data")
    }
}

impl Drop for SecretService {
    fn drop(&mut self) {
        // The bus and the keyring it started share its process group.
        if let Some(pid) = self.bus.id() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
}
