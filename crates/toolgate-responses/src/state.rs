//! A conversation as the endpoint keeps it between responses: the messages in no provider's
//! words, the calls still waiting for the application (an approval, a function's output), and
//! the servers whose tools were listed already (OpenAI lists a server once per conversation).
//! It is stored beside each response, so that `previous_response_id` continues it; the
//! request's credentials are never part of it.

use serde::{Deserialize, Serialize};
use toolgate_llm::chat::{AssistantTurn, Message, Part, ToolCall, ToolResult};

use crate::error::ApiError;
use crate::request::{InputItem, Role};

/// The most messages a conversation keeps; a longer one must start afresh.
pub(crate) const MAX_MESSAGES: usize = 10_000;

/// One conversation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct State {
    /// What the model has seen and said.
    pub(crate) messages: Vec<Message>,
    /// System and developer messages of the input, in order (the request's `instructions`
    /// come first and are not kept).
    #[serde(default)]
    pub(crate) notes: Vec<String>,
    /// Calls the last model turn made that have no result yet.
    #[serde(default)]
    pub(crate) waiting: Vec<Waiting>,
    /// Server labels whose tools were listed in this conversation.
    #[serde(default)]
    pub(crate) listed: Vec<String>,
}

/// A call waiting for the application.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Waiting {
    /// The model's call id.
    pub(crate) call_id: String,
    /// The tool's name as the model called it.
    pub(crate) model_name: String,
    /// The arguments as the model wrote them.
    pub(crate) arguments: String,
    /// What it waits for.
    pub(crate) on: WaitingOn,
}

/// What a call waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum WaitingOn {
    /// The output of the application's own function.
    Function,
    /// The application's answer to an `mcp_approval_request`.
    Approval {
        /// The request's id.
        approval_request_id: String,
        /// The server's label.
        server_label: String,
        /// The tool's name on that server.
        tool: String,
    },
}

/// A call the application answered, to run now or to tell the model about.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answered {
    /// Approved: run it.
    Approved(Waiting),
    /// Denied: the model reads why.
    Denied(Waiting, Option<String>),
}

impl State {
    /// Takes the request's input items in: messages join the conversation, function outputs
    /// and approval answers settle waiting calls. Returns the approved and denied calls, which
    /// the caller runs or reports; a call still waiting afterwards is an error, since the model
    /// cannot go on without every result of its turn.
    ///
    /// `model_name` gives the name the model knows a server's tool by (label, tool), for the
    /// output items an application sends back instead of continuing a stored response.
    pub(crate) fn take_input(
        &mut self,
        model_name: &dyn Fn(&str, &str) -> String,
        input: &[InputItem],
    ) -> Result<Vec<Answered>, ApiError> {
        let mut answered = Vec::new();
        for (i, item) in input.iter().enumerate() {
            match item {
                InputItem::Message { role: Role::User, text } => {
                    self.messages.push(Message::User { content: vec![Part::text(text.clone())] })
                }
                InputItem::Message { role: Role::Assistant, text } => {
                    self.messages.push(Message::Assistant(AssistantTurn {
                        text: text.clone(),
                        ..Default::default()
                    }))
                }
                InputItem::Message { role: Role::System, text } => self.notes.push(text.clone()),
                InputItem::FunctionCall { call_id, name, arguments } => {
                    let call = ToolCall {
                        id: call_id.clone(),
                        name: name.clone(),
                        arguments: arguments.clone(),
                    };
                    match self.messages.last_mut() {
                        Some(Message::Assistant(turn)) => turn.tool_calls.push(call),
                        _ => self.messages.push(Message::Assistant(AssistantTurn {
                            tool_calls: vec![call],
                            ..Default::default()
                        })),
                    }
                    self.waiting.push(Waiting {
                        call_id: call_id.clone(),
                        model_name: name.clone(),
                        arguments: arguments.clone(),
                        on: WaitingOn::Function,
                    });
                }
                InputItem::FunctionCallOutput { call_id, output } => {
                    let Some(at) = self
                        .waiting
                        .iter()
                        .position(|w| w.call_id == *call_id && matches!(w.on, WaitingOn::Function))
                    else {
                        return Err(ApiError::invalid(
                            Some(&format!("input[{i}].call_id")),
                            format!("no function call {call_id:?} waits for its output"),
                        ));
                    };
                    let waiting = self.waiting.remove(at);
                    self.messages.push(Message::ToolResult(ToolResult {
                        call_id: waiting.call_id,
                        name: waiting.model_name,
                        content: vec![Part::text(output.clone())],
                        is_error: false,
                    }));
                }
                InputItem::ApprovalResponse { approval_request_id, approve, reason } => {
                    let Some(at) = self.waiting.iter().position(|w| {
                        matches!(&w.on, WaitingOn::Approval { approval_request_id: id, .. } if id == approval_request_id)
                    }) else {
                        return Err(ApiError::invalid(
                            Some(&format!("input[{i}].approval_request_id")),
                            format!(
                                "no call waits for approval {approval_request_id:?} (it must be \
                                 an mcp_approval_request of the previous response)"
                            ),
                        ));
                    };
                    let waiting = self.waiting.remove(at);
                    answered.push(if *approve {
                        Answered::Approved(waiting)
                    } else {
                        Answered::Denied(waiting, reason.clone())
                    });
                }
                InputItem::ListedTools { server_label } => {
                    if !self.listed.contains(server_label) {
                        self.listed.push(server_label.clone());
                    }
                }
                InputItem::McpCall { id, server_label, name, arguments, result, failed } => {
                    if self.has_call(id) {
                        continue;
                    }
                    let model_name = model_name(server_label, name);
                    self.add_call(ToolCall {
                        id: id.clone(),
                        name: model_name.clone(),
                        arguments: arguments.clone(),
                    });
                    self.answer(id, &model_name, vec![Part::text(result.clone())], *failed);
                }
                InputItem::ApprovalRequest { id, server_label, name, arguments } => {
                    let known = self.waiting.iter().any(|w| {
                        matches!(&w.on, WaitingOn::Approval { approval_request_id, .. } if approval_request_id == id)
                    });
                    if known || self.has_call(id) {
                        continue;
                    }
                    let model_name = model_name(server_label, name);
                    self.add_call(ToolCall {
                        id: id.clone(),
                        name: model_name.clone(),
                        arguments: arguments.clone(),
                    });
                    self.waiting.push(Waiting {
                        call_id: id.clone(),
                        model_name,
                        arguments: arguments.clone(),
                        on: WaitingOn::Approval {
                            approval_request_id: id.clone(),
                            server_label: server_label.clone(),
                            tool: name.clone(),
                        },
                    });
                }
                InputItem::Echo => {}
            }
        }
        if self.messages.len() > MAX_MESSAGES {
            return Err(ApiError::invalid(
                Some("input"),
                format!("a conversation keeps at most {MAX_MESSAGES} messages; start a new one"),
            ));
        }
        Ok(answered)
    }

    /// Adds a call to the last assistant turn (or to a new one, when the last message is not
    /// the assistant's).
    fn add_call(&mut self, call: ToolCall) {
        match self.messages.last_mut() {
            Some(Message::Assistant(turn)) => turn.tool_calls.push(call),
            _ => self.messages.push(Message::Assistant(AssistantTurn {
                tool_calls: vec![call],
                ..Default::default()
            })),
        }
    }

    /// Whether the conversation has a call with this id.
    fn has_call(&self, id: &str) -> bool {
        self.messages.iter().any(|message| {
            matches!(message, Message::Assistant(turn) if turn.tool_calls.iter().any(|c| c.id == id))
        })
    }

    /// Whether the model can take its next turn: every call of its last turn has a result.
    pub(crate) fn still_waiting(&self) -> Option<ApiError> {
        let first = self.waiting.first()?;
        let what = match &first.on {
            WaitingOn::Function => format!(
                "the function call {:?} ({}) still waits for a function_call_output",
                first.call_id, first.model_name
            ),
            WaitingOn::Approval { approval_request_id, .. } => format!(
                "the call of {} still waits for an mcp_approval_response to {approval_request_id:?}",
                first.model_name
            ),
        };
        Some(ApiError::invalid(Some("input"), what))
    }

    /// Adds the result of one call of the last turn.
    pub(crate) fn answer(&mut self, call_id: &str, name: &str, content: Vec<Part>, is_error: bool) {
        self.messages.push(Message::ToolResult(ToolResult {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            content,
            is_error,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(label: &str, tool: &str) -> String {
        format!("{label}__{tool}")
    }

    fn approval(id: &str) -> Waiting {
        Waiting {
            call_id: format!("call_{id}"),
            model_name: "fs__read".into(),
            arguments: "{}".into(),
            on: WaitingOn::Approval {
                approval_request_id: id.into(),
                server_label: "fs".into(),
                tool: "read".into(),
            },
        }
    }

    #[test]
    fn an_approval_answer_settles_its_call_and_a_stranger_is_refused() {
        let mut state =
            State { waiting: vec![approval("mcpr_1"), approval("mcpr_2")], ..State::default() };
        let answered = state
            .take_input(
                &names,
                &[InputItem::ApprovalResponse {
                    approval_request_id: "mcpr_2".into(),
                    approve: false,
                    reason: Some("no".into()),
                }],
            )
            .expect("known");
        assert_eq!(answered, vec![Answered::Denied(approval("mcpr_2"), Some("no".into()))]);
        assert!(state.still_waiting().expect("one left").message.contains("mcpr_1"));
        let error = state
            .take_input(
                &names,
                &[InputItem::ApprovalResponse {
                    approval_request_id: "mcpr_9".into(),
                    approve: true,
                    reason: None,
                }],
            )
            .expect_err("unknown");
        assert_eq!(error.param.as_deref(), Some("input[0].approval_request_id"));
    }

    #[test]
    fn output_items_sent_back_rebuild_the_conversation_and_its_waiting_call() {
        let mut state = State::default();
        let input = [
            InputItem::Message { role: Role::User, text: "echo twice".into() },
            InputItem::ListedTools { server_label: "fx".into() },
            InputItem::McpCall {
                id: "mcp_1".into(),
                server_label: "fx".into(),
                name: "echo".into(),
                arguments: "{}".into(),
                result: "once".into(),
                failed: false,
            },
            InputItem::ApprovalRequest {
                id: "mcpr_2".into(),
                server_label: "fx".into(),
                name: "echo".into(),
                arguments: "{}".into(),
            },
            InputItem::ApprovalResponse {
                approval_request_id: "mcpr_2".into(),
                approve: true,
                reason: None,
            },
        ];
        let answered = state.take_input(&names, &input).expect("a whole conversation");
        assert_eq!(state.listed, ["fx"]);
        assert!(matches!(&answered[..], [Answered::Approved(w)] if w.model_name == "fx__echo"));
        assert!(matches!(&state.messages[2], Message::ToolResult(r) if r.call_id == "mcp_1"));
        assert!(
            matches!(&state.messages[3], Message::Assistant(t) if t.tool_calls[0].id == "mcpr_2")
        );
        // Sent again beside a stored conversation that has them: not added twice.
        let before = state.messages.len();
        state.take_input(&names, &input[..3]).expect("again");
        assert_eq!(state.messages.len(), before + 1, "only the user message is new");
    }

    #[test]
    fn function_calls_sent_back_wait_for_their_outputs() {
        let mut state = State::default();
        state
            .take_input(
                &names,
                &[
                    InputItem::Message { role: Role::User, text: "hi".into() },
                    InputItem::FunctionCall {
                        call_id: "c1".into(),
                        name: "f".into(),
                        arguments: "{}".into(),
                    },
                ],
            )
            .expect("fine");
        assert!(state.still_waiting().is_some());
        state
            .take_input(
                &names,
                &[InputItem::FunctionCallOutput { call_id: "c1".into(), output: "42".into() }],
            )
            .expect("answers c1");
        assert!(state.still_waiting().is_none());
        assert!(matches!(state.messages.last(), Some(Message::ToolResult(r)) if r.call_id == "c1"));
        let error = state
            .take_input(
                &names,
                &[InputItem::FunctionCallOutput { call_id: "c1".into(), output: "again".into() }],
            )
            .expect_err("answered already");
        assert_eq!(error.param.as_deref(), Some("input[0].call_id"));
    }
}
