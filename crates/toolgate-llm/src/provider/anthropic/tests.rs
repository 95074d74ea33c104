//! Tests of the Anthropic Messages dialect: request bodies and streams written the way the API
//! writes them (`event:` and `data:` lines).

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

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| {
            format!("event: {}\ndata: {}\n\n", event["type"].as_str().expect("type"), event)
        })
        .collect()
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
}

fn result(call_id: &str, content: Vec<Part>, is_error: bool) -> Message {
    Message::ToolResult(ToolResult { call_id: call_id.into(), name: "t".into(), content, is_error })
}

#[test]
fn the_request_body_is_what_the_messages_api_takes() {
    let thinking = json!([
        {"type": "thinking", "thinking": "Two calls.", "signature": "EqQBCgIYAhIM..."},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va..."}
    ]);
    let request = ChatRequest {
        model: "claude-sonnet-4-5".into(),
        system: Some("Be brief.".into()),
        messages: vec![
            Message::user_text("Weather?"),
            Message::Assistant(AssistantTurn {
                text: "Checking.".into(),
                reasoning: Some(Reasoning {
                    text: "Two calls.".into(),
                    opaque: Some(thinking.clone()),
                }),
                tool_calls: vec![
                    call("toolu_01", "weather", r#"{"city":"Paris"}"#),
                    call("toolu_02", "now", ""),
                    call("toolu_03", "broken", r#"{"city": "Pa"#),
                ],
            }),
            result("toolu_01", vec![Part::text("21C")], false),
            result(
                "toolu_02",
                vec![Part::Image { mime_type: "image/png".into(), data: "iVBO".into() }],
                false,
            ),
            result("toolu_03", vec![Part::text("not valid JSON")], true),
            Message::User { content: vec![Part::text("Thanks"), Part::text("")] },
            // An empty turn is left out, and the user messages around it merge.
            Message::Assistant(AssistantTurn::default()),
            Message::user_text("And Rome?"),
        ],
        tools: vec![ToolSpec {
            name: "weather".into(),
            description: "Weather".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        }],
        temperature: Some(1.0),
        max_tokens: None,
    };
    assert_eq!(
        body(&request),
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 8192,
            "system": "Be brief.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Two calls.", "signature": "EqQBCgIYAhIM..."},
                    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va..."},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "toolu_02", "name": "now", "input": {}},
                    {"type": "tool_use", "id": "toolu_03", "name": "broken", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01",
                     "content": [{"type": "text", "text": "21C"}]},
                    {"type": "tool_result", "tool_use_id": "toolu_02", "content": [
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}
                    ]},
                    {"type": "tool_result", "tool_use_id": "toolu_03",
                     "content": [{"type": "text", "text": "not valid JSON"}], "is_error": true},
                    {"type": "text", "text": "Thanks"},
                    {"type": "text", "text": "And Rome?"}
                ]}
            ],
            "tools": [{"name": "weather", "description": "Weather",
                       "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
            "temperature": 1.0,
            "stream": true
        })
    );
}

#[test]
fn images_of_types_the_api_does_not_take_are_named_in_a_text() {
    let image = |mime_type: &str| Part::Image { mime_type: mime_type.into(), data: "AAAA".into() };
    let request = ChatRequest {
        model: "m".into(),
        messages: vec![Message::User {
            content: vec![image("image/bmp"), image("Image/PNG; charset=binary")],
        }],
        ..ChatRequest::default()
    };
    assert_eq!(
        body(&request)["messages"][0]["content"],
        json!([
            {"type": "text",
             "text": "[image (image/bmp) not shown: Anthropic takes JPEG, PNG, GIF and WebP]"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
        ])
    );
}

#[test]
fn tool_results_come_first_in_the_merged_user_message() {
    let request = ChatRequest {
        model: "m".into(),
        messages: vec![
            Message::user_text("go"),
            Message::Assistant(AssistantTurn {
                tool_calls: vec![call("toolu_1", "t", "{}")],
                ..AssistantTurn::default()
            }),
            Message::user_text("also this"),
            result("toolu_1", vec![], false),
        ],
        max_tokens: Some(10),
        ..ChatRequest::default()
    };
    let body = body(&request);
    assert_eq!(body["max_tokens"], json!(10));
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1"},
            {"type": "text", "text": "also this"}
        ]})
    );
}

#[test]
fn the_reference_stream_text_and_a_tool_use_in_pieces() {
    let stream = sse(&[
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 472, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 1000, "output_tokens": 2}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me check"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " the weather."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block":
            {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": \"Z\u{fc}"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "rich\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block":
            {"type": "tool_use", "id": "toolu_01B", "name": "now", "input": {}}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
               "usage": {"output_tokens": 89}}),
        json!({"type": "message_stop"}),
    ]);
    let (events, end) = run(&stream);
    assert_eq!(
        events,
        vec![
            StreamEvent::Text("Let me check".into()),
            StreamEvent::Text(" the weather.".into()),
            StreamEvent::ToolCallStarted { id: "toolu_01A".into(), name: "get_weather".into() },
            StreamEvent::ToolCallStarted { id: "toolu_01B".into(), name: "now".into() },
        ]
    );
    assert_eq!(
        end,
        Ok(Finished {
            turn: AssistantTurn {
                text: "Let me check the weather.".into(),
                reasoning: None,
                tool_calls: vec![
                    call("toolu_01A", "get_weather", "{\"city\": \"Zürich\"}"),
                    call("toolu_01B", "now", ""),
                ],
            },
            usage: Some(Usage {
                input_tokens: 1472,
                output_tokens: 89,
                cached_input_tokens: 1000,
                reasoning_tokens: 0
            }),
            stop: StopReason::ToolUse,
        })
    );
}

#[test]
fn thinking_blocks_are_kept_with_their_signatures_for_the_next_request() {
    let stream = sse(&[
        json!({"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant",
            "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "I should call"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": " the tool."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "EmwKAhgB"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block":
            {"type": "tool_use", "id": "toolu_9", "name": "t", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 40}}),
        json!({"type": "message_stop"}),
    ]);
    let (events, end) = run(&stream);
    assert_eq!(
        events,
        vec![
            StreamEvent::Reasoning("I should call".into()),
            StreamEvent::Reasoning(" the tool.".into()),
            StreamEvent::ToolCallStarted { id: "toolu_9".into(), name: "t".into() },
        ]
    );
    let turn = end.expect("finished").turn;
    let opaque = json!([
        {"type": "thinking", "thinking": "I should call the tool.", "signature": "EqQBCgIYAhIM"},
        {"type": "redacted_thinking", "data": "EmwKAhgB"}
    ]);
    assert_eq!(
        turn.reasoning,
        Some(Reasoning { text: "I should call the tool.".into(), opaque: Some(opaque.clone()) })
    );
    // And they go back first in the assistant message.
    let request = ChatRequest {
        model: "m".into(),
        messages: vec![Message::user_text("q"), Message::Assistant(turn)],
        ..ChatRequest::default()
    };
    let content = &body(&request)["messages"][1]["content"];
    assert_eq!(content[0], opaque[0]);
    assert_eq!(content[1], opaque[1]);
    assert_eq!(content[2]["type"], json!("tool_use"));
}

#[test]
fn stop_reasons_and_the_end_of_the_stream() {
    let with = |stop: &str, stop_event: bool| {
        let mut events = vec![
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hi"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 3}}),
        ];
        if stop_event {
            events.push(json!({"type": "message_stop"}));
        }
        run(&sse(&events)).1.map(|f| (f.turn.text, f.stop))
    };
    assert_eq!(with("end_turn", true), Ok(("Hi".into(), StopReason::End)));
    assert_eq!(with("stop_sequence", true), Ok(("Hi".into(), StopReason::End)));
    assert_eq!(with("max_tokens", true), Ok(("Hi".into(), StopReason::MaxTokens)));
    assert_eq!(with("refusal", true), Ok(("Hi".into(), StopReason::ContentFilter)));
    assert_eq!(with("pause_turn", true), Ok(("Hi".into(), StopReason::Other("pause_turn".into()))));
    // No message_stop, but the stop reason came: complete.
    assert_eq!(with("end_turn", false), Ok(("Hi".into(), StopReason::End)));
    // Neither: truncated.
    let cut = sse(&[json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "text", "text": "Hi"}})]);
    assert_eq!(run(&cut), (vec![StreamEvent::Text("Hi".into())], Err(Fault::Truncated)));
}

#[test]
fn an_error_event_is_an_error_in_the_stream() {
    let stream = sse(&[
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ]);
    let (events, end) = run(&stream);
    assert_eq!(events, vec![StreamEvent::Text("Hel".into())]);
    assert_eq!(
        end,
        Err(Fault::InStream {
            code: Some("overloaded_error".into()),
            message: "Overloaded".into()
        })
    );
}
