//! `[servers.<name>] response_format = { "<tool glob>" = "<item>" }`: which OpenAI Responses
//! item each of a server's tools' results become (`function_call_output`, `mcp_call`,
//! `web_search_call`, `file_search_call`, `code_interpreter_call`; `toolgate-llm`'s `format`
//! builds them). Keys are the server's own tool names or globs of them, as in `allow_tools`.

use toolgate_core::ResultFormat;

use crate::check::Checker;
use crate::error::key_path;
use crate::filter::glob;
use crate::model::ServerConfig;
use crate::value::Value;

/// Checks a `response_format` table: every key a glob that compiles, every value the name of a
/// Responses item. Returns the entries in the table's order.
pub(crate) fn check(
    cx: &mut Checker<'_>,
    value: &Value,
    path: &str,
) -> Option<Vec<(String, ResultFormat)>> {
    let entries = cx.table(value, path)?;
    let mut out = Some(Vec::with_capacity(entries.len()));
    for (pattern, value) in entries {
        let at = key_path(path, pattern);
        let pattern_ok = match glob(pattern) {
            Ok(_) => true,
            Err(error) => {
                cx.error(&at, format!("invalid glob {pattern:?}: {}", error.kind()));
                false
            }
        };
        let format = cx.string(value, &at).and_then(|name| item(cx, name, &at));
        match (pattern_ok, format, &mut out) {
            (true, Some(format), Some(out)) => out.push((pattern.clone(), format)),
            _ => out = None,
        }
    }
    out
}

/// The Responses item named `name`; an error naming the known items otherwise.
fn item(cx: &mut Checker<'_>, name: &str, path: &str) -> Option<ResultFormat> {
    let known = ResultFormat::list(&ResultFormat::RESPONSES_ITEMS);
    match name.parse::<ResultFormat>() {
        Ok(format) if format.is_responses_item() => Some(format),
        Ok(_) => {
            cx.error(path, format!("{name:?} is not an OpenAI Responses item (known: {known})"));
            None
        }
        Err(_) => {
            cx.error(path, format!("unknown format {name:?} (known: {known})"));
            None
        }
    }
}

/// Characters of a pattern that match only themselves: how specific it is.
fn literal_len(pattern: &str) -> usize {
    pattern.chars().filter(|c| !matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | ',' | '\\')).count()
}

impl ServerConfig {
    /// The `response_format` of this server's tool `tool` (its own name, not the exposed one):
    /// the entry whose key is `tool` itself, else the most specific glob that matches it (the
    /// most characters besides wildcards; on a tie, the first in the table). `None` when no key
    /// matches: the caller's default (`function_call_output`).
    pub fn response_format_for(&self, tool: &str) -> Option<ResultFormat> {
        if let Some((_, format)) = self.response_format.iter().find(|(key, _)| key == tool) {
            return Some(*format);
        }
        let mut best: Option<(usize, ResultFormat)> = None;
        for (pattern, format) in &self.response_format {
            let matches = glob(pattern).is_ok_and(|glob| glob.compile_matcher().is_match(tool));
            let specificity = literal_len(pattern);
            if matches && best.is_none_or(|(known, _)| specificity > known) {
                best = Some((specificity, *format));
            }
        }
        best.map(|(_, format)| format)
    }
}

#[cfg(test)]
mod tests {
    use toolgate_core::ResultFormat;

    use crate::FixedEnvironment;

    fn server(table: &str) -> crate::ServerConfig {
        let text =
            format!("[servers.search]\ncommand = \"search-mcp\"\nresponse_format = {table}\n");
        let env = FixedEnvironment::new();
        let config = crate::parse_str(&text, crate::Format::Toml, std::path::Path::new("/"), &env)
            .expect("valid");
        config.servers.into_iter().next().expect("one server")
    }

    #[test]
    fn exact_names_win_then_the_most_specific_glob() {
        let server = server(
            r#"{ "*" = "function_call_output", "web_*" = "web_search_call", "web_fetch" = "mcp_call", "*_files" = "file_search_call" }"#,
        );
        assert_eq!(server.response_format_for("web_fetch"), Some(ResultFormat::McpCall));
        assert_eq!(server.response_format_for("web_search"), Some(ResultFormat::WebSearchCall));
        assert_eq!(server.response_format_for("find_files"), Some(ResultFormat::FileSearchCall));
        assert_eq!(server.response_format_for("run"), Some(ResultFormat::FunctionCallOutput));
        // `web_*` and `*_files` are equally specific: the first in the table wins (TOML sorts
        // keys, so `*_files`).
        assert_eq!(server.response_format_for("web_files"), Some(ResultFormat::FileSearchCall));
    }

    #[test]
    fn no_entry_means_no_format() {
        let server = server(r#"{ "python" = "code_interpreter_call" }"#);
        assert_eq!(server.response_format_for("python"), Some(ResultFormat::CodeInterpreterCall));
        assert_eq!(server.response_format_for("python3"), None);
    }
}
