//! `[llm]` and `[gateway] llm_api`: every accepted form of each key, every error with its
//! path, and what is kept secret.

use std::path::{Path, PathBuf};

use super::*;
use crate::{Config, FixedEnvironment, Format};

fn env() -> FixedEnvironment {
    FixedEnvironment::new()
        .with_var("PG_PASS", "hunter2")
        .with_var("DATABASE_URL", "postgres://app:hunter2@db.internal/toolgate")
        .with_var("STATE", "/var/lib/toolgate")
        .with_var("DOCS_TOKEN", "docs-secret")
        .with_home_dir("/home/ada")
}

fn load(text: &str) -> Result<Config, String> {
    crate::parse_str(text, Format::Toml, Path::new("/etc/toolgate"), &env())
        .map_err(|errors| errors.to_string())
}

fn llm(text: &str) -> LlmConfig {
    load(text).unwrap_or_else(|errors| panic!("{text}\nmust be valid:\n{errors}")).llm
}

fn store(written: &str) -> Option<ResponseStore> {
    llm(&format!("[llm]\nstore = {written}\n")).store
}

/// The errors of `text`, which must fail.
fn errors(text: &str) -> String {
    match load(text) {
        Ok(config) => panic!("{text}\nloaded but must fail: {config:?}"),
        Err(errors) => errors,
    }
}

/// Asserts that `text` fails with exactly one error, `expected`.
fn fails_with(text: &str, expected: &str) {
    assert_eq!(errors(text), expected, "{text}");
}

#[test]
fn nothing_written_is_the_default() {
    let config = load("").expect("valid");
    assert_eq!(config.llm, LlmConfig::default());
    assert_eq!(config.llm.store, None, "the binary picks the default store");
    assert!(config.llm.allowed_server_urls.is_empty(), "only configured servers by default");
    assert_eq!(config.llm.max_tool_calls, None);
    assert!(config.llm.models.is_empty());
    assert_eq!(llm("[llm]\n"), LlmConfig::default());
}

#[test]
fn gateway_llm_api_defaults_to_false_and_reads_a_boolean() {
    assert!(!load("").expect("valid").gateway.llm_api);
    assert!(!load("[gateway]\nlisten = \"127.0.0.1:9000\"\n").expect("valid").gateway.llm_api);
    assert!(load("[gateway]\nllm_api = true\n").expect("valid").gateway.llm_api);
    assert!(!load("[gateway]\nllm_api = false\n").expect("valid").gateway.llm_api);
    fails_with(
        "[gateway]\nllm_api = \"yes\"\n",
        "gateway.llm_api: expected a boolean, found string",
    );
    fails_with("[gateway]\nllm_api = 1\n", "gateway.llm_api: expected a boolean, found integer");
}

#[test]
fn gateway_metrics_defaults_to_false_and_reads_a_boolean() {
    assert!(!load("").expect("valid").gateway.metrics);
    assert!(load("[gateway]\nmetrics = true\n").expect("valid").gateway.metrics);
    fails_with("[gateway]\nmetrics = 1\n", "gateway.metrics: expected a boolean, found integer");
}

#[test]
fn sqlite_files_are_resolved_as_other_paths_are() {
    let file = |path: &str| Some(ResponseStore::Sqlite(PathBuf::from(path)));
    assert_eq!(store("\"sqlite:responses.db\""), file("/etc/toolgate/responses.db"));
    assert_eq!(store("\"sqlite:state/responses.db\""), file("/etc/toolgate/state/responses.db"));
    assert_eq!(store("\"sqlite:/srv/responses.db\""), file("/srv/responses.db"));
    assert_eq!(store("\"sqlite:~/responses.db\""), file("/home/ada/responses.db"));
    // sqlx's spelling: `sqlite://` then the file, so three slashes make it absolute.
    assert_eq!(store("\"sqlite://responses.db\""), file("/etc/toolgate/responses.db"));
    assert_eq!(store("\"sqlite:///srv/responses.db\""), file("/srv/responses.db"));
    assert_eq!(store("\"sqlite:${STATE}/responses.db\""), file("/var/lib/toolgate/responses.db"));
}

#[test]
fn a_sqlite_file_is_no_secret() {
    let config = load("[llm]\nstore = \"sqlite:${STATE}/responses.db\"\n").expect("valid");
    assert!(!config.secret_env.contains("STATE"), "servers may still inherit it");
}

#[test]
fn postgres_urls_are_kept_as_secrets() {
    for scheme in ["postgres", "postgresql"] {
        let written = format!("\"{scheme}://app:${{PG_PASS}}@db.internal:5432/toolgate\"");
        let Some(ResponseStore::Postgres(url)) = store(&written) else {
            panic!("{written}: a Postgres store")
        };
        assert_eq!(url.expose(), format!("{scheme}://app:hunter2@db.internal:5432/toolgate"));
    }
    let config = load("[llm]\nstore = \"postgres://app:${PG_PASS}@db/toolgate\"\n").expect("valid");
    assert!(!format!("{config:?}").contains("hunter2"), "Debug never shows the password");
    assert!(config.secret_env.contains("PG_PASS"), "no server inherits the password");
    // A socket's folder instead of a host.
    let Some(ResponseStore::Postgres(url)) =
        store("\"postgresql:///toolgate?host=/run/postgresql\"")
    else {
        panic!("a Postgres store without a host")
    };
    assert_eq!(url.expose(), "postgresql:///toolgate?host=/run/postgresql");
}

#[test]
fn a_whole_url_from_a_variable_is_a_secret_whatever_it_turns_out_to_be() {
    let config = load("[llm]\nstore = \"${DATABASE_URL}\"\n").expect("valid");
    let Some(ResponseStore::Postgres(url)) = &config.llm.store else { panic!("Postgres") };
    assert_eq!(url.expose(), "postgres://app:hunter2@db.internal/toolgate");
    assert!(config.secret_env.contains("DATABASE_URL"));
    let env = env().with_var("STORE", "sqlite:responses.db");
    let config = crate::parse_str(
        "[llm]\nstore = \"${STORE}\"\n",
        Format::Toml,
        Path::new("/etc/toolgate"),
        &env,
    )
    .expect("valid");
    assert_eq!(
        config.llm.store,
        Some(ResponseStore::Sqlite(PathBuf::from("/etc/toolgate/responses.db")))
    );
    let env = env.with_var("STORE", "off");
    let config =
        crate::parse_str("[llm]\nstore = \"${STORE}\"\n", Format::Toml, Path::new("/"), &env)
            .expect("valid");
    assert_eq!(config.llm.store, Some(ResponseStore::Off));
}

#[test]
fn state_is_the_state_backends() {
    assert_eq!(store("\"state\""), Some(ResponseStore::State));
    let env = env().with_var("STORE", "state");
    let config =
        crate::parse_str("[llm]\nstore = \"${STORE}\"\n", Format::Toml, Path::new("/"), &env)
            .expect("valid");
    assert_eq!(config.llm.store, Some(ResponseStore::State));
    assert!(errors("[llm]\nstore = \"State\"\n").contains("\"state\", or"));
}

#[test]
fn off_or_false_stores_nothing() {
    assert_eq!(store("\"off\""), Some(ResponseStore::Off));
    assert_eq!(store("false"), Some(ResponseStore::Off));
}

#[test]
fn every_other_store_is_an_error_naming_the_accepted_forms() {
    let forms = "expected \"sqlite:PATH\", \"postgres://...\" (or \"postgresql://...\"), \
                 \"state\", or \"off\" (or false)";
    for written in ["\"mysql://root:hunter2@db/x\"", "\"responses.db\"", "\"\"", "\"OFF\""] {
        let errors = errors(&format!("[llm]\nstore = {written}\n"));
        assert_eq!(errors, format!("llm.store: {forms}"), "{written}");
        assert!(!errors.contains("hunter2"), "the URL is not quoted: {errors}");
    }
    fails_with(
        "[llm]\nstore = true\n",
        &format!("llm.store: {forms}; leave it out for the default SQLite file"),
    );
    fails_with("[llm]\nstore = 3\n", "llm.store: expected a string or false, found integer");
    fails_with(
        "[llm]\nstore = \"sqlite:\"\n",
        "llm.store: no file after \"sqlite:\" (such as \"sqlite:state/responses.db\")",
    );
    fails_with(
        "[llm]\nstore = \"sqlite::memory:\"\n",
        "llm.store: an in-memory database keeps nothing: name a file, or say \"off\"",
    );
    fails_with(
        "[llm]\nstore = \"sqlite:${NOPE}/x.db\"\n",
        "llm.store: environment variable NOPE is not set",
    );
    let errors = errors("[llm]\nstore = \"postgres://app:hunter2@[db/x\"\n");
    assert!(errors.starts_with("llm.store: invalid Postgres URL: "), "{errors}");
    assert!(!errors.contains("hunter2"), "the URL is not quoted: {errors}");
}

#[test]
fn allowed_server_urls_are_globs() {
    let urls = llm(
        "[llm]\nallowed_server_urls = [\"https://mcp.example.com/*\", \"http://127.0.0.1:*/mcp\"]\n",
    )
    .allowed_server_urls;
    assert_eq!(urls, ["https://mcp.example.com/*", "http://127.0.0.1:*/mcp"]);
    assert!(llm("[llm]\nallowed_server_urls = []\n").allowed_server_urls.is_empty());
    let errors = errors("[llm]\nallowed_server_urls = [\"https://ok/*\", \"https://[a\"]\n");
    assert!(
        errors.starts_with("llm.allowed_server_urls[1]: invalid glob \"https://[a\": "),
        "{errors}"
    );
    fails_with(
        "[llm]\nallowed_server_urls = \"https://a/*\"\n",
        "llm.allowed_server_urls: expected an array of strings, found string",
    );
    fails_with(
        "[llm]\nallowed_server_urls = [\"https://a/*\", 3]\n",
        "llm.allowed_server_urls[1]: expected a string, found integer",
    );
}

#[test]
fn max_tool_calls_is_between_1_and_1000() {
    assert_eq!(llm("[llm]\nmax_tool_calls = 1\n").max_tool_calls, Some(1));
    assert_eq!(llm("[llm]\nmax_tool_calls = 1000\n").max_tool_calls, Some(1000));
    fails_with("[llm]\nmax_tool_calls = 0\n", "llm.max_tool_calls: 0 is out of range (1 to 1000)");
    fails_with(
        "[llm]\nmax_tool_calls = 1001\n",
        "llm.max_tool_calls: 1001 is out of range (1 to 1000)",
    );
    fails_with(
        "[llm]\nmax_tool_calls = -3\n",
        "llm.max_tool_calls: -3 is out of range (1 to 1000)",
    );
    fails_with(
        "[llm]\nmax_tool_calls = \"many\"\n",
        "llm.max_tool_calls: expected a positive integer, found string",
    );
}

#[test]
fn retention_and_in_flight_bounds_are_read_and_checked() {
    let text = "[llm]\nstore_ttl = \"7d\"\nstore_max_per_caller = 500\n\
                max_in_flight = 32\nmax_in_flight_per_caller = 4\n";
    let llm = llm(text);
    assert_eq!(llm.store_ttl, Some(std::time::Duration::from_secs(7 * 24 * 3600)));
    assert_eq!(llm.store_max_per_caller, Some(500));
    assert_eq!(llm.max_in_flight, Some(32));
    assert_eq!(llm.max_in_flight_per_caller, Some(4));
    let none = self::llm("[llm]\n");
    assert_eq!(
        (none.store_ttl, none.store_max_per_caller, none.max_in_flight),
        (None, None, None),
        "the endpoint's defaults apply"
    );
    fails_with("[llm]\nstore_ttl = \"0s\"\n", "llm.store_ttl: must be greater than zero");
    fails_with(
        "[llm]\nstore_max_per_caller = 0\n",
        "llm.store_max_per_caller: 0 is out of range (1 to 100000000)",
    );
    fails_with(
        "[llm]\nmax_in_flight = 100001\n",
        "llm.max_in_flight: 100001 is out of range (1 to 100000)",
    );
    fails_with(
        "[llm]\nmax_in_flight_per_caller = true\n",
        "llm.max_in_flight_per_caller: expected a positive integer, found boolean",
    );
}

#[test]
fn models_map_a_name_to_a_provider_and_model() {
    let text = r#"
        [llm.models.gpt]
        provider = "openai"
        model = "gpt-4.1"
        base_url = "https://api.openai.com/v1"
        api_key_env = "WORK_OPENAI_KEY"

        [llm.models."claude.fast"]
        provider = "anthropic"
        model = "${MODEL:-claude-haiku-4-5}"

        [llm.models.local]
        base_url = "http://127.0.0.1:11434/v1"

        [llm.models.bare]
    "#;
    let config = load(text).expect("valid");
    let models = &config.llm.models;
    assert_eq!(models.keys().collect::<Vec<_>>(), ["bare", "claude.fast", "gpt", "local"]);
    assert_eq!(
        models["gpt"],
        LlmModel {
            provider: Some("openai".to_owned()),
            model: Some("gpt-4.1".to_owned()),
            base_url: Some("https://api.openai.com/v1".parse().expect("a URL")),
            api_key_env: Some("WORK_OPENAI_KEY".to_owned()),
        }
    );
    assert_eq!(models["claude.fast"].provider.as_deref(), Some("anthropic"));
    assert_eq!(models["claude.fast"].model.as_deref(), Some("claude-haiku-4-5"));
    assert_eq!(
        models["local"].base_url.as_ref().map(url::Url::as_str),
        Some("http://127.0.0.1:11434/v1")
    );
    assert_eq!(models["bare"], LlmModel::default());
    // The key's variable is toolgate's own: no server inherits it.
    assert!(config.secret_env.contains("WORK_OPENAI_KEY"));
    for provider in crate::AGENT_PROVIDERS {
        let text = format!("[llm.models.m]\nprovider = \"{provider}\"\n");
        assert_eq!(llm(&text).models["m"].provider.as_deref(), Some(*provider));
    }
}

#[test]
fn each_model_key_reports_its_mistake_at_its_path() {
    fails_with(
        "[llm.models.gpt]\nprovider = \"openia\"\n",
        "llm.models.gpt.provider: unknown provider \"openia\" (known: openai, openai-responses, \
         anthropic, deepseek, compatible)",
    );
    fails_with(
        "[llm.models.gpt]\nprovider = 1\n",
        "llm.models.gpt.provider: expected a string, found integer",
    );
    fails_with(
        "[llm.models.gpt]\nmodel = 4\n",
        "llm.models.gpt.model: expected a string, found integer",
    );
    fails_with("[llm.models.gpt]\nmodel = \"\"\n", "llm.models.gpt.model: must not be empty");
    fails_with(
        "[llm.models.gpt]\nmodel = \"${NOPE}\"\n",
        "llm.models.gpt.model: environment variable NOPE is not set",
    );
    fails_with(
        "[llm.models.gpt]\nbase_url = \"ftp://models.example/v1\"\n",
        "llm.models.gpt.base_url: unsupported URL scheme \"ftp\" (expected http or https)",
    );
    fails_with(
        "[llm.models.gpt]\nbase_url = \"not a url\"\n",
        "llm.models.gpt.base_url: invalid URL: relative URL without a base",
    );
    let errors = errors("[llm.models.gpt]\napi_key_env = \"sk-proj-abc123\"\n");
    assert_eq!(
        errors,
        "llm.models.gpt.api_key_env: not a variable name: write the name of the variable that \
         holds the key (such as \"OPENAI_API_KEY\"), not the key"
    );
    assert!(!errors.contains("sk-proj"), "what was written may be the key: {errors}");
    fails_with(
        "[llm.models.gpt]\nprovidr = \"openai\"\n",
        "llm.models.gpt.providr: unknown key, did you mean provider? (expected one of: provider, \
         model, base_url, api_key_env)",
    );
    fails_with(
        "[llm.models.\"a b\"]\nprovider = \"nope\"\n",
        "llm.models.\"a b\".provider: unknown provider \"nope\" (known: openai, openai-responses, \
         anthropic, deepseek, compatible)",
    );
    fails_with("[llm.models.\"\"]\n", "llm.models.\"\": a model's name must not be empty");
    fails_with(
        "[llm]\nmodels.gpt = \"gpt-4.1\"\n",
        "llm.models.gpt: expected a table, found string",
    );
    fails_with("[llm]\nmodels = [\"gpt\"]\n", "llm.models: expected a table, found array");
}

#[test]
fn every_mistake_is_reported_at_once() {
    let text = r#"
        [llm]
        store = "redis://x"
        allowed_server_urls = ["["]
        max_tool_calls = 0
        stor = "off"

        [llm.models.a]
        provider = "x"
        api_key_env = "1X"

        [llm.models.b]
        base_url = "ftp://x"
    "#;
    let errors = errors(text);
    for path in [
        "llm.stor: unknown key, did you mean store?",
        "llm.store: ",
        "llm.allowed_server_urls[0]: ",
        "llm.max_tool_calls: ",
        "llm.models.a.provider: ",
        "llm.models.a.api_key_env: ",
        "llm.models.b.base_url: ",
    ] {
        assert!(errors.lines().any(|line| line.starts_with(path)), "{path} in:\n{errors}");
    }
    assert_eq!(errors.lines().count(), 7, "{errors}");
}

#[test]
fn llm_is_a_table_with_known_keys() {
    fails_with("llm = true\n", "llm: expected a table, found boolean");
    fails_with(
        "[llm]\nmax_tools_calls = 3\n",
        "llm.max_tools_calls: unknown key, did you mean max_tool_calls? (expected one of: store, \
         allowed_server_urls, max_tool_calls, store_ttl, store_max_per_caller, max_in_flight, \
         max_in_flight_per_caller, models)",
    );
}

#[test]
fn a_client_json_file_has_no_llm_settings() {
    let config = crate::parse_str("{\"mcpServers\": {}}", Format::Json, Path::new("/"), &env())
        .expect("valid");
    assert_eq!(config.llm, LlmConfig::default());
    assert!(!config.gateway.llm_api);
}

#[test]
fn pool_reads_its_bounds_and_warmup_entries() {
    let config = load(
        "[pool]\nmax_connections = 20\nidle_timeout = \"90s\"\nwarmup = [\
         { url = \"https://docs.example/mcp\", label = \"docs\", token = \"${DOCS_TOKEN}\", \
         tenant = \"acme\" }]\n",
    )
    .expect("valid");
    let pool = &config.llm.pool;
    assert_eq!(pool.max_connections, Some(20));
    assert_eq!(pool.idle_timeout, Some(std::time::Duration::from_secs(90)));
    assert_eq!(pool.warmup.len(), 1);
    let entry = &pool.warmup[0];
    assert_eq!((entry.label.as_str(), entry.tenant.as_deref()), ("docs", Some("acme")));
    assert!(entry.token.is_some());
    assert!(
        config.secret_env.iter().any(|name| name == "DOCS_TOKEN"),
        "the token's variable is withheld"
    );
    assert_eq!(llm("").pool, PoolConfig::default());
}

#[test]
fn pool_mistakes_are_named() {
    let errors = errors(
        "[pool]\nmax_connections = 0\nidle_timeout = \"soon\"\nwarmup = [{ label = \"x\" }, \
         { url = \"https://a.example\", lable = \"y\" }]\n",
    );
    for path in [
        "pool.max_connections: ",
        "pool.idle_timeout: ",
        "pool.warmup[0].url: ",
        "pool.warmup[1].lable: ",
    ] {
        assert!(errors.lines().any(|line| line.starts_with(path)), "{path} in:\n{errors}");
    }
}
