//! Tests of the Responses dialect: request bodies and streams written the way the API writes
//! them (an `event:` line naming each event, its `type` repeated in the data).

use serde_json::json;

use super::*;
use crate::chat::{ToolResult, ToolSpec};
use crate::provider::http::decode_text;

fn run(text: &str) -> (Vec<StreamEvent>, Result<Finished, Fault>) {
    let whole = decode_text(Decoder::default(), text, text.len());
    for piece in [1, 3, 7, 64] {
        assert_eq!(decode_text(Decoder::default(), text, piece), whole, "pieces of {piece}");
    }
    whole
}

/// The SSE form of `events`, as the API writes it.
fn sse(events: &[Value]) -> String {
    events
        .iter()
        .enumerate()
        .map(|(n, event)| {
            let mut event = event.clone();
            event["sequence_number"] = json!(n);
            format!("event: {}\ndata: {}\n\n", event["type"].as_str().expect("type"), event)
        })
        .collect()
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
}

#[test]
fn the_request_body_is_what_the_responses_api_takes() {
    let reasoning_item = json!({
        "type": "reasoning", "id": "rs_1", "status": "completed",
        "summary": [{"type": "summary_text", "text": "Look it up."}],
        "encrypted_content": "gAAAA..."
    });
    let stored_only = json!({"type": "reasoning", "id": "rs_2", "summary": []});
    let request = ChatRequest {
        model: "gpt-5".into(),
        system: Some("Be brief.".into()),
        messages: vec![
            Message::User {
                content: vec![
                    Part::text("What is this?"),
                    Part::Image { mime_type: "image/png".into(), data: "iVBO".into() },
                ],
            },
            Message::Assistant(AssistantTurn {
                text: "Let me check.".into(),
                reasoning: Some(Reasoning {
                    text: "Look it up.".into(),
                    opaque: Some(json!([reasoning_item, stored_only])),
                }),
                tool_calls: vec![
                    call("call_a", "search", r#"{"q":"png"}"#),
                    call("call_b", "now", ""),
                ],
            }),
            Message::ToolResult(ToolResult {
                call_id: "call_a".into(),
                name: "search".into(),
                content: vec![Part::text("a"), Part::text("b")],
                is_error: false,
            }),
            Message::ToolResult(ToolResult {
                call_id: "call_b".into(),
                name: "now".into(),
                content: vec![
                    Part::text("noon"),
                    Part::Image { mime_type: "image/jpeg".into(), data: "/9j/".into() },
                ],
                is_error: false,
            }),
        ],
        tools: vec![ToolSpec {
            name: "search".into(),
            description: "Search".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }],
        temperature: None,
        max_tokens: Some(500),
    };
    assert_eq!(
        body(&request),
        json!({
            "model": "gpt-5",
            "instructions": "Be brief.",
            "input": [
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "What is this?"},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBO",
                     "detail": "auto"}
                ]},
                // Replayed with its id, without its status; the item without encrypted
                // content is not.
                {"type": "reasoning", "id": "rs_1",
                 "summary": [{"type": "summary_text", "text": "Look it up."}],
                 "encrypted_content": "gAAAA..."},
                {"type": "message", "role": "assistant", "content": "Let me check."},
                {"type": "function_call", "call_id": "call_a", "name": "search",
                 "arguments": "{\"q\":\"png\"}"},
                {"type": "function_call", "call_id": "call_b", "name": "now", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_a", "output": "a\nb"},
                {"type": "function_call_output", "call_id": "call_b", "output": [
                    {"type": "input_text", "text": "noon"},
                    {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/",
                     "detail": "auto"}
                ]}
            ],
            "tools": [{"type": "function", "name": "search", "description": "Search",
                       "parameters": {"type": "object", "properties": {}}, "strict": false}],
            "max_output_tokens": 500,
            "store": false,
            "stream": true
        })
    );
}

fn response(status: &str, output: Value, usage: Value) -> Value {
    json!({"id": "resp_1", "object": "response", "status": status, "model": "gpt-5",
           "output": output, "usage": usage})
}

#[test]
fn reasoning_text_and_parallel_function_calls() {
    let reasoning = json!({"id": "rs_1", "type": "reasoning", "encrypted_content": null,
        "summary": [{"type": "summary_text", "text": "**Plan** Two lookups."},
                    {"type": "summary_text", "text": "Then answer."}]});
    let call_a = |arguments: &str| {
        json!({"id": "fc_1", "type": "function_call", "status": "in_progress",
        "arguments": arguments, "call_id": "call_A", "name": "weather"})
    };
    let call_b = |arguments: &str| {
        json!({"id": "fc_2", "type": "function_call", "status": "in_progress",
        "arguments": arguments, "call_id": "call_B", "name": "weather"})
    };
    let usage = json!({"input_tokens": 120, "input_tokens_details": {"cached_tokens": 100},
        "output_tokens": 300, "output_tokens_details": {"reasoning_tokens": 256}, "total_tokens": 420});
    let stream = sse(&[
        json!({"type": "response.created", "response": response("in_progress", json!([]), Value::Null)}),
        json!({"type": "response.in_progress", "response": response("in_progress", json!([]), Value::Null)}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
        json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0,
               "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0,
               "summary_index": 0, "delta": "**Plan** Two"}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0,
               "summary_index": 0, "delta": " lookups."}),
        json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0,
               "summary_index": 1, "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0,
               "summary_index": 1, "delta": "Then answer."}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning}),
        json!({"type": "response.output_item.added", "output_index": 1,
               "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1,
               "content_index": 0, "delta": "Checking", "logprobs": []}),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1,
               "content_index": 0, "delta": " both.", "logprobs": []}),
        json!({"type": "response.output_item.added", "output_index": 2, "item": call_a("")}),
        json!({"type": "response.output_item.added", "output_index": 3, "item": call_b("")}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 2,
               "delta": "{\"city\":"}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_2", "output_index": 3,
               "delta": "{\"city\":\"Ro"}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 2,
               "delta": "\"Paris\"}"}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_2", "output_index": 3,
               "delta": "me\"}"}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 2,
               "arguments": "{\"city\":\"Paris\"}"}),
        json!({"type": "response.output_item.done", "output_index": 2,
               "item": call_a("{\"city\":\"Paris\"}")}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_2", "output_index": 3,
               "arguments": "{\"city\":\"Rome\"}"}),
        json!({"type": "response.output_item.done", "output_index": 3,
               "item": call_b("{\"city\":\"Rome\"}")}),
        json!({"type": "response.completed", "response": response("completed", json!([]), usage)}),
    ]);
    let (events, end) = run(&stream);
    assert_eq!(
        events,
        vec![
            StreamEvent::Reasoning("**Plan** Two".into()),
            StreamEvent::Reasoning(" lookups.".into()),
            StreamEvent::Reasoning("\n\n".into()),
            StreamEvent::Reasoning("Then answer.".into()),
            StreamEvent::Text("Checking".into()),
            StreamEvent::Text(" both.".into()),
            StreamEvent::ToolCallStarted { id: "call_A".into(), name: "weather".into() },
            StreamEvent::ToolCallStarted { id: "call_B".into(), name: "weather".into() },
        ]
    );
    assert_eq!(
        end,
        Ok(Finished {
            turn: AssistantTurn {
                text: "Checking both.".into(),
                reasoning: Some(Reasoning {
                    text: "**Plan** Two lookups.\n\nThen answer.".into(),
                    opaque: Some(json!([reasoning])),
                }),
                tool_calls: vec![
                    call("call_A", "weather", r#"{"city":"Paris"}"#),
                    call("call_B", "weather", r#"{"city":"Rome"}"#)
                ],
            },
            usage: Some(Usage {
                input_tokens: 120,
                output_tokens: 300,
                cached_input_tokens: 100,
                reasoning_tokens: 256
            }),
            stop: StopReason::ToolUse,
        })
    );
}

#[test]
fn a_call_whose_arguments_come_only_whole_and_reasoning_text_from_gpt_oss() {
    // vLLM serving gpt-oss writes `response.reasoning_text.delta`; a call may come whole in
    // its `output_item.done` with no deltas.
    let stream = sse(&[
        json!({"type": "response.reasoning_text.delta", "item_id": "rs", "output_index": 0,
               "content_index": 0, "delta": "thinking"}),
        json!({"type": "response.output_item.done", "output_index": 1,
               "item": {"id": "fc_9", "type": "function_call", "call_id": "call_9", "name": "now",
                        "arguments": "", "status": "completed"}}),
        json!({"type": "response.completed",
               "response": response("completed", json!([]), json!({"input_tokens": 5, "output_tokens": 6}))}),
    ]);
    let (events, end) = run(&stream);
    assert_eq!(
        events,
        vec![
            StreamEvent::Reasoning("thinking".into()),
            StreamEvent::ToolCallStarted { id: "call_9".into(), name: "now".into() },
        ]
    );
    let end = end.expect("finished");
    assert_eq!(end.turn.tool_calls, vec![call("call_9", "now", "")]);
    assert_eq!(end.turn.reasoning, Some(Reasoning { text: "thinking".into(), opaque: None }));
    assert_eq!(end.usage.map(|u| (u.input_tokens, u.output_tokens)), Some((5, 6)));
}

#[test]
fn incomplete_responses_stop_for_their_reason() {
    let incomplete = |reason: &str| {
        let mut response =
            response("incomplete", json!([]), json!({"input_tokens": 1, "output_tokens": 2}));
        response["incomplete_details"] = json!({"reason": reason});
        let stream = sse(&[
            json!({"type": "response.output_text.delta", "item_id": "m", "output_index": 0,
                   "content_index": 0, "delta": "Once upon"}),
            json!({"type": "response.incomplete", "response": response}),
        ]);
        let end = run(&stream).1.expect("finished");
        assert_eq!(end.turn.text, "Once upon");
        end.stop
    };
    assert_eq!(incomplete("max_output_tokens"), StopReason::MaxTokens);
    assert_eq!(incomplete("content_filter"), StopReason::ContentFilter);
    assert_eq!(incomplete("other"), StopReason::Other("other".into()));
}

#[test]
fn failed_responses_and_error_events_are_errors_in_the_stream() {
    let mut failed = response("failed", json!([]), Value::Null);
    failed["error"] = json!({"code": "server_error", "message": "The model had an error."});
    let stream = sse(&[
        json!({"type": "response.output_text.delta", "item_id": "m", "output_index": 0,
               "content_index": 0, "delta": "Hel"}),
        json!({"type": "response.failed", "response": failed}),
    ]);
    let (events, end) = run(&stream);
    assert_eq!(events, vec![StreamEvent::Text("Hel".into())]);
    assert_eq!(
        end,
        Err(Fault::InStream {
            code: Some("server_error".into()),
            message: "The model had an error.".into()
        })
    );
    let error = sse(&[json!({"type": "error", "code": "rate_limit_exceeded",
        "message": "Rate limit reached", "param": null})]);
    assert_eq!(
        run(&error).1,
        Err(Fault::InStream {
            code: Some("rate_limit_exceeded".into()),
            message: "Rate limit reached".into()
        })
    );
    let no_code = sse(&[json!({"type": "error", "code": null, "message": "Bad", "param": null})]);
    assert_eq!(run(&no_code).1, Err(Fault::InStream { code: None, message: "Bad".into() }));
}

#[test]
fn a_stream_that_ends_before_completion_is_truncated() {
    let stream = sse(&[json!({"type": "response.output_text.delta", "item_id": "m",
        "output_index": 0, "content_index": 0, "delta": "Hi"})]);
    let (events, end) = run(&stream);
    assert_eq!(events, vec![StreamEvent::Text("Hi".into())]);
    assert_eq!(end, Err(Fault::Truncated));
}
