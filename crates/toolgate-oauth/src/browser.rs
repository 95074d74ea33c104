//! What shows the authorization URL to whoever signs in.
//!
//! - [`SystemBrowser`]: prints the URL and asks the desktop to open it (`xdg-open`, `open`),
//!   for `toolgate login`;
//! - [`Headless`]: plays a person who approves at once, by following the authorization
//!   server's redirects with plain GETs (keeping its cookies) until one reaches the loopback
//!   receiver. For servers that approve without a page (the conformance suite's), tests, and
//!   scripted sign-ins against a server that a test drives.

use std::collections::BTreeMap;

use crate::error::LoginError;
use crate::signin::Browser;

/// Redirects a headless sign-in follows.
const MAX_HOPS: usize = 20;

/// The person's own browser.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemBrowser {
    /// Only print the URL (`--no-browser`).
    pub print_only: bool,
}

#[async_trait::async_trait]
impl Browser for SystemBrowser {
    /// On a terminal: lines typed or pasted there, read on a thread of their own.
    fn pasted(&self) -> Option<tokio::sync::mpsc::Receiver<String>> {
        use std::io::IsTerminal as _;
        if !std::io::stdin().is_terminal() {
            return None;
        }
        let (sender, lines) = tokio::sync::mpsc::channel(4);
        std::thread::spawn(move || {
            for line in std::io::stdin().lines() {
                let Ok(line) = line else { return };
                if sender.blocking_send(line).is_err() {
                    return;
                }
            }
        });
        Some(lines)
    }

    async fn open(&self, url: &str) -> Result<(), LoginError> {
        eprintln!("Open this address to sign in:\n\n  {url}\n");
        use std::io::IsTerminal as _;
        if std::io::stdin().is_terminal() {
            eprintln!(
                "If you sign in with a browser on another machine, its last page will not load: \
                 copy that page's address and paste it here.\n"
            );
        }
        if self.print_only {
            return Ok(());
        }
        let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
        // Nothing of toolgate's environment but what a desktop opener needs.
        let mut command = tokio::process::Command::new(opener);
        command.arg(url).env_clear().stdin(std::process::Stdio::null());
        command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
        for name in [
            "PATH",
            "HOME",
            "DISPLAY",
            "WAYLAND_DISPLAY",
            "XDG_RUNTIME_DIR",
            "DBUS_SESSION_BUS_ADDRESS",
            "BROWSER",
        ] {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        match command.spawn() {
            Ok(mut child) => {
                tokio::spawn(async move { child.wait().await });
            }
            Err(_) => eprintln!("(no browser could be started here; open the address yourself)"),
        }
        Ok(())
    }
}

/// Follows the authorization server's redirects like a browser whose person approves at once.
#[derive(Debug, Clone, Default)]
pub struct Headless {
    http: reqwest::Client,
}

impl Headless {
    /// A headless browser with reqwest's default settings.
    pub fn new() -> Headless {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a plain reqwest client builds");
        Headless { http }
    }
}

#[async_trait::async_trait]
impl Browser for Headless {
    async fn open(&self, url: &str) -> Result<(), LoginError> {
        let refused =
            |why: String| LoginError::Refused { error: "headless".into(), description: why };
        let mut cookies = BTreeMap::<String, String>::new();
        let mut at = url::Url::parse(url).map_err(|e| refused(format!("{url}: {e}")))?;
        for _ in 0..MAX_HOPS {
            let mut request = self.http.get(at.clone());
            if !cookies.is_empty() {
                let header: Vec<String> = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
                request = request.header("cookie", header.join("; "));
            }
            let response = request.send().await.map_err(|e| refused(format!("GET {at}: {e}")))?;
            for set in response.headers().get_all("set-cookie") {
                let pair = set.to_str().unwrap_or("").split(';').next().unwrap_or("");
                if let Some((name, value)) = pair.split_once('=') {
                    cookies.insert(name.trim().to_owned(), value.to_owned());
                }
            }
            let Some(location) = response.headers().get("location") else {
                // The receiver answers the redirect with a page: the sign-in is delivered.
                if response.status().is_success() && at.path() == "/callback" {
                    return Ok(());
                }
                return Err(refused(format!("GET {at}: {} without a redirect", response.status())));
            };
            let location = location.to_str().map_err(|_| refused("a non-ASCII redirect".into()))?;
            at = at.join(location).map_err(|e| refused(format!("redirect to {location}: {e}")))?;
        }
        Err(refused(format!("more than {MAX_HOPS} redirects")))
    }
}
