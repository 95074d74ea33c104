//! The Responses items of OpenAI's built-in tools, made from an MCP tool's result for tools
//! configured so (`response_format`): `web_search_call`, `file_search_call`,
//! `code_interpreter_call`. Fields come from `structuredContent` (or a JSON text block), then
//! from the content itself; the module doc of `format` has the mapping.

use std::borrow::Cow;

use serde_json::{Map, Value, json};
use toolgate_core::mcp;

use super::ToolCall;
use crate::content::{self, Piece};

fn status(result: &mcp::CallToolResult) -> &'static str {
    if result.is_error == Some(true) { "failed" } else { "completed" }
}

/// The first of `keys` in `object` that is a string.
fn string_field<'v>(object: &'v Map<String, Value>, keys: &[&str]) -> Option<&'v str> {
    keys.iter().find_map(|key| object.get(*key).and_then(Value::as_str))
}

/// The first of `keys` in `object` that is an array.
fn array_field<'v>(object: &'v Map<String, Value>, keys: &[&str]) -> Option<&'v Vec<Value>> {
    keys.iter().find_map(|key| object.get(*key).and_then(Value::as_array))
}

/// The strings of an array (others skipped).
fn strings(values: &[Value]) -> Vec<String> {
    values.iter().filter_map(Value::as_str).map(str::to_owned).collect()
}

/// The list items of the data: the data itself when it is an array, else its first array field
/// of `keys`.
fn items<'v>(data: Option<&'v Value>, keys: &[&str]) -> Option<&'v Vec<Value>> {
    match data? {
        Value::Array(items) => Some(items),
        Value::Object(object) => array_field(object, keys),
        _ => None,
    }
}

/// The search queries of the call: `queries` (strings) or `query` / `q` in the arguments, else
/// `query` in the data.
fn queries(call: &ToolCall<'_>, data: Option<&Value>) -> Vec<String> {
    let from = |object: &Map<String, Value>| {
        array_field(object, &["queries"])
            .map(|values| strings(values))
            .filter(|queries| !queries.is_empty())
            .or_else(|| string_field(object, &["query", "q"]).map(|q| vec![q.to_owned()]))
    };
    call.arguments
        .and_then(from)
        .or_else(|| data.and_then(Value::as_object).and_then(from))
        .unwrap_or_default()
}

/// `{"type": "web_search_call", "id", "status", "action": {"type": "search", "query",
/// "queries", "sources": [{"type": "url", "url"}]}}`
pub(super) fn web_search_call(result: &mcp::CallToolResult, call: &ToolCall<'_>) -> Value {
    let data = content::data(result);
    let data = data.as_deref();
    let mut urls: Vec<String> = Vec::new();
    let mut add = |url: &str| {
        if !url.is_empty() && !urls.iter().any(|known| known == url) {
            urls.push(url.to_owned());
        }
    };
    for item in items(data, &["results", "sources"]).into_iter().flatten() {
        match item {
            Value::String(url) => add(url),
            Value::Object(object) => {
                if let Some(url) = string_field(object, &["url", "link", "href", "uri"]) {
                    add(url);
                }
            }
            _ => {}
        }
    }
    for block in &result.content {
        let uri = match block {
            mcp::ContentBlock::ResourceLink(link) => Some(link.uri.as_str()),
            mcp::ContentBlock::Resource(embedded) => match &embedded.resource {
                mcp::ResourceContents::TextResourceContents { uri, .. }
                | mcp::ResourceContents::BlobResourceContents { uri, .. } => Some(uri.as_str()),
                _ => None,
            },
            _ => None,
        };
        if let Some(uri) = uri.filter(|uri| is_web(uri)) {
            add(uri);
        }
    }
    if data.is_none() {
        for block in &result.content {
            if let mcp::ContentBlock::Text(text) = block {
                for url in web_urls(&text.text) {
                    add(url);
                }
            }
        }
    }
    let queries = queries(call, data);
    let mut action = Map::new();
    action.insert("type".into(), "search".into());
    action.insert("query".into(), queries.first().cloned().unwrap_or_default().into());
    if queries.len() > 1 {
        action.insert("queries".into(), queries.into());
    }
    let sources: Vec<Value> = urls.iter().map(|url| json!({"type": "url", "url": url})).collect();
    action.insert("sources".into(), sources.into());
    json!({"type": "web_search_call", "id": call.id, "status": status(result), "action": action})
}

fn is_web(uri: &str) -> bool {
    let lower = uri.get(..8).unwrap_or(uri).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// The `http(s)://` URLs in a text, in order: each runs to the first space, quote or bracket,
/// without trailing punctuation.
fn web_urls(text: &str) -> Vec<&str> {
    let mut urls = Vec::new();
    let mut rest = text;
    while let Some(start) =
        ["https://", "http://"].iter().filter_map(|scheme| rest.find(scheme)).min()
    {
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| c.is_whitespace() || "\"'<>()[]{}`".contains(c))
            .unwrap_or(tail.len());
        let url = tail[..end].trim_end_matches(['.', ',', ';', ':', '!', '?']);
        if url.len() > "https://".len() {
            urls.push(url);
        }
        rest = &tail[end.max(1)..];
    }
    urls
}

/// `{"type": "file_search_call", "id", "queries", "status", "results": [{"file_id",
/// "filename", "score", "text", "attributes"}] | null}`
pub(super) fn file_search_call(result: &mcp::CallToolResult, call: &ToolCall<'_>) -> Value {
    let data = content::data(result);
    let data = data.as_deref();
    let results = if result.is_error == Some(true) {
        Value::Null
    } else if let Some(items) = items(data, &["results", "files", "matches"]) {
        items.iter().map(file_result).collect()
    } else {
        from_content(result).into()
    };
    json!({
        "type": "file_search_call",
        "id": call.id,
        "queries": queries(call, data),
        "status": status(result),
        "results": results,
    })
}

/// One item of the data as a file search result.
fn file_result(item: &Value) -> Value {
    let Value::Object(object) = item else {
        let text = item.as_str().map_or_else(|| item.to_string(), str::to_owned);
        return json!({"text": text});
    };
    let mut out = Map::new();
    if let Some(id) = string_field(object, &["file_id", "fileId", "id", "uri", "url"]) {
        out.insert("file_id".into(), id.into());
    }
    if let Some(name) = string_field(object, &["filename", "file_name", "name", "title", "path"]) {
        out.insert("filename".into(), name.into());
    }
    if let Some(score) = ["score", "relevance"].iter().find_map(|key| object.get(*key))
        && score.is_number()
    {
        out.insert("score".into(), score.clone());
    }
    let text = ["text", "content", "snippet", "chunk"].iter().find_map(|key| object.get(*key));
    let text = match text {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => item.to_string(),
    };
    out.insert("text".into(), text.into());
    let attributes = ["attributes", "metadata"].iter().find_map(|key| object.get(*key));
    if let Some(Value::Object(attributes)) = attributes {
        // At most 16 keys, each a string, a number or a boolean.
        let kept: Map<String, Value> = attributes
            .iter()
            .filter(|(_, value)| value.is_string() || value.is_number() || value.is_boolean())
            .take(16)
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        if !kept.is_empty() {
            out.insert("attributes".into(), kept.into());
        }
    }
    out.into()
}

/// Results from the content, when the data has no list: a text block is one result, a
/// resource one result with its URI as the file id, a resource link one without text.
fn from_content(result: &mcp::CallToolResult) -> Vec<Value> {
    let mut results: Vec<Value> = content::structured_text(result)
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(text) => json!({"text": text}),
            Piece::Media(_) => Value::Null,
        })
        .collect();
    for block in &result.content {
        let Some(piece) = content::piece(block) else { continue };
        let item = match (block, piece) {
            (mcp::ContentBlock::ResourceLink(link), _) => json!({
                "file_id": link.uri,
                "filename": link.name,
            }),
            (
                mcp::ContentBlock::Resource(mcp::EmbeddedResource {
                    resource: mcp::ResourceContents::TextResourceContents { uri, text, .. },
                    ..
                }),
                _,
            ) => {
                let name = uri.rsplit('/').next().unwrap_or(uri);
                json!({"file_id": uri, "filename": name, "text": text})
            }
            (_, Piece::Media(media)) => {
                let mut item = Map::new();
                if let Some(uri) = media.uri {
                    item.insert("file_id".into(), uri.into());
                    item.insert("filename".into(), media.file_name().into());
                }
                item.insert("text".into(), media.note("a file_search_call result is text").into());
                Value::Object(item)
            }
            (_, Piece::Text(text)) => json!({"text": text}),
        };
        results.push(item);
    }
    results
}

/// `{"type": "code_interpreter_call", "id", "code", "container_id", "outputs": [{"type":
/// "logs", "logs"} | {"type": "image", "url"}], "status"}`
pub(super) fn code_interpreter_call(result: &mcp::CallToolResult, call: &ToolCall<'_>) -> Value {
    let data = content::data(result);
    let object = data.as_deref().and_then(Value::as_object);
    let code = call.arguments.and_then(|args| string_field(args, &["code"]));
    let container = object
        .and_then(|object| string_field(object, &["container_id"]))
        .unwrap_or(call.server_label);

    let mut outputs: Vec<Value> = Vec::new();
    let given = object.and_then(|object| array_field(object, &["outputs"]));
    for output in given.into_iter().flatten() {
        let kind = output.get("type").and_then(Value::as_str);
        match kind {
            Some("logs") if output.get("logs").is_some_and(Value::is_string) => {
                outputs.push(json!({"type": "logs", "logs": output["logs"]}));
            }
            Some("image") if output.get("url").is_some_and(Value::is_string) => {
                outputs.push(json!({"type": "image", "url": output["url"]}));
            }
            _ => {}
        }
    }
    if outputs.is_empty() {
        let streams: Vec<&str> = object
            .map(|object| {
                ["stdout", "stderr", "logs", "output"]
                    .iter()
                    .filter_map(|key| object.get(*key).and_then(Value::as_str))
                    .filter(|text| !text.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let pieces = content::pieces(result);
        let logs: Cow<'_, str> = if streams.is_empty() {
            let texts: Vec<Piece<'_>> = pieces.iter().filter(|p| !is_image(p)).cloned().collect();
            Cow::Owned(content::text_of(
                &texts,
                "a code_interpreter_call's outputs are logs and images",
            ))
        } else {
            // One after the other, on a new line unless the previous one ended with one.
            let mut logs = String::new();
            for stream in streams {
                if !logs.is_empty() && !logs.ends_with('\n') {
                    logs.push('\n');
                }
                logs.push_str(stream);
            }
            Cow::Owned(logs)
        };
        if !logs.is_empty() {
            outputs.push(json!({"type": "logs", "logs": logs}));
        }
        for piece in &pieces {
            if let Piece::Media(media) = piece
                && is_image(piece)
            {
                outputs.push(json!({"type": "image", "url": media.data_url()}));
            }
        }
    }
    json!({
        "type": "code_interpreter_call",
        "id": call.id,
        "code": code,
        "container_id": container,
        "outputs": outputs,
        "status": status(result),
    })
}

fn is_image(piece: &Piece<'_>) -> bool {
    matches!(piece, Piece::Media(media) if media.is_image())
}

#[cfg(test)]
mod tests {
    use super::web_urls;

    #[test]
    fn urls_are_found_in_prose() {
        let text = "Title: Rust\nURL: https://www.rust-lang.org/.\nSee (http://example.com/a?b=1), \
                    \"https://x.test/q\" and https:// alone.";
        assert_eq!(
            web_urls(text),
            ["https://www.rust-lang.org/", "http://example.com/a?b=1", "https://x.test/q"]
        );
        assert!(web_urls("no links here").is_empty());
    }
}
