//! Files toolgate creates that hold conversations, call records or pins are their owner's
//! only (`0600`, in folders it creates `0700`), whatever the umask lets others have; an
//! existing one that others can read is used as it is and named in a warning.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use crate::support::*;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("metadata").permissions().mode() & 0o777
}

fn share(path: &Path) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
}

#[tokio::test]
async fn the_sessions_database_and_its_folders_are_the_owners_only() {
    let config = ConfigDir::new(&fixture_server("fx", "stdio", None));
    let data = config.dir().join("data");
    let sessions = data.join("toolgate").join("sessions.db");
    let config_path = config.path();
    let args = [
        "sessions",
        "list",
        "--sessions",
        sessions.to_str().expect("UTF-8"),
        "--config",
        config_path.to_str().expect("UTF-8"),
    ];
    let listed = run_toolgate(&args).await;
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    assert_eq!(mode(&sessions), 0o600);
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&data.join("toolgate")), 0o700);
    assert!(!String::from_utf8_lossy(&listed.stderr).contains("others"));

    share(&sessions);
    let listed = run_toolgate(&args).await;
    assert!(listed.status.success());
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(
        stderr.contains(&format!(
            "the sessions database {} can be read or written by others",
            sessions.display()
        )),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_audit_log_and_the_lock_file_are_the_owners_only() {
    let config = ConfigDir::new(&format!(
        "{}\n[[pipeline]]\nkind = \"integrity\"\n\n[audit]\nfile = \"audit.jsonl\"\n",
        fixture_server("fx", "stdio", None)
    ));
    let config_path = config.path();
    let pinned = run_toolgate(&["pin", "--config", config_path.to_str().expect("UTF-8")]).await;
    assert!(pinned.status.success(), "{}", String::from_utf8_lossy(&pinned.stderr));
    let lock = config.dir().join("toolgate.lock");
    assert_eq!(mode(&lock), 0o600, "written by `pin`");

    let gateway = HttpGateway::start(&config_path).await;
    assert!(gateway.terminate().await.success());
    let log = config.dir().join("audit.jsonl");
    assert_eq!(mode(&log), 0o600);

    share(&log);
    let gateway = HttpGateway::start(&config_path).await;
    let line = gateway.wait_for_log(&["WARN", "can be read or written by others"]).await;
    assert!(line.contains(&log.display().to_string()), "{line}");
    assert!(gateway.terminate().await.success());
}
