//! A `POST /v1/responses` body, read into what the endpoint acts on. Fields the endpoint does
//! not act on (`include`, `reasoning`, `text`, `truncation`, `user`, ...) are accepted and
//! ignored, as a proxy in front of another model must; a field it acts on that is malformed is
//! an [`ApiError`] naming it (`param`), as OpenAI names it.

use serde_json::{Map, Value};

use crate::error::ApiError;

/// The most input items one request may carry.
pub(crate) const MAX_INPUT_ITEMS: usize = 4096;

/// The most tools one request may name.
pub(crate) const MAX_TOOLS: usize = 128;

/// What a request asks for.
#[derive(Debug, Clone)]
pub(crate) struct CreateResponse {
    /// The model, as the application names it.
    pub(crate) model: String,
    /// The new input items (a string input is one user message).
    pub(crate) input: Vec<InputItem>,
    /// The system prompt (`instructions`); not carried over to a continued response.
    pub(crate) instructions: Option<String>,
    /// MCP servers offered as tools.
    pub(crate) mcp: Vec<McpTool>,
    /// The application's own function tools, returned to it when the model calls them.
    pub(crate) functions: Vec<FunctionTool>,
    /// The response this one continues.
    pub(crate) previous_response_id: Option<String>,
    /// Whether to store it (default true, as OpenAI).
    pub(crate) store: bool,
    /// Stream events (`text/event-stream`) rather than one JSON body.
    pub(crate) stream: bool,
    /// Sampling temperature.
    pub(crate) temperature: Option<f32>,
    /// The most tokens per model answer.
    pub(crate) max_output_tokens: Option<u32>,
    /// The most tool calls this response runs.
    pub(crate) max_tool_calls: Option<u32>,
    /// `metadata`, echoed back.
    pub(crate) metadata: Map<String, Value>,
    /// The tool definitions as sent, echoed back in the response (credentials removed).
    pub(crate) tools_echo: Vec<Value>,
}

/// One input item.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum InputItem {
    /// A message (`user`, `system`, `developer` or `assistant`) and its text.
    Message {
        /// Its role.
        role: Role,
        /// Its text parts, joined.
        text: String,
    },
    /// A function call the model made earlier (sent back by an application that does not store).
    FunctionCall {
        /// The model's call id.
        call_id: String,
        /// The function's name.
        name: String,
        /// Its arguments as JSON text.
        arguments: String,
    },
    /// The application's answer to one of its function calls.
    FunctionCallOutput {
        /// The call it answers.
        call_id: String,
        /// What the model reads.
        output: String,
    },
    /// The application's answer to an `mcp_approval_request`.
    ApprovalResponse {
        /// The request's id.
        approval_request_id: String,
        /// Approved or not.
        approve: bool,
        /// Why, when denied.
        reason: Option<String>,
    },
    /// An earlier response's `mcp_list_tools`, sent back: that server was listed.
    ListedTools {
        /// The server's label.
        server_label: String,
    },
    /// An earlier response's `mcp_call`, sent back by an application that keeps the
    /// conversation itself (as the OpenAI Agents SDK does): the model saw the call and its
    /// result.
    McpCall {
        /// The item's id.
        id: String,
        /// The server's label.
        server_label: String,
        /// The tool's name on the server.
        name: String,
        /// The arguments as JSON text.
        arguments: String,
        /// What the model read: the output, or the error.
        result: String,
        /// Whether it failed.
        failed: bool,
    },
    /// An earlier response's `mcp_approval_request`, sent back: that call waits for an answer.
    ApprovalRequest {
        /// The request's id.
        id: String,
        /// The server's label.
        server_label: String,
        /// The tool's name on the server.
        name: String,
        /// The arguments as JSON text.
        arguments: String,
    },
    /// An output item of an earlier response that the model needs no more of (`reasoning`):
    /// skipped.
    Echo,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The person or application.
    User,
    /// The model, earlier.
    Assistant,
    /// System or developer instructions.
    System,
}

/// One `{"type": "mcp"}` tool. `Debug` shows its headers' names only, and no token.
#[derive(Clone, PartialEq)]
pub(crate) struct McpTool {
    /// `server_label`: which configured server (or, with `server_url`, what to call it).
    pub(crate) server_label: String,
    /// `server_url`: a server the request names by URL.
    pub(crate) server_url: Option<String>,
    /// `allowed_tools`: which of its tools the model sees.
    pub(crate) allowed: Allowed,
    /// `require_approval`.
    pub(crate) approval: RequireApproval,
    /// `headers`, sent to a server named by URL (never stored or echoed).
    pub(crate) headers: Vec<(String, String)>,
    /// `authorization`: the bearer token for a server named by URL (never stored or echoed).
    pub(crate) authorization: Option<String>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("server_label", &self.server_label)
            .field("server_url", &self.server_url)
            .field("allowed", &self.allowed)
            .field("approval", &self.approval)
            .field("headers", &self.headers.iter().map(|(name, _)| name).collect::<Vec<_>>())
            .field("authorization", &self.authorization.as_ref().map(|_| "***"))
            .finish()
    }
}

/// The most `headers` one MCP tool may carry.
pub(crate) const MAX_HEADERS: usize = 32;

/// `allowed_tools`.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Allowed {
    /// Only these names (`None`: all).
    pub(crate) names: Option<Vec<String>>,
    /// Only tools annotated `readOnlyHint: true`.
    pub(crate) read_only: bool,
}

impl Allowed {
    /// Whether a tool of this name and read-only hint is allowed.
    pub(crate) fn admits(&self, name: &str, read_only: bool) -> bool {
        self.names.as_ref().is_none_or(|names| names.iter().any(|n| n == name))
            && (!self.read_only || read_only)
    }
}

/// `require_approval`: which calls wait for the application's approval.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RequireApproval {
    /// Every call (OpenAI's default).
    Always,
    /// None (the gateway's own approval rules still apply).
    Never,
    /// By tool: the ones `always` names wait, the ones `never` names do not, any other waits.
    Filter {
        /// Names that always wait (`None`: not given).
        always: Option<ToolFilter>,
        /// Names that never wait.
        never: Option<ToolFilter>,
    },
}

/// A filter of `require_approval`'s object form.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ToolFilter {
    /// The names it names (`None`: any).
    pub(crate) names: Option<Vec<String>>,
    /// Only tools annotated read-only.
    pub(crate) read_only: bool,
}

impl ToolFilter {
    fn matches(&self, name: &str, read_only: bool) -> bool {
        self.names.as_ref().is_none_or(|names| names.iter().any(|n| n == name))
            && (!self.read_only || read_only)
    }
}

impl RequireApproval {
    /// Whether a call of this tool waits for the application.
    pub(crate) fn wants(&self, name: &str, read_only: bool) -> bool {
        match self {
            RequireApproval::Always => true,
            RequireApproval::Never => false,
            RequireApproval::Filter { always, never } => {
                if always.as_ref().is_some_and(|f| f.matches(name, read_only)) {
                    return true;
                }
                !never.as_ref().is_some_and(|f| f.matches(name, read_only))
            }
        }
    }
}

/// One `{"type": "function"}` tool.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FunctionTool {
    /// Its name.
    pub(crate) name: String,
    /// What it does.
    pub(crate) description: String,
    /// JSON Schema of its arguments.
    pub(crate) parameters: Value,
}

/// Reads a request body.
pub(crate) fn parse(body: &[u8]) -> Result<CreateResponse, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid(None, format!("the body is not valid JSON: {e}")))?;
    let Value::Object(body) = value else {
        return Err(ApiError::invalid(None, "the body must be a JSON object"));
    };
    let model = match body.get("model") {
        Some(Value::String(model)) if !model.is_empty() => model.clone(),
        Some(_) => return Err(ApiError::invalid(Some("model"), "must be a non-empty string")),
        None => return Err(ApiError::invalid(Some("model"), "is required")),
    };
    let input = match body.get("input") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) => {
            vec![InputItem::Message { role: Role::User, text: text.clone() }]
        }
        Some(Value::Array(items)) => {
            if items.len() > MAX_INPUT_ITEMS {
                return Err(ApiError::invalid(
                    Some("input"),
                    format!("at most {MAX_INPUT_ITEMS} items"),
                ));
            }
            items
                .iter()
                .enumerate()
                .map(|(i, item)| input_item(i, item))
                .collect::<Result<_, _>>()?
        }
        Some(_) => return Err(ApiError::invalid(Some("input"), "must be a string or an array")),
    };
    let mut mcp = Vec::new();
    let mut functions = Vec::new();
    let mut tools_echo = Vec::new();
    match body.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Array(tools)) => {
            if tools.len() > MAX_TOOLS {
                return Err(ApiError::invalid(Some("tools"), format!("at most {MAX_TOOLS}")));
            }
            for (i, tool) in tools.iter().enumerate() {
                let at = format!("tools[{i}]");
                let Value::Object(fields) = tool else {
                    return Err(ApiError::invalid(Some(&at), "must be an object"));
                };
                match fields.get("type").and_then(Value::as_str) {
                    Some("mcp") => {
                        let tool = mcp_tool(&at, fields)?;
                        if mcp.iter().any(|t: &McpTool| t.server_label == tool.server_label) {
                            return Err(ApiError::invalid(
                                Some(&format!("{at}.server_label")),
                                format!("{:?} is named twice", tool.server_label),
                            ));
                        }
                        mcp.push(tool);
                        tools_echo.push(without_credentials(fields));
                    }
                    Some("function") => {
                        functions.push(function_tool(&at, fields)?);
                        tools_echo.push(tool.clone());
                    }
                    Some(other) => {
                        return Err(ApiError::invalid(
                            Some(&format!("{at}.type")),
                            format!(
                                "tools of type {other:?} are not served here (only \"mcp\" and \
                                 \"function\")"
                            ),
                        ));
                    }
                    None => {
                        return Err(ApiError::invalid(Some(&format!("{at}.type")), "is required"));
                    }
                }
            }
        }
        Some(_) => return Err(ApiError::invalid(Some("tools"), "must be an array")),
    }
    let previous_response_id = optional_string(&body, "previous_response_id")?;
    let instructions = optional_string(&body, "instructions")?;
    let store = optional_bool(&body, "store")?.unwrap_or(true);
    let stream = optional_bool(&body, "stream")?.unwrap_or(false);
    let temperature = match body.get("temperature") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => n.as_f64().map(|t| t as f32),
        Some(_) => return Err(ApiError::invalid(Some("temperature"), "must be a number")),
    };
    let max_output_tokens = optional_count(&body, "max_output_tokens")?;
    let max_tool_calls = optional_count(&body, "max_tool_calls")?;
    let metadata = match body.get("metadata") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) if map.len() <= 16 => map.clone(),
        Some(_) => {
            return Err(ApiError::invalid(
                Some("metadata"),
                "must be an object of at most 16 keys",
            ));
        }
    };
    Ok(CreateResponse {
        model,
        input,
        instructions,
        mcp,
        functions,
        previous_response_id,
        store,
        stream,
        temperature,
        max_output_tokens,
        max_tool_calls,
        metadata,
        tools_echo,
    })
}

fn optional_string(body: &Map<String, Value>, key: &str) -> Result<Option<String>, ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(ApiError::invalid(Some(key), "must be a string")),
    }
}

fn optional_bool(body: &Map<String, Value>, key: &str) -> Result<Option<bool>, ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(_) => Err(ApiError::invalid(Some(key), "must be true or false")),
    }
}

fn optional_count(body: &Map<String, Value>, key: &str) -> Result<Option<u32>, ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(n) if n > 0 => Ok(Some(n)),
            _ => Err(ApiError::invalid(Some(key), "must be a positive integer")),
        },
    }
}

fn input_item(index: usize, item: &Value) -> Result<InputItem, ApiError> {
    let at = format!("input[{index}]");
    let Value::Object(fields) = item else {
        return Err(ApiError::invalid(Some(&at), "must be an object"));
    };
    let string = |key: &str| -> Result<String, ApiError> {
        match fields.get(key) {
            Some(Value::String(text)) => Ok(text.clone()),
            _ => Err(ApiError::invalid(Some(&format!("{at}.{key}")), "must be a string")),
        }
    };
    let kind = fields.get("type").and_then(Value::as_str);
    match kind {
        None | Some("message") => {
            let role = match fields.get("role").and_then(Value::as_str) {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                Some("system" | "developer") => Role::System,
                _ => {
                    return Err(ApiError::invalid(
                        Some(&format!("{at}.role")),
                        "must be \"user\", \"assistant\", \"system\" or \"developer\"",
                    ));
                }
            };
            let text = message_text(&at, fields.get("content"))?;
            Ok(InputItem::Message { role, text })
        }
        Some("function_call") => Ok(InputItem::FunctionCall {
            call_id: string("call_id")?,
            name: string("name")?,
            arguments: string("arguments")?,
        }),
        Some("function_call_output") => {
            let output = match fields.get("output") {
                Some(Value::String(text)) => text.clone(),
                Some(parts @ Value::Array(_)) => message_text(&at, Some(parts))?,
                _ => {
                    return Err(ApiError::invalid(
                        Some(&format!("{at}.output")),
                        "must be a string or an array of parts",
                    ));
                }
            };
            Ok(InputItem::FunctionCallOutput { call_id: string("call_id")?, output })
        }
        Some("mcp_approval_response") => {
            let approve = match fields.get("approve") {
                Some(Value::Bool(flag)) => *flag,
                _ => {
                    return Err(ApiError::invalid(
                        Some(&format!("{at}.approve")),
                        "must be true or false",
                    ));
                }
            };
            let reason = fields.get("reason").and_then(Value::as_str).map(str::to_owned);
            Ok(InputItem::ApprovalResponse {
                approval_request_id: string("approval_request_id")?,
                approve,
                reason,
            })
        }
        Some("mcp_list_tools") => {
            Ok(InputItem::ListedTools { server_label: string("server_label")? })
        }
        Some("mcp_call") => {
            let (result, failed) = match (fields.get("output"), fields.get("error")) {
                (Some(Value::String(output)), _) => (output.clone(), false),
                (_, Some(error)) if !error.is_null() => (error.to_string(), true),
                _ => (String::new(), false),
            };
            Ok(InputItem::McpCall {
                id: string("id")?,
                server_label: string("server_label")?,
                name: string("name")?,
                arguments: string("arguments")?,
                result,
                failed,
            })
        }
        Some("mcp_approval_request") => Ok(InputItem::ApprovalRequest {
            id: string("id")?,
            server_label: string("server_label")?,
            name: string("name")?,
            arguments: string("arguments")?,
        }),
        Some("reasoning") => Ok(InputItem::Echo),
        Some(other) => Err(ApiError::invalid(
            Some(&format!("{at}.type")),
            format!("input items of type {other:?} are not served here"),
        )),
    }
}

/// A message's content: a string, or parts of which the text ones are joined.
fn message_text(at: &str, content: Option<&Value>) -> Result<String, ApiError> {
    match content {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (i, part) in parts.iter().enumerate() {
                match part.get("type").and_then(Value::as_str) {
                    Some("input_text" | "output_text" | "text") => {
                        let piece = part.get("text").and_then(Value::as_str).ok_or_else(|| {
                            ApiError::invalid(
                                Some(&format!("{at}.content[{i}].text")),
                                "must be a string",
                            )
                        })?;
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(piece);
                    }
                    Some("refusal") => {}
                    _ => {
                        return Err(ApiError::invalid(
                            Some(&format!("{at}.content[{i}].type")),
                            "only text parts are served here",
                        ));
                    }
                }
            }
            Ok(text)
        }
        _ => Err(ApiError::invalid(
            Some(&format!("{at}.content")),
            "must be a string or an array of parts",
        )),
    }
}

fn mcp_tool(at: &str, fields: &Map<String, Value>) -> Result<McpTool, ApiError> {
    let server_label = match fields.get("server_label") {
        Some(Value::String(label)) if !label.is_empty() && label.len() <= 64 => label.clone(),
        _ => {
            return Err(ApiError::invalid(
                Some(&format!("{at}.server_label")),
                "must be a non-empty string of at most 64 characters",
            ));
        }
    };
    let server_url = match fields.get("server_url") {
        None | Some(Value::Null) => None,
        Some(Value::String(url)) => Some(url.clone()),
        Some(_) => {
            return Err(ApiError::invalid(Some(&format!("{at}.server_url")), "must be a string"));
        }
    };
    let allowed = match fields.get("allowed_tools") {
        None | Some(Value::Null) => Allowed::default(),
        Some(names @ Value::Array(_)) => Allowed {
            names: Some(names_of(&format!("{at}.allowed_tools"), names)?),
            read_only: false,
        },
        Some(Value::Object(filter)) => {
            let filter = tool_filter(&format!("{at}.allowed_tools"), filter)?;
            Allowed { names: filter.names, read_only: filter.read_only }
        }
        Some(_) => {
            return Err(ApiError::invalid(
                Some(&format!("{at}.allowed_tools")),
                "must be a list of names or {tool_names, read_only}",
            ));
        }
    };
    let approval = match fields.get("require_approval") {
        None | Some(Value::Null) => RequireApproval::Always,
        Some(Value::String(word)) if word == "always" => RequireApproval::Always,
        Some(Value::String(word)) if word == "never" => RequireApproval::Never,
        Some(Value::Object(filters)) => {
            let side = |key: &str| -> Result<Option<ToolFilter>, ApiError> {
                match filters.get(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::Object(filter)) => {
                        tool_filter(&format!("{at}.require_approval.{key}"), filter).map(Some)
                    }
                    Some(_) => Err(ApiError::invalid(
                        Some(&format!("{at}.require_approval.{key}")),
                        "must be {tool_names, read_only}",
                    )),
                }
            };
            RequireApproval::Filter { always: side("always")?, never: side("never")? }
        }
        Some(_) => {
            return Err(ApiError::invalid(
                Some(&format!("{at}.require_approval")),
                "must be \"always\", \"never\" or {always, never}",
            ));
        }
    };
    let headers = match fields.get("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(headers)) if headers.len() <= MAX_HEADERS => {
            let mut pairs = Vec::new();
            for (name, value) in headers {
                let Value::String(value) = value else {
                    return Err(ApiError::invalid(
                        Some(&format!("{at}.headers.{name}")),
                        "must be a string",
                    ));
                };
                pairs.push((name.clone(), value.clone()));
            }
            pairs
        }
        Some(_) => {
            return Err(ApiError::invalid(
                Some(&format!("{at}.headers")),
                format!("must be an object of at most {MAX_HEADERS} strings"),
            ));
        }
    };
    let authorization = match fields.get("authorization") {
        None | Some(Value::Null) => None,
        Some(Value::String(token)) => Some(token.clone()),
        Some(_) => {
            return Err(ApiError::invalid(
                Some(&format!("{at}.authorization")),
                "must be a string",
            ));
        }
    };
    Ok(McpTool { server_label, server_url, allowed, approval, headers, authorization })
}

fn tool_filter(at: &str, filter: &Map<String, Value>) -> Result<ToolFilter, ApiError> {
    let names = match filter.get("tool_names") {
        None | Some(Value::Null) => None,
        Some(names) => Some(names_of(&format!("{at}.tool_names"), names)?),
    };
    let read_only = match filter.get("read_only") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => {
            return Err(ApiError::invalid(
                Some(&format!("{at}.read_only")),
                "must be true or false",
            ));
        }
    };
    Ok(ToolFilter { names, read_only })
}

fn names_of(at: &str, names: &Value) -> Result<Vec<String>, ApiError> {
    let Value::Array(names) = names else {
        return Err(ApiError::invalid(Some(at), "must be a list of names"));
    };
    names
        .iter()
        .map(|name| {
            name.as_str()
                .map(str::to_owned)
                .ok_or_else(|| ApiError::invalid(Some(at), "must be a list of names"))
        })
        .collect()
}

fn function_tool(at: &str, fields: &Map<String, Value>) -> Result<FunctionTool, ApiError> {
    let name = match fields.get("name") {
        Some(Value::String(name)) if !name.is_empty() && name.len() <= 64 => name.clone(),
        _ => {
            return Err(ApiError::invalid(
                Some(&format!("{at}.name")),
                "must be a non-empty string of at most 64 characters",
            ));
        }
    };
    let description =
        fields.get("description").and_then(Value::as_str).unwrap_or_default().to_owned();
    let parameters = match fields.get("parameters") {
        None | Some(Value::Null) => serde_json::json!({"type": "object", "properties": {}}),
        Some(schema @ Value::Object(_)) => schema.clone(),
        Some(_) => {
            return Err(ApiError::invalid(Some(&format!("{at}.parameters")), "must be an object"));
        }
    };
    Ok(FunctionTool { name, description, parameters })
}

/// An MCP tool's definition as echoed back: never its `authorization` or `headers`.
fn without_credentials(fields: &Map<String, Value>) -> Value {
    let mut echoed = fields.clone();
    echoed.remove("authorization");
    echoed.remove("headers");
    Value::Object(echoed)
}

#[cfg(test)]
mod tests;
