//! Starting servers for real, through the upstream layer the gateway uses (`Upstream`: the
//! same spawning, environment, handshake and listing as `serve`), a few at once, each within
//! the time allowed, and what came of each.

use std::time::Duration;

use futures::StreamExt as _;
use toolgate_config::{ServerConfig, TransportConfig};
use toolgate_upstream::{Logins, Upstream, UpstreamError};

use super::cause::{self, Cause, Diagnosis};

/// How many servers are started at once.
pub(crate) const AT_ONCE: usize = 4;

/// What the upstream layer is given beyond the start-up timeout before a server counts as
/// not answering (it bounds its own attempt by the timeout; this bounds the rest).
const GRACE: Duration = Duration::from_secs(5);

/// One server to start.
pub(crate) struct Probe {
    pub(crate) config: ServerConfig,
    /// Whether toolgate's own config has it.
    pub(crate) in_toolgate: bool,
}

/// What came of starting one server.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// It started: what it says it is, what it offers, and how long that took.
    Started {
        server: Option<String>,
        version: Option<String>,
        tools: usize,
        startup: Duration,
    },
    Failed(Diagnosis),
}

/// Starts every server of `probes`, [`AT_ONCE`] at a time, each given `timeout` to complete
/// its handshake and listing, and stops each once seen; the outcomes are in `probes`' order.
pub(crate) async fn start_all(
    probes: Vec<Probe>,
    timeout: Duration,
    logins: Option<&Logins>,
) -> Vec<Outcome> {
    futures::stream::iter(probes)
        .map(|probe| start(probe, timeout, logins))
        .buffered(AT_ONCE)
        .collect()
        .await
}

async fn start(probe: Probe, timeout: Duration, logins: Option<&Logins>) -> Outcome {
    let mut config = probe.config;
    config.startup_timeout = timeout;
    config.refresh = Default::default();
    let upstream = Upstream::start_with(config.clone(), None, logins);
    let server = cause::Server {
        name: &config.name,
        transport: &config.transport,
        in_toolgate: probe.in_toolgate,
    };
    let outcome = match tokio::time::timeout(timeout + GRACE, upstream.ready()).await {
        Ok(Ok(())) => match upstream.info() {
            Some(info) => Outcome::Started {
                server: info.server.as_ref().map(|s| s.name.clone()),
                version: info.server.as_ref().map(|s| s.version.clone()),
                tools: upstream.catalog().tools.len(),
                startup: info.startup,
            },
            None => Outcome::Failed(other("it disconnected as soon as it had started".into())),
        },
        Ok(Err(UpstreamError::Connect { error, .. })) => {
            Outcome::Failed(cause::connect_failure(&server, &error, upstream.needs_login()))
        }
        Ok(Err(error)) => Outcome::Failed(other(error.to_string())),
        Err(_) => Outcome::Failed(Diagnosis {
            cause: Cause::Timeout,
            subject: None,
            detail: format!(
                "no outcome within {}",
                toolgate_core::duration::format(timeout + GRACE)
            ),
            next_step: "try again with a longer --timeout".into(),
        }),
    };
    upstream.shutdown().await;
    match outcome {
        Outcome::Failed(diagnosis) => Outcome::Failed(redacted(diagnosis, &config)),
        started => started,
    }
}

fn other(detail: String) -> Diagnosis {
    Diagnosis {
        cause: Cause::Other,
        subject: None,
        next_step: format!("fix what the error says: {detail}"),
        detail,
    }
}

/// `diagnosis` without the values of `config`'s variables and headers, nor what the secret
/// detectors find: a server's stderr may quote them.
fn redacted(diagnosis: Diagnosis, config: &ServerConfig) -> Diagnosis {
    let secrets: Vec<&str> = match &config.transport {
        TransportConfig::Stdio(stdio) => stdio.env.values().map(|v| v.expose()).collect(),
        TransportConfig::Http(http) => http.headers.values().map(|v| v.expose()).collect(),
        TransportConfig::InProcess(_) => Vec::new(),
    };
    let clean = |text: String| {
        let mut text = text;
        for secret in secrets.iter().filter(|s| s.len() >= 4) {
            text = text.replace(secret, "***");
        }
        crate::scrub::scrub(&text).into_owned()
    };
    Diagnosis {
        cause: diagnosis.cause,
        subject: diagnosis.subject.map(&clean),
        detail: clean(diagnosis.detail),
        next_step: clean(diagnosis.next_step),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use toolgate_config::{FixedEnvironment, Format};

    use super::*;

    #[test]
    fn a_variable_or_header_value_quoted_in_an_error_is_hidden() {
        let text = "[servers.s]\ncommand = \"x\"\nenv = { TOKEN = \"hunter2-long\", N = \"1\" }\n";
        let config = toolgate_config::parse_str(
            text,
            Format::Toml,
            Path::new("/"),
            &FixedEnvironment::new(),
        )
        .unwrap()
        .servers
        .remove(0);
        let diagnosis = Diagnosis {
            cause: Cause::Exited,
            subject: None,
            detail: "bad token hunter2-long; key ghp_0123456789abcdefghijklmnopqrstuvwxyzAB".into(),
            next_step: "it said hunter2-long (1)".into(),
        };
        let clean = redacted(diagnosis, &config);
        assert_eq!(
            clean.next_step, "it said *** (1)",
            "a short value is left: it would hide too much"
        );
        assert!(
            !clean.detail.contains("hunter2-long") && !clean.detail.contains("ghp_0123"),
            "{}",
            clean.detail
        );
    }
}
