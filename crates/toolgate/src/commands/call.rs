//! `toolgate call`: one tool call through the gateway, from the shell.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use serde_json::{Map, Value};
use toolgate_config::Config;
use toolgate_core::{ResultFormat, mcp};
use toolgate_gateway::{GatewayError, StartupWait};
use toolgate_llm::format::{self, ToolCall};
use toolgate_upstream::inventory::Inventory;

use crate::GlobalArgs;
use crate::setup;

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    toolgate call demo__echo text=hello\n  \
    toolgate call files__read_file --args '{\"path\": \"/tmp/x\"}'\n\n\
    Values of key=value pairs are taken as JSON when the tool's schema says the argument is \
    not a string (count=3, flag=true, tags='[\"a\"]'), as text otherwise.\n\
    --format prints the result as an LLM API takes it (see docs/result-formats.md): \
    openai_chat, function_call_output, mcp_call, web_search_call, file_search_call, \
    code_interpreter_call, anthropic, gemini; or responses: the Responses item the server's \
    response_format names for the tool (function_call_output when it names none).\n\
    Exit status: 0 on success, 1 when the tool returned an error result or the call failed.")]
pub(crate) struct CallArgs {
    /// The exposed tool name (see `toolgate tools`).
    tool: String,
    /// Arguments as key=value pairs.
    #[arg(value_name = "KEY=VALUE")]
    pairs: Vec<String>,
    /// Arguments as one JSON object (merged under any key=value pairs).
    #[arg(long, value_name = "JSON")]
    args: Option<String>,
    /// Print the whole result as JSON.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// Print the result as an LLM API takes it (see below).
    #[arg(long, value_name = "FORMAT", value_parser = parse_format)]
    format: Option<FormatChoice>,
    /// The call id the --format output answers.
    #[arg(long, value_name = "ID", default_value = "call_1", requires = "format")]
    call_id: String,
}

/// `--format`: one format, or whichever Responses item the server's config names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FormatChoice {
    Fixed(ResultFormat),
    Responses,
}

fn parse_format(name: &str) -> Result<FormatChoice, String> {
    if name == "responses" {
        return Ok(FormatChoice::Responses);
    }
    name.parse().map(FormatChoice::Fixed).map_err(|_| {
        format!(
            "unknown format {name:?} (known: responses, {})",
            ResultFormat::list(&ResultFormat::ALL)
        )
    })
}

pub(crate) async fn run(global: &GlobalArgs, args: CallArgs) -> anyhow::Result<ExitCode> {
    setup::init_logging(global, "warn");
    let (config, source) = setup::load_config(global)?;
    let gateway = setup::connect(&config, &source, StartupWait::All).await?;
    let inventory = gateway.inventory();
    let schema =
        inventory.tools().iter().find(|t| t.name == args.tool).map(|t| t.input_schema.clone());
    let arguments = build_arguments(args.args.as_deref(), &args.pairs, schema.as_deref())?;
    let mut params =
        mcp::CallToolRequestParams::new(args.tool.clone()).with_arguments(arguments.clone());
    // Traced as a client's call, continuing the trace this process was started in, if any.
    let trace_context = crate::telemetry::started_in();
    if !trace_context.is_empty() {
        params.meta = Some(trace_context.into());
    }
    // `cli:<user>`: the person at this terminal, told apart from a desktop client (`local`).
    let user = toolgate_intercept::Principal::local().id;
    let mut ctx =
        toolgate_intercept::CallContext::new(toolgate_intercept::Principal::new("cli", user));
    let result = gateway.call_tool_traced(params, &Default::default(), &mut ctx).await;
    gateway.shutdown().await;
    let result = match result {
        Ok(result) => result,
        // Printed like the tool error result a client would get.
        Err(GatewayError::Refused(refusal)) => {
            mcp::CallToolResult::error(vec![mcp::ContentBlock::text(refusal.to_string())])
        }
        Err(GatewayError::UnknownTool(name)) => {
            anyhow::bail!("unknown tool `{name}` (see `toolgate tools` for the exposed names)")
        }
        Err(error) => return Err(error).context(format!("calling {}", args.tool)),
    };
    let mut out = std::io::stdout().lock();
    if let Some(choice) = args.format {
        let (server, format) = resolve_format(choice, &config, &inventory, &args.tool);
        let call = ToolCall {
            id: &args.call_id,
            name: &args.tool,
            server_label: server.unwrap_or_default(),
            arguments: Some(&arguments),
        };
        serde_json::to_writer_pretty(&mut out, &format::render(format, &result, &call))?;
        writeln!(out)?;
    } else if args.json {
        serde_json::to_writer_pretty(&mut out, &result)?;
        writeln!(out)?;
    } else {
        print_content(&mut out, &result)?;
    }
    Ok(if result.is_error == Some(true) { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// The server of the exposed tool `tool` (its label in the output) and the format to print:
/// `responses` is the server's `response_format` for the tool's own name, else
/// `function_call_output`.
fn resolve_format<'c>(
    choice: FormatChoice,
    config: &'c Config,
    inventory: &Inventory,
    tool: &str,
) -> (Option<&'c str>, ResultFormat) {
    let route = inventory.tool_route(tool).cloned().or_else(|| inventory.unlisted_tool_route(tool));
    let server = route.as_ref().and_then(|route| {
        config.servers.iter().find(|server| server.name.as_str() == &*route.upstream)
    });
    let format = match choice {
        FormatChoice::Fixed(format) => format,
        FormatChoice::Responses => server
            .zip(route.as_ref())
            .and_then(|(server, route)| server.response_format_for(&route.original))
            .unwrap_or(ResultFormat::FunctionCallOutput),
    };
    (server.map(|server| server.name.as_str()), format)
}

/// Merges `--args` and `key=value` pairs into one arguments object.
fn build_arguments(
    json: Option<&str>,
    pairs: &[String],
    schema: Option<&Map<String, Value>>,
) -> anyhow::Result<Map<String, Value>> {
    let mut arguments = match json {
        Some(text) => {
            match serde_json::from_str::<Value>(text).context("--args is not valid JSON")? {
                Value::Object(object) => object,
                other => anyhow::bail!("--args must be a JSON object, not {other}"),
            }
        }
        None => Map::new(),
    };
    for pair in pairs {
        let (key, raw) =
            pair.split_once('=').with_context(|| format!("`{pair}` is not KEY=VALUE"))?;
        arguments.insert(key.to_owned(), typed_value(raw, property_type(schema, key)));
    }
    Ok(arguments)
}

fn property_type<'a>(schema: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a str> {
    schema?.get("properties")?.get(key)?.get("type")?.as_str()
}

/// `raw` as the schema's type wants it: text for strings (and unknown keys whose value is not
/// JSON), JSON otherwise.
fn typed_value(raw: &str, declared: Option<&str>) -> Value {
    if declared == Some("string") {
        return Value::String(raw.to_owned());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

fn print_content(
    out: &mut impl std::io::Write,
    result: &mcp::CallToolResult,
) -> std::io::Result<()> {
    for block in &result.content {
        let json = serde_json::to_value(block).unwrap_or_default();
        match json["type"].as_str() {
            Some("text") => writeln!(out, "{}", json["text"].as_str().unwrap_or_default())?,
            Some(kind @ ("image" | "audio")) => writeln!(
                out,
                "[{kind} {}, {} base64 characters]",
                json["mimeType"].as_str().unwrap_or("?"),
                json["data"].as_str().map(str::len).unwrap_or(0)
            )?,
            Some("resource") => writeln!(
                out,
                "[resource {}]\n{}",
                json["resource"]["uri"].as_str().unwrap_or("?"),
                json["resource"]["text"].as_str().unwrap_or("(binary)")
            )?,
            Some("resource_link") => {
                writeln!(out, "[link {}]", json["uri"].as_str().unwrap_or("?"))?
            }
            _ => writeln!(out, "{json}")?,
        }
    }
    if result.content.is_empty()
        && let Some(structured) = &result.structured_content
    {
        writeln!(out, "{structured}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Map<String, Value> {
        json!({"properties": {"text": {"type": "string"}, "count": {"type": "integer"}}})
            .as_object()
            .cloned()
            .expect("object")
    }

    #[test]
    fn pairs_follow_the_schema_types() {
        let args = build_arguments(None, &["text=42".into(), "count=3".into()], Some(&schema()))
            .expect("valid");
        assert_eq!(Value::Object(args), json!({"text": "42", "count": 3}));
    }

    #[test]
    fn unknown_keys_are_json_when_they_parse() {
        let args =
            build_arguments(None, &["flag=true".into(), "word=hello".into()], None).expect("valid");
        assert_eq!(Value::Object(args), json!({"flag": true, "word": "hello"}));
    }

    #[test]
    fn json_args_and_pairs_merge() {
        let args =
            build_arguments(Some(r#"{"a": 1, "b": 2}"#), &["b=3".into()], None).expect("valid");
        assert_eq!(Value::Object(args), json!({"a": 1, "b": 3}));
    }

    #[test]
    fn bad_input_is_explained() {
        assert!(build_arguments(Some("[1]"), &[], None).is_err());
        assert!(build_arguments(Some("{"), &[], None).is_err());
        assert!(build_arguments(None, &["novalue".into()], None).is_err());
    }
}
