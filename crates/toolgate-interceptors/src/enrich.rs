//! `enrich`: puts an LLM's summary of a tool result before the result, or in place of its
//! text, asking any OpenAI-compatible Chat Completions endpoint (OpenAI, Azure's v1 API,
//! OpenRouter, vLLM, Ollama, llama.cpp's server, LiteLLM, ...).
//!
//! ```toml
//! [[pipeline]]
//! kind = "enrich"
//! tools = ["read_file", "search_*"]     # the usual filters: which tools
//! base_url = "https://api.openai.com/v1"
//! model = "gpt-4o-mini"
//! api_key_env = "OPENAI_API_KEY"        # the NAME of the variable holding the key
//! placement = "before"                  # before | instead
//! min_tokens = 2000                     # leave results of at most 2000 tokens alone
//! prompt = "Summarise what {tool} returned for a coding agent:\n\n{result}"
//! ```
//!
//! - **Hook**: `tools/call`, response phase. **Type**: mutation. **Fails open**: an endpoint
//!   that is down, answers an HTTP error, answers too late or with a body that is not a
//!   chat completion leaves the result as it was; the gateway publishes `interceptor/failed`
//!   with a message naming the endpoint's host and what went wrong (`the summary endpoint
//!   api.openai.com answered HTTP 429 Too Many Requests (rate_limit_exceeded)`), never the
//!   key, the prompt or the result.
//! - **Which results**: those of the tools the `servers` and `tools` filters select, whose
//!   text (every text block, embedded text resource and `structuredContent`, as the model
//!   reads them) is more than `min_tokens` tokens; error results (`isError`) only with
//!   `on_error = true`.
//! - **The request**: `POST <base_url>/chat/completions` with `model`, one `user` message
//!   (the prompt with its placeholders filled in) and `max_tokens`, made by `toolgate-llm`'s
//!   provider client (the agent's); streamed, and an endpoint that answers with one
//!   `chat.completion` body instead is read too; not retried; `Authorization: Bearer <key>`
//!   when `api_key_env` is set. Redirects are not followed (they would carry the key
//!   elsewhere). A result longer than `max_input_tokens` is cut there before it goes into the
//!   prompt, and the prompt says so.
//! - **The key**: read from the environment variable `api_key_env` names when the pipeline is
//!   built; a variable that is not set or empty is a config error (`toolgate config check`
//!   reports it too, so run it with the same environment as `serve`). Leave `api_key_env`
//!   out for a local server that wants none. The key is never logged, and prints as `***`.
//!   It is never sent over plain `http://` to another machine: with `api_key_env` set, an
//!   `http://` `base_url` must be this machine (`localhost`, `127.0.0.1`, `[::1]`), else the
//!   entry is refused (`toolgate_llm::key_route`).
//! - **The prompt**: `{result}` (required), `{tool}` (the tool's name as clients see it,
//!   `server__tool`) and `{server}` are filled in once each, in one pass: a result that
//!   contains `{tool}` keeps it. Other braces are plain text. The default is
//!   [`DEFAULT_PROMPT`].
//! - **Placement** (`placement`), the result staying a valid `CallToolResult` either way:
//!   - `"before"`: a text block `Summary (the full result follows):\n<summary>` is put first;
//!     every original block and `structuredContent` stay as they were.
//!   - `"instead"`: every text block is removed and the block
//!     `Summary of the result (its full text was left out):\n<summary>` takes the place of the
//!     first; images, audio, embedded resources and links stay, and so does
//!     `structuredContent` (a tool with an `outputSchema` must return it, so it is kept
//!     whole; clients that show it to the model still show it). `isError` and `_meta` stay.
//!
//!   The summary block's `_meta` has `"io.toolgate/enrich": {"model", "placement"}`.
//! - **Time**: the endpoint has `request_timeout` (default 20 s). The pipeline's own timeout
//!   of the entry (`timeout`, 5 s for other kinds) defaults to `request_timeout` + 5 s, so
//!   the pipeline never cuts a summary short; a `timeout` set on the entry must be longer
//!   than `request_timeout`.
//! - **Cache**: summaries are kept by a SHA-256 of the model, the prompt template, the server,
//!   the tool and the result text, up to `cache_size` of them (least recently used out first;
//!   0 turns the cache off). A result seen again is summarised without a request. Failures
//!   are not cached. Two identical results in flight at once each make their request.
//! - **Event**: `transform/applied` with `summary_tokens` (the summary, counted in
//!   `encoding`), `cached`, `model`, `placement`, and, when the endpoint counted them,
//!   `llm_prompt_tokens` and `llm_completion_tokens`; plus the tokens before and after every
//!   transform reports.
//! - `mode = "audit"` still asks the endpoint (and pays for it), and changes nothing.
//!
//! # Options
//!
//! | option | values | default | meaning |
//! |---|---|---|---|
//! | `base_url` | http(s) URL, no credentials or query | required | the API's base; requests go to `<base_url>/chat/completions` |
//! | `model` | string | required | the model that writes the summaries |
//! | `api_key_env` | an environment variable's name | none: no `Authorization` | where the API key is |
//! | `prompt` | text with `{result}`, optionally `{tool}`, `{server}` | [`DEFAULT_PROMPT`] | what the model is asked |
//! | `placement` | `"before"`, `"instead"` | `"before"` | where the summary goes |
//! | `request_timeout` | duration (`"20s"`, `"1m"`) above zero | `"20s"` | how long the endpoint has |
//! | `max_tokens` | integer ≥ 1 | 512 | the summary's length limit, sent as `max_tokens` |
//! | `min_tokens` | integer ≥ 0 | 1000 | results of at most this many tokens are left alone |
//! | `max_input_tokens` | integer ≥ 1 | 32000 | the most tokens of a result put into the prompt |
//! | `on_error` | boolean | `false` | whether error results are summarised too |
//! | `cache_size` | integer ≥ 0 | 256 | summaries kept (0: no cache) |
//! | `encoding` | `"o200k_base"`, `"cl100k_base"` | `"o200k_base"` | how tokens are counted |
//! | `proxy` | a proxy URL (`"http://host:port"`, written out: no `${VAR}`), or `false` | `HTTPS_PROXY` and the like | the proxy of the endpoint's requests (`[proxy]` is MCP traffic only) |
//!
//! `max_tokens` is the parameter every OpenAI-compatible server knows; to OpenAI itself
//! (`api.openai.com`) it is sent as `max_completion_tokens`, which its reasoning models (o1,
//! o3, ...) want instead.
//!
//! # Option errors
//!
//! ```text
//! pipeline[0].base_url: is required: the OpenAI-compatible API's base URL, such as "https://api.openai.com/v1"
//! pipeline[0].api_key_env: the environment variable OPENAI_API_KEY is not set (it must hold the API key)
//! pipeline[0].base_url: the key from api_key_env (OPENAI_API_KEY) would go to 10.0.0.5:8080 over plain http://, where anyone on the way can read it: use an https:// base_url (plain http:// is only for a server on this machine: localhost, 127.0.0.1, [::1]), or leave api_key_env out for a server that wants no key
//! pipeline[0].prompt: has no {result}, where the tool's result goes
//! pipeline[0].placement: expected "before" or "instead", found "after"
//! pipeline[0].timeout: 10s would cut the summary short: the pipeline's timeout must be longer than request_timeout (20s); leave it out to get request_timeout + 5s
//! ```

mod cache;
mod endpoint;
mod settings;

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::json;
use toolgate_audit::EventBus;
use toolgate_config::InterceptorConfig;
use toolgate_core::mcp;
use toolgate_intercept::{
    CallContext, Descriptor, InterceptError, InterceptionEvent, Interceptor, Message, Outcome,
    Phase,
};

pub use endpoint::{Completion, EndpointError};
pub use settings::{
    DEFAULT_CACHE_SIZE, DEFAULT_MAX_INPUT_TOKENS, DEFAULT_MAX_TOKENS, DEFAULT_MIN_TOKENS,
    DEFAULT_PROMPT, DEFAULT_REQUEST_TIMEOUT, Placement, Settings, TIMEOUT_MARGIN, Template,
};

use crate::options::{OptionError, Options};
use crate::transform::{self, Applied};

/// The config `kind`.
pub const KIND: &str = "enrich";

/// The `_meta` key of the summary block.
pub const META_KEY: &str = "io.toolgate/enrich";

/// The first line of the summary block, by placement.
const BEFORE_HEADING: &str = "Summary (the full result follows):";
const INSTEAD_HEADING: &str = "Summary of the result (its full text was left out):";

/// The `enrich` interceptor.
pub struct Enrich {
    descriptor: Descriptor,
    settings: Settings,
    endpoint: endpoint::Endpoint,
    cache: cache::Cache,
    events: EventBus,
}

impl std::fmt::Debug for Enrich {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Enrich")
            .field("descriptor", &self.descriptor)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// A summary, and whether it came from the cache.
struct Summary {
    text: Arc<str>,
    cached: bool,
    completion: Option<Completion>,
}

impl Enrich {
    /// Builds it from its `[[pipeline]]` entry, reading the key from the process's
    /// environment.
    pub fn from_config(
        entry: &InterceptorConfig,
        services: &crate::Services,
    ) -> Result<Enrich, Vec<OptionError>> {
        Enrich::with_env(entry, services, |name| std::env::var_os(name))
    }

    /// The same, looking environment variables up with `env`.
    pub fn with_env(
        entry: &InterceptorConfig,
        services: &crate::Services,
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Enrich, Vec<OptionError>> {
        let mut options = Options::new(entry.path.clone(), &entry.options);
        let settings = Settings::read(&mut options, entry, env);
        let mut descriptor = transform::descriptor(KIND, &[InterceptionEvent::ToolsCall]);
        if let Some(settings) = &settings {
            descriptor.timeout = settings.pipeline_timeout();
        }
        let descriptor = options.configure(descriptor, entry);
        let Some(settings) = settings else {
            return Err(options.errors);
        };
        options.finish(descriptor, |descriptor| {
            // The first count builds the encoding's tables (about a second): not on a call.
            let encoding = settings.encoding;
            std::thread::spawn(move || encoding.warm_up());
            Enrich {
                descriptor,
                endpoint: endpoint::Endpoint::new(&settings),
                cache: cache::Cache::new(settings.cache_size),
                settings,
                events: services.events.clone(),
            }
        })
    }

    /// Its settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// How many summaries the cache holds.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    /// `result` with a summary, or `None` when it is left alone; errors when no summary
    /// could be had.
    pub async fn enrich(
        &self,
        result: &mcp::CallToolResult,
        server: &str,
        tool: &str,
    ) -> Result<Option<(mcp::CallToolResult, SummaryInfo)>, EndpointError> {
        if result.is_error == Some(true) && !self.settings.on_error {
            return Ok(None);
        }
        let text = transform::model_text(result);
        if text.trim().is_empty() || self.settings.encoding.fits(&text, self.settings.min_tokens) {
            return Ok(None);
        }
        let summary = self.summary(server, tool, &text).await?;
        let rewritten = self.place(result, &summary.text);
        let info = SummaryInfo {
            before: text,
            summary: summary.text,
            cached: summary.cached,
            completion: summary.completion,
        };
        Ok(Some((rewritten, info)))
    }

    /// The summary of `text`, from the cache or the endpoint.
    async fn summary(
        &self,
        server: &str,
        tool: &str,
        text: &str,
    ) -> Result<Summary, EndpointError> {
        let settings = &self.settings;
        let key = cache::key(&settings.model, settings.prompt.as_str(), server, tool, text);
        if let Some(text) = self.cache.get(&key) {
            return Ok(Summary { text, cached: true, completion: None });
        }
        let prompt = settings.prompt.render(tool, server, &self.input(text));
        let completion = self.endpoint.complete(&prompt).await?;
        let summary: Arc<str> = Arc::from(completion.text.as_str());
        self.cache.insert(key, summary.clone());
        Ok(Summary { text: summary, cached: false, completion: Some(completion) })
    }

    /// `text` cut to `max_input_tokens`, saying so when it is.
    fn input<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        let (encoding, budget) = (self.settings.encoding, self.settings.max_input_tokens);
        if encoding.fits(text, budget) {
            return text.into();
        }
        let (end, _) = encoding.prefix_within(text, budget);
        format!(
            "{}\n[... the rest of the result ({} bytes) was left out]",
            &text[..end],
            text.len() - end
        )
        .into()
    }

    /// `result` with `summary` placed as the settings say.
    fn place(&self, result: &mcp::CallToolResult, summary: &str) -> mcp::CallToolResult {
        let placement = self.settings.placement;
        let heading = match placement {
            Placement::Before => BEFORE_HEADING,
            Placement::Instead => INSTEAD_HEADING,
        };
        let mut meta = mcp::JsonObject::new();
        meta.insert(
            META_KEY.to_owned(),
            json!({"model": self.settings.model, "placement": placement.as_str()}),
        );
        let block = mcp::ContentBlock::Text(
            mcp::TextContent::new(format!("{heading}\n{summary}")).with_meta(mcp::MetaObject(meta)),
        );
        let mut rewritten = result.clone();
        match placement {
            Placement::Before => rewritten.content.insert(0, block),
            Placement::Instead => {
                let is_text = |b: &mcp::ContentBlock| matches!(b, mcp::ContentBlock::Text(_));
                // Every block before the first text block stays where it is.
                let at = rewritten.content.iter().position(is_text).unwrap_or(0);
                rewritten.content.retain(|b| !is_text(b));
                rewritten.content.insert(at, block);
            }
        }
        rewritten
    }
}

/// What [`Enrich::enrich`] did, for its event.
#[derive(Debug, Clone)]
pub struct SummaryInfo {
    /// The result's text before.
    pub before: String,
    /// The summary.
    pub summary: Arc<str>,
    /// Whether it came from the cache.
    pub cached: bool,
    /// What the endpoint said, when it was asked.
    pub completion: Option<Completion>,
}

impl Interceptor for Enrich {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn intercept<'a>(
        &'a self,
        _event: InterceptionEvent,
        _phase: Phase,
        message: &'a Message,
        ctx: &'a mut CallContext,
    ) -> BoxFuture<'a, Result<Outcome, InterceptError>> {
        Box::pin(async move {
            let (Message::ToolResult(result), Some(target)) = (message, &ctx.target) else {
                return Ok(Outcome::Continue);
            };
            let enriched = self
                .enrich(result, &target.server, &target.exposed)
                .await
                .map_err(|e| InterceptError(e.to_string()))?;
            let Some((rewritten, info)) = enriched else {
                return Ok(Outcome::Continue);
            };
            if self.events.wants(transform::APPLIED) {
                self.publish(&rewritten, &info, ctx);
            }
            Ok(Outcome::Rewrite(Message::ToolResult(rewritten)))
        })
    }
}

impl Enrich {
    /// Publishes `transform/applied` for `rewritten`.
    fn publish(&self, rewritten: &mcp::CallToolResult, info: &SummaryInfo, ctx: &CallContext) {
        let after = transform::model_text(rewritten);
        let mut details = vec![
            ("summary_tokens", json!(self.settings.encoding.count(&info.summary))),
            ("cached", json!(info.cached)),
            ("model", json!(self.settings.model)),
            ("placement", json!(self.settings.placement.as_str())),
        ];
        if let Some(completion) = &info.completion {
            if let Some(n) = completion.prompt_tokens {
                details.push(("llm_prompt_tokens", json!(n)));
            }
            if let Some(n) = completion.completion_tokens {
                details.push(("llm_completion_tokens", json!(n)));
            }
        }
        Applied {
            interceptor: &self.descriptor.name,
            kind: KIND,
            before: &info.before,
            after: &after,
            encoding: self.settings.encoding,
            details,
        }
        .publish(&self.events, ctx);
    }
}

#[cfg(test)]
mod tests;
