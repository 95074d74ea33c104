//! A real OAuth 2.1 authorization server for tests: oidc-provider (npm, pinned in
//! `tests/deps/npm`) run by `tests/deps/oidc/provider.mjs` on 127.0.0.1, killed on drop.
//!
//! The launcher's header says what it serves: open dynamic client registration, JWT access
//! tokens whose `aud` is the `resource` asked for (opaque ones for [`CI_OPAQUE`], with token
//! introspection and revocation), `groups` and `tenant` claims, an
//! authorization code flow that needs no human, and test-only routes to mint any token
//! ([`OidcProvider::mint`]), rotate the signing key ([`OidcProvider::rotate`]) and forget one
//! token ([`OidcProvider::destroy`]).
//! [`GuardedServer`] is a real MCP server it guards (`tests/deps/oidc/guarded-server.mjs`).
//! A missing Node 22 or npm install fails the test, saying how to install it.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};
use tokio::process::{Child, ChildStdin, Command};

use crate::deps;

/// How long the launcher may take to print its issuer.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// The most redirects [`OidcProvider::authorize`] follows.
const MAX_REDIRECTS: usize = 10;

/// A client registered at start, allowed the `client_credentials` grant (HTTP Basic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaticClient {
    /// `client_id`, which is the token's `sub`.
    pub id: &'static str,
    /// `client_secret`.
    pub secret: &'static str,
}

/// `groups` `["deploy"]`, `tenant` `"acme"`.
pub const CI_ACME: StaticClient = StaticClient { id: "ci-acme", secret: "ci-acme-secret" };
/// `groups` `[]`, `tenant` `"globex"`.
pub const CI_GLOBEX: StaticClient = StaticClient { id: "ci-globex", secret: "ci-globex-secret" };

/// `groups` `["deploy"]`, `tenant` `"acme"`; its access tokens are opaque, checked by
/// introspection.
pub const CI_OPAQUE: StaticClient = StaticClient { id: "ci-opaque", secret: "ci-opaque-secret" };
/// The resource server's own client, which may introspect tokens
/// ([`OidcProvider::introspection_endpoint`]).
pub const TOOLGATE: StaticClient = StaticClient { id: "toolgate", secret: "toolgate-secret" };

/// The key a [minted](OidcProvider::mint) token is signed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sign {
    /// The provider's current signing key, which its JWKS serves.
    Provider,
    /// A fresh key of the same type, which the JWKS never serves.
    Stranger,
    /// None: `alg: none` and an empty signature.
    None,
}

impl Sign {
    fn as_str(self) -> &'static str {
        match self {
            Sign::Provider => "provider",
            Sign::Stranger => "stranger",
            Sign::None => "none",
        }
    }
}

/// What [`OidcProvider::start_with`] changes from the launcher's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProviderOptions {
    /// Every access token is opaque (not only [`CI_OPAQUE`]'s), so that a resource server can
    /// check any of them by introspection, and [`OidcProvider::destroy`] can forget one.
    pub opaque: bool,
    /// The lifetime of access tokens (10 minutes unless said).
    pub access_token_ttl: Option<Duration>,
}

/// A Node launcher that printed its one JSON line.
struct Launched {
    child: Child,
    stdin: ChildStdin,
    stderr: Arc<Mutex<String>>,
    ready: Value,
}

impl Launched {
    /// Spawns `command` (running `script`), and waits for its first stdout line, JSON.
    async fn start(mut command: Command, script: &std::path::Path) -> Launched {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("spawning node {}: {e}", script.display()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("piped stderr");
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf).await {
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let line = tokio::time::timeout(START_TIMEOUT, lines.next_line()).await;
        let line = match line {
            Ok(Ok(Some(line))) => line,
            other => {
                // Let the child's last words reach the buffer.
                let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
                panic!(
                    "{} did not say it was ready ({other:?}); its stderr:\n{}",
                    script.display(),
                    stderr.lock().unwrap()
                )
            }
        };
        let ready: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the launcher's first line {line:?}: {e}"));
        // It prints nothing more; the pipe is left open so it never writes to a closed one.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let stdin = child.stdin.take().expect("piped stdin");
        Launched { child, stdin, stderr, ready }
    }
}

/// An HTTP client that follows no redirects.
fn http_client() -> reqwest::Client {
    // The process's TLS provider, which reqwest wants even for plain HTTP: ring, unless the
    // test installed another.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("an HTTP client")
}

/// A running oidc-provider, killed on drop.
#[derive(Debug)]
pub struct OidcProvider {
    issuer: String,
    http: reqwest::Client,
    stderr: Arc<Mutex<String>>,
    _child: Child,
    /// The launcher exits when this closes.
    _stdin: ChildStdin,
}

impl OidcProvider {
    /// Starts the launcher with Node 22 ([`deps::node22`]) and waits for its issuer.
    ///
    /// # Panics
    ///
    /// If Node 22, the npm install or oidc-provider in it is missing (saying how to install
    /// them), or the launcher does not start.
    #[track_caller]
    pub fn start() -> impl std::future::Future<Output = OidcProvider> {
        OidcProvider::start_with(ProviderOptions::default())
    }

    /// [`OidcProvider::start`], with `options` over the launcher's defaults.
    ///
    /// # Panics
    ///
    /// As [`OidcProvider::start`].
    #[track_caller]
    pub fn start_with(options: ProviderOptions) -> impl std::future::Future<Output = OidcProvider> {
        let node = deps::node22();
        let npm = deps::npm_dir();
        deps::require(
            npm.join("node_modules/oidc-provider/package.json"),
            "oidc-provider (in the npm test dependencies)",
            "TOOLGATE_TEST_NPM_DIR",
        );
        let script = deps::repo_root().join("tests/deps/oidc/provider.mjs");
        let mut command = Command::new(&node);
        command.arg(&script).arg(&npm);
        if options.opaque {
            command.env("TOOLGATE_OIDC_OPAQUE", "1");
        }
        if let Some(ttl) = options.access_token_ttl {
            command.env("TOOLGATE_OIDC_ACCESS_TTL", ttl.as_secs().max(1).to_string());
        }
        async move {
            let launched = Launched::start(command, &script).await;
            let issuer = launched.ready["issuer"].as_str().expect("an issuer").to_owned();
            let Launched { child, stdin, stderr, .. } = launched;
            OidcProvider { issuer, http: http_client(), stderr, _child: child, _stdin: stdin }
        }
    }

    /// The issuer: `http://127.0.0.1:<port>`, without a trailing slash, as `iss` says it.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// `<issuer><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.issuer)
    }

    /// What the launcher wrote on stderr so far (oidc-provider's warnings, a route's crash).
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The token introspection endpoint (RFC 7662), where [`TOOLGATE`] may ask.
    pub fn introspection_endpoint(&self) -> String {
        self.url("/token/introspection")
    }

    /// Revokes `token` (RFC 7009), as the `client` it was issued to.
    ///
    /// # Panics
    ///
    /// If the revocation endpoint refuses.
    pub async fn revoke(&self, client: StaticClient, token: &str) {
        let request = self
            .http
            .post(self.url("/token/revocation"))
            .basic_auth(client.id, Some(client.secret))
            .form(&[("token", token), ("token_type_hint", "access_token")]);
        let response = request.send().await.expect("the revocation endpoint answers");
        let status = response.status();
        assert!(status.is_success(), "revocation: {status}\n{}", self.stderr());
    }

    /// Revokes `token` (RFC 7009, `token_type_hint` = `hint`) as the client `client_id`, which
    /// authenticates with `secret` (HTTP Basic), or is public (`client_id` in the form).
    /// oidc-provider then also revokes every token of the token's grant (the refresh tokens
    /// with an access token).
    ///
    /// # Panics
    ///
    /// If the revocation endpoint refuses.
    pub async fn revoke_as(&self, client_id: &str, secret: Option<&str>, token: &str, hint: &str) {
        let mut request = self.http.post(self.url("/token/revocation"));
        let mut form = vec![("token", token), ("token_type_hint", hint)];
        match secret {
            Some(secret) => request = request.basic_auth(client_id, Some(secret)),
            None => form.push(("client_id", client_id)),
        }
        let response = request.form(&form).send().await.expect("the revocation endpoint answers");
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        assert!(status.is_success(), "revocation: {status}: {body}\n{}", self.stderr());
    }

    /// Forgets the one opaque access or refresh token `token` (test-only route
    /// `/test/destroy`), leaving the rest of its grant: a destroyed access token is one that
    /// expired early. Which kind it was (`AccessToken`, `RefreshToken`), if the provider had it.
    ///
    /// # Panics
    ///
    /// If the launcher refuses.
    pub async fn destroy(&self, token: &str) -> Option<String> {
        let request = self.http.post(self.url("/test/destroy")).json(&json!({ "token": token }));
        let body = self.json(request, "/test/destroy").await;
        body["kind"].as_str().map(str::to_owned)
    }

    /// The access token `client` gets with the `client_credentials` grant for `resource`
    /// and `scopes`: a JWT with `aud` = `resource` (opaque for [`CI_OPAQUE`]).
    ///
    /// # Panics
    ///
    /// If the token endpoint refuses.
    pub async fn client_credentials(
        &self,
        client: StaticClient,
        resource: &str,
        scopes: &[&str],
    ) -> String {
        let scope = scopes.join(" ");
        let form =
            [("grant_type", "client_credentials"), ("resource", resource), ("scope", &scope)];
        let request = self.http.post(self.url("/token")).basic_auth(client.id, Some(client.secret));
        let body = self.json(request.form(&form), "the client_credentials grant").await;
        body["access_token"].as_str().expect("an access_token").to_owned()
    }

    /// A JWT with `claims` (`iss` = the issuer, `iat` = now and `exp` = now + 300 unless
    /// given; a claim given as `null` is left out) and `header` fields over the defaults
    /// (`alg` of the key, `typ` `at+jwt`, `kid`), signed as `sign` says.
    ///
    /// # Panics
    ///
    /// If the launcher refuses.
    pub async fn mint(&self, claims: Value, header: Value, sign: Sign) -> String {
        let request = json!({ "claims": claims, "header": header, "sign": sign.as_str() });
        let body =
            self.json(self.http.post(self.url("/test/mint")).json(&request), "/test/mint").await;
        body["token"].as_str().expect("a token").to_owned()
    }

    /// Adds a new signing key for `alg` (e.g. `ES256`) to the JWKS and signs with it from now
    /// on (access tokens and [`Sign::Provider`]); the old key stays in the JWKS. Its `kid`.
    ///
    /// # Panics
    ///
    /// If the launcher refuses.
    pub async fn rotate(&self, alg: &str) -> String {
        let request = self.http.post(self.url("/test/rotate")).json(&json!({ "alg": alg }));
        let body = self.json(request, "/test/rotate").await;
        body["kid"].as_str().expect("a kid").to_owned()
    }

    /// Follows the redirects from `authorize_url` (the authorization endpoint with its query)
    /// with plain GETs, keeping the cookies set on the way, as a browser would through the
    /// launcher's automatic login and consent; the URL redirected to outside the issuer (the
    /// client's `redirect_uri`, with `code` or `error`).
    ///
    /// # Panics
    ///
    /// If a response is not a redirect, or there are too many.
    pub async fn authorize(&self, authorize_url: &str) -> String {
        let mut cookies = BTreeMap::<String, String>::new();
        let mut url = authorize_url.to_owned();
        for _ in 0..MAX_REDIRECTS {
            if !url.starts_with(&format!("{}/", self.issuer)) {
                return url;
            }
            let mut request = self.http.get(&url);
            if !cookies.is_empty() {
                let header: Vec<String> = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
                request = request.header("cookie", header.join("; "));
            }
            let response = request.send().await.unwrap_or_else(|e| panic!("GET {url}: {e}"));
            for set in response.headers().get_all("set-cookie") {
                let pair = set.to_str().unwrap_or("").split(';').next().unwrap_or("");
                if let Some((name, value)) = pair.split_once('=') {
                    if value.is_empty() {
                        cookies.remove(name.trim());
                    } else {
                        cookies.insert(name.trim().to_owned(), value.to_owned());
                    }
                }
            }
            let status = response.status();
            let Some(location) = response.headers().get("location") else {
                let body = response.text().await.unwrap_or_default();
                panic!("GET {url}: {status} without a redirect: {body}\n{}", self.stderr());
            };
            let location = location.to_str().expect("an ASCII location").to_owned();
            url = reqwest::Url::parse(&url)
                .and_then(|base| base.join(&location))
                .expect("a redirect URL")
                .to_string();
        }
        panic!("more than {MAX_REDIRECTS} redirects from {authorize_url}");
    }

    /// The JSON body of a successful answer to `request`; panics naming `what` otherwise.
    async fn json(&self, request: reqwest::RequestBuilder, what: &str) -> Value {
        let response = request.send().await.unwrap_or_else(|e| panic!("{what}: {e}"));
        let status = response.status();
        let text = response.text().await.unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(status.is_success(), "{what}: {status}: {text}\n{}", self.stderr());
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: {e}: {text}"))
    }
}

/// A real MCP server guarded by an [`OidcProvider`]: the MCP TypeScript SDK's bearer-auth
/// middleware and protected resource metadata (`tests/deps/oidc/guarded-server.mjs`), checking
/// each token at every request (an opaque one by introspection, a JWT by its signature), with
/// tools `whoami` and `echo`; killed on drop.
#[derive(Debug)]
pub struct GuardedServer {
    url: String,
    http: reqwest::Client,
    stderr: Arc<Mutex<String>>,
    _child: Child,
    _stdin: ChildStdin,
}

impl GuardedServer {
    /// Starts the server in front of `provider` and waits for its URL.
    ///
    /// # Panics
    ///
    /// If Node 22, the npm install or the MCP TypeScript SDK in it is missing (saying how to
    /// install them), or the server does not start.
    #[track_caller]
    pub fn start(provider: &OidcProvider) -> impl std::future::Future<Output = GuardedServer> {
        let node = deps::node22();
        let npm = deps::npm_dir();
        for (package, what) in [
            ("@modelcontextprotocol/sdk", "the MCP TypeScript SDK (in the npm test dependencies)"),
            ("express", "express (in the npm test dependencies)"),
            ("jose", "jose (in the npm test dependencies)"),
        ] {
            deps::require(
                npm.join("node_modules").join(package).join("package.json"),
                what,
                "TOOLGATE_TEST_NPM_DIR",
            );
        }
        let script = deps::repo_root().join("tests/deps/oidc/guarded-server.mjs");
        let mut command = Command::new(&node);
        command.arg(&script).arg(provider.issuer()).arg(&npm);
        async move {
            let launched = Launched::start(command, &script).await;
            let url = launched.ready["url"].as_str().expect("a URL").to_owned();
            let Launched { child, stdin, stderr, .. } = launched;
            GuardedServer { url, http: http_client(), stderr, _child: child, _stdin: stdin }
        }
    }

    /// Its MCP endpoint: `http://127.0.0.1:<port>/mcp`, the resource its tokens are for.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What it wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Every access token it accepted so far, in order (test-only route `/test/tokens`).
    ///
    /// # Panics
    ///
    /// If the server does not answer.
    pub async fn tokens(&self) -> Vec<String> {
        let url = self.url.replace("/mcp", "/test/tokens");
        let response = self.http.get(&url).send().await.expect("the server answers");
        let body: Value = response.json().await.expect("JSON");
        let tokens = body["tokens"].as_array().expect("tokens");
        tokens.iter().map(|t| t.as_str().expect("a token").to_owned()).collect()
    }
}
