//! `enrich`'s options, read and checked: the endpoint, the model and its key, the prompt
//! template, where the summary goes, and when a result is summarised at all.

use std::fmt;
use std::time::Duration;

use toolgate_config::InterceptorConfig;
use toolgate_llm::tokens::Encoding;
use url::Url;

use crate::options::{ABOVE_ZERO, Options};

/// Every option `enrich` reads.
pub(super) const KEYS: &[&str] = &[
    "base_url",
    "model",
    "api_key_env",
    "prompt",
    "placement",
    "request_timeout",
    "max_tokens",
    "min_tokens",
    "max_input_tokens",
    "on_error",
    "cache_size",
    "encoding",
    "proxy",
];

/// What the model is asked when no `prompt` is given.
pub const DEFAULT_PROMPT: &str = "Summarise the result of the tool {tool} below for the AI \
assistant that called it. Keep every fact it needs to go on (names, numbers, paths, \
identifiers, errors and their causes), drop repetition and boilerplate, and answer with the \
summary alone.\n\n{result}";

/// How long the endpoint has to answer, unless `request_timeout` says otherwise.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// What the pipeline allows an invocation beyond `request_timeout` when the entry sets no
/// `timeout`: reading the result, the cache, rewriting.
pub const TIMEOUT_MARGIN: Duration = Duration::from_secs(5);

/// The longest summary asked for, in tokens, unless `max_tokens` says otherwise.
pub const DEFAULT_MAX_TOKENS: u64 = 512;

/// Results of at most this many tokens are not summarised, unless `min_tokens` says otherwise.
pub const DEFAULT_MIN_TOKENS: usize = 1000;

/// The most tokens of a result sent to the model, unless `max_input_tokens` says otherwise.
pub const DEFAULT_MAX_INPUT_TOKENS: usize = 32_000;

/// Summaries kept, unless `cache_size` says otherwise.
pub const DEFAULT_CACHE_SIZE: usize = 256;

/// Where the summary goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A text block before the original content, which stays.
    Before,
    /// In place of the result's text blocks; other blocks and `structuredContent` stay.
    Instead,
}

impl Placement {
    /// The name in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Before => "before",
            Placement::Instead => "instead",
        }
    }
}

/// The prompt template: text with `{result}`, `{tool}` and `{server}` in it, filled in one
/// pass (a result that contains `{tool}` keeps it). Other braces are text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    text: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(std::ops::Range<usize>),
    Result,
    Tool,
    Server,
}

impl Template {
    /// Reads `text`; it must have `{result}` somewhere.
    pub fn parse(text: &str) -> Result<Template, String> {
        const PLACES: [(&str, Part); 3] =
            [("{result}", Part::Result), ("{tool}", Part::Tool), ("{server}", Part::Server)];
        let mut parts = Vec::new();
        let (mut at, mut literal) = (0, 0);
        while let Some(offset) = text[at..].find('{') {
            let start = at + offset;
            match PLACES.iter().find(|(name, _)| text[start..].starts_with(name)) {
                Some((name, part)) => {
                    if literal < start {
                        parts.push(Part::Text(literal..start));
                    }
                    parts.push(part.clone());
                    at = start + name.len();
                    literal = at;
                }
                None => at = start + 1,
            }
        }
        if literal < text.len() {
            parts.push(Part::Text(literal..text.len()));
        }
        if !parts.contains(&Part::Result) {
            return Err("has no {result}, where the tool's result goes".to_owned());
        }
        Ok(Template { text: text.to_owned(), parts })
    }

    /// The prompt for `result` of `tool` on `server`.
    pub fn render(&self, tool: &str, server: &str, result: &str) -> String {
        let mut prompt = String::with_capacity(self.text.len() + result.len());
        for part in &self.parts {
            prompt.push_str(match part {
                Part::Text(range) => &self.text[range.clone()],
                Part::Result => result,
                Part::Tool => tool,
                Part::Server => server,
            });
        }
        prompt
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// An API key, read from the environment when the interceptor is built. Prints as `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// The key itself, for the `Authorization` header and nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// `enrich`'s options, checked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `https://api.openai.com/v1`: requests go to `<base_url>/chat/completions`.
    pub base_url: Url,
    /// `host` or `host:port` of `base_url`: all that messages say about it.
    pub endpoint: String,
    /// The model asked.
    pub model: String,
    /// The key, when `api_key_env` names one.
    pub api_key: Option<ApiKey>,
    /// What the model is asked.
    pub prompt: Template,
    /// Where the summary goes.
    pub placement: Placement,
    /// How long the endpoint has to answer.
    pub request_timeout: Duration,
    /// The summary's length limit, sent as `max_tokens`.
    pub max_tokens: u64,
    /// Results of at most this many tokens are left alone.
    pub min_tokens: usize,
    /// The most tokens of a result the model is sent; the rest is left out, saying so.
    pub max_input_tokens: usize,
    /// Whether error results (`isError`) are summarised too.
    pub on_error: bool,
    /// How many summaries the cache keeps (0: none).
    pub cache_size: usize,
    /// How tokens are counted.
    pub encoding: Encoding,
    /// `proxy`: which proxy the requests take (a URL, or `false` for none; by default what
    /// `HTTPS_PROXY` and the like say).
    pub proxy: toolgate_llm::provider::Proxy,
}

impl Settings {
    /// Reads the options of `entry`, reporting every problem to `options`; `None` when one
    /// of them has no usable value. `env` looks up an environment variable.
    pub(super) fn read(
        options: &mut Options<'_>,
        entry: &InterceptorConfig,
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Option<Settings> {
        options.only(KEYS);
        let base_url = base_url(options);
        let model = match options.string("model") {
            Some("") => {
                let path = options.at("model");
                options.error(&path, "must not be empty");
                None
            }
            Some(model) => Some(model.to_owned()),
            None => {
                if options.get("model").is_none() {
                    let path = options.at("model");
                    options.error(&path, "is required: the model that writes the summaries");
                }
                None
            }
        };
        let api_key = api_key(options, env);
        let prompt = match options.string("prompt") {
            None => Some(Template::parse(DEFAULT_PROMPT).expect("the default prompt has {result}")),
            Some(text) => match Template::parse(text) {
                Ok(template) => Some(template),
                Err(why) => {
                    let path = options.at("prompt");
                    options.error(&path, why);
                    None
                }
            },
        };
        let placement = match options.string("placement") {
            None | Some("before") => Placement::Before,
            Some("instead") => Placement::Instead,
            Some(other) => {
                let path = options.at("placement");
                options
                    .error(&path, format!("expected \"before\" or \"instead\", found {other:?}"));
                Placement::Before
            }
        };
        let request_timeout = request_timeout(options);
        if let (Some(timeout), Some(pipeline)) = (request_timeout, entry.timeout)
            && pipeline <= timeout
        {
            options.error(
                &format!("{}.timeout", entry.path),
                format!(
                    "{} would cut the summary short: the pipeline's timeout must be longer than \
                     request_timeout ({}); leave it out to get request_timeout + {}",
                    toolgate_core::duration::format(pipeline),
                    toolgate_core::duration::format(timeout),
                    toolgate_core::duration::format(TIMEOUT_MARGIN),
                ),
            );
        }
        let max_tokens = options.integer("max_tokens", 1).unwrap_or(DEFAULT_MAX_TOKENS);
        let min_tokens = options.integer("min_tokens", 0).unwrap_or(DEFAULT_MIN_TOKENS);
        let max_input_tokens =
            options.integer("max_input_tokens", 1).unwrap_or(DEFAULT_MAX_INPUT_TOKENS);
        let on_error = match options.get("on_error") {
            None => false,
            Some(value) => value.as_bool().unwrap_or_else(|| {
                let path = options.at("on_error");
                options.error(&path, format!("expected true or false, found {value}"));
                false
            }),
        };
        let cache_size = options.integer("cache_size", 0).unwrap_or(DEFAULT_CACHE_SIZE);
        let encoding = match options.string("encoding") {
            None => Encoding::default(),
            Some(name) => name.parse::<Encoding>().unwrap_or_else(|e| {
                let path = options.at("encoding");
                options.error(&path, e.to_string());
                Encoding::default()
            }),
        };
        let proxy = proxy(options);
        let (base_url, endpoint) = base_url?;
        if let Some(Some(_)) = &api_key
            && let Some(host) = toolgate_llm::key_route::plain_http_host(base_url.as_str())
        {
            let path = options.at("base_url");
            let variable = options.string("api_key_env").unwrap_or_default().to_owned();
            options.error(
                &path,
                format!(
                    "the key from api_key_env ({variable}) would go to {host} over plain \
                     http://, where anyone on the way can read it: use an https:// base_url \
                     (plain http:// is only for a server on this machine: localhost, \
                     127.0.0.1, [::1]), or leave api_key_env out for a server that wants no key"
                ),
            );
            return None;
        }
        Some(Settings {
            base_url,
            endpoint,
            model: model?,
            api_key: api_key?,
            prompt: prompt?,
            placement,
            request_timeout: request_timeout?,
            max_tokens,
            min_tokens,
            max_input_tokens,
            on_error,
            cache_size,
            encoding,
            proxy: proxy?,
        })
    }

    /// Where requests go: `<base_url>/chat/completions`.
    pub fn chat_url(&self) -> Url {
        let mut url = self.base_url.clone();
        let path = format!("{}/chat/completions", url.path().trim_end_matches('/'));
        url.set_path(&path);
        url
    }

    /// The pipeline's timeout for an entry that sets none.
    pub fn pipeline_timeout(&self) -> Duration {
        self.request_timeout + TIMEOUT_MARGIN
    }
}

/// `base_url`, and its `host[:port]`.
/// `proxy`: a proxy's URL, or `false` for none; by default the variables'. The URL is not
/// quoted in messages (it may hold a password).
fn proxy(options: &mut Options<'_>) -> Option<toolgate_llm::provider::Proxy> {
    use toolgate_llm::provider::Proxy;
    let path = options.at("proxy");
    match options.get("proxy") {
        None => Some(Proxy::Environment),
        Some(serde_json::Value::Bool(false)) => Some(Proxy::Direct),
        Some(serde_json::Value::String(url)) => match toolgate_config::proxy_url_problem(url) {
            Ok(()) => Some(Proxy::Url(url.trim().to_owned())),
            Err(why) => {
                options.error(
                    &path,
                    format!("invalid proxy URL: {why} (expected \"http://host:port\")"),
                );
                None
            }
        },
        Some(_) => {
            options.error(&path, "expected a proxy URL (\"http://host:port\") or false");
            None
        }
    }
}

fn base_url(options: &mut Options<'_>) -> Option<(Url, String)> {
    let path = options.at("base_url");
    let Some(text) = options.string("base_url") else {
        if options.get("base_url").is_none() {
            options.error(
                &path,
                "is required: the OpenAI-compatible API's base URL, such as \
                 \"https://api.openai.com/v1\"",
            );
        }
        return None;
    };
    let url = match Url::parse(text) {
        Ok(url) => url,
        Err(e) => {
            options.error(
                &path,
                format!("expected a URL such as \"https://api.openai.com/v1\" ({e})"),
            );
            return None;
        }
    };
    if !matches!(url.scheme(), "http" | "https") {
        options.error(&path, format!("expected an http or https URL, found {:?}", url.scheme()));
        return None;
    }
    if !url.username().is_empty() || url.password().is_some() {
        options.error(
            &path,
            "must not hold credentials: name the key's environment variable in api_key_env",
        );
        return None;
    }
    if url.query().is_some() || url.fragment().is_some() {
        options.error(
            &path,
            "must have no query or fragment (requests go to <base_url>/chat/completions)",
        );
        return None;
    }
    let endpoint = match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => {
            options.error(&path, "has no host");
            return None;
        }
    };
    Some((url, endpoint))
}

/// The key `api_key_env` names: `Some(None)` when there is no `api_key_env`, `None` when it
/// is wrong or the variable is unset or empty.
fn api_key(
    options: &mut Options<'_>,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Option<Option<ApiKey>> {
    let path = options.at("api_key_env");
    let Some(name) = options.string("api_key_env") else {
        return options.get("api_key_env").is_none().then_some(None);
    };
    if name.is_empty() || name.contains('=') || name.contains('\0') {
        options
            .error(&path, format!("expected the name of an environment variable, found {name:?}"));
        return None;
    }
    match env(name).map(std::ffi::OsString::into_string) {
        None => options.error(
            &path,
            format!("the environment variable {name} is not set (it must hold the API key)"),
        ),
        Some(Err(_)) => {
            options.error(&path, format!("the environment variable {name} is not UTF-8"))
        }
        Some(Ok(key)) if key.trim().is_empty() => {
            options.error(&path, format!("the environment variable {name} is empty"));
        }
        Some(Ok(key)) => {
            if http::HeaderValue::from_str(&format!("Bearer {}", key.trim())).is_err() {
                options.error(
                    &path,
                    format!(
                        "the environment variable {name} holds characters a header cannot carry"
                    ),
                );
                return None;
            }
            return Some(Some(ApiKey(key.trim().to_owned())));
        }
    }
    None
}

/// `request_timeout`, or its default.
fn request_timeout(options: &mut Options<'_>) -> Option<Duration> {
    if options.get("request_timeout").is_none() {
        return Some(DEFAULT_REQUEST_TIMEOUT);
    }
    options.duration("request_timeout", ABOVE_ZERO)
}
