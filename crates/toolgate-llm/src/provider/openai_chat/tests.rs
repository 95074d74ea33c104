//! Tests of the Chat Completions dialect: request bodies and streams written the way OpenAI and
//! the compatible servers write them.

use serde_json::json;

use super::*;
use crate::chat::{ToolResult, ToolSpec};
use crate::provider::http::decode_text;

/// The stream decoded whole and in pieces of several sizes: always the same.
fn run(text: &str) -> (Vec<StreamEvent>, Result<Finished, Fault>) {
    let whole = decode_text(Decoder::default(), text, text.len());
    for piece in [1, 2, 3, 7, 64] {
        assert_eq!(decode_text(Decoder::default(), text, piece), whole, "pieces of {piece}");
    }
    whole
}

fn finished(text: &str) -> Finished {
    let (_, end) = run(text);
    end.expect("finished")
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
}

fn started(id: &str, name: &str) -> StreamEvent {
    StreamEvent::ToolCallStarted { id: id.into(), name: name.into() }
}

#[test]
fn the_request_body_is_what_chat_completions_takes() {
    let request = ChatRequest {
        model: "gpt-4o".into(),
        system: Some("Be brief.".into()),
        messages: vec![
            Message::user_text("Weather in Paris and Rome?"),
            Message::Assistant(AssistantTurn {
                text: String::new(),
                reasoning: Some(Reasoning { text: "Two cities.".into(), opaque: None }),
                tool_calls: vec![
                    call("call_a", "weather__get", r#"{"city":"Paris"}"#),
                    call("call_b", "weather__get", ""),
                ],
            }),
            Message::ToolResult(ToolResult {
                call_id: "call_a".into(),
                name: "weather__get".into(),
                content: vec![Part::text("21C"), Part::text("sunny")],
                is_error: false,
            }),
            Message::ToolResult(ToolResult {
                call_id: "call_b".into(),
                name: "weather__get".into(),
                content: vec![
                    Part::text("map:"),
                    Part::Image { mime_type: "image/png".into(), data: "iVBO".into() },
                ],
                is_error: true,
            }),
            Message::User {
                content: vec![
                    Part::text("And this?"),
                    Part::Image { mime_type: "image/jpeg".into(), data: "/9j/".into() },
                ],
            },
        ],
        tools: vec![ToolSpec {
            name: "weather__get".into(),
            description: "Weather".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        }],
        temperature: Some(0.5),
        max_tokens: Some(100),
    };
    assert_eq!(
        body(&request, "max_tokens"),
        json!({
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Weather in Paris and Rome?"},
                // Before the last user message: no reasoning_content.
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_a", "type": "function",
                     "function": {"name": "weather__get", "arguments": "{\"city\":\"Paris\"}"}},
                    {"id": "call_b", "type": "function",
                     "function": {"name": "weather__get", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_a", "content": "21C\nsunny"},
                {"role": "tool", "tool_call_id": "call_b", "content": "map:"},
                {"role": "user", "content": [
                    {"type": "text", "text": "The image(s) returned by weather__get (call call_b):"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}
                ]},
                {"role": "user", "content": [
                    {"type": "text", "text": "And this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}}
                ]}
            ],
            "tools": [{"type": "function", "function": {
                "name": "weather__get",
                "description": "Weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}
            }}],
            "temperature": 0.5,
            "max_tokens": 100,
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
    let openai = body(&request, "max_completion_tokens");
    assert_eq!(openai["max_completion_tokens"], json!(100));
    assert!(openai.get("max_tokens").is_none());
}

#[test]
fn reasoning_goes_back_as_reasoning_content_within_the_current_tool_use_turn() {
    let turn = |reasoning: &str, text: &str| {
        Message::Assistant(AssistantTurn {
            text: text.into(),
            reasoning: Some(Reasoning { text: reasoning.into(), opaque: None }),
            tool_calls: vec![],
        })
    };
    let request = ChatRequest {
        model: "deepseek-chat".into(),
        messages: vec![
            Message::user_text("one"),
            turn("old thought", "old answer"),
            Message::user_text("two"),
            Message::Assistant(AssistantTurn {
                text: "Let me look.".into(),
                reasoning: Some(Reasoning { text: "I need the tool.".into(), opaque: None }),
                tool_calls: vec![call("call_0", "t", "{}")],
            }),
            Message::ToolResult(ToolResult {
                call_id: "call_0".into(),
                name: "t".into(),
                content: vec![],
                is_error: false,
            }),
        ],
        ..ChatRequest::default()
    };
    let body = body(&request, "max_tokens");
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "old answer"},
            {"role": "user", "content": "two"},
            {"role": "assistant", "content": "Let me look.", "reasoning_content": "I need the tool.",
             "tool_calls": [{"id": "call_0", "type": "function",
                             "function": {"name": "t", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_0", "content": ""}
        ])
    );
    assert!(body.get("tools").is_none() && body.get("temperature").is_none());
}

/// The reference stream: one call, its arguments in pieces, usage in a last chunk with no
/// choices, then `[DONE]`.
const ONE_CALL: &str = r#"data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}

data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}]}

data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"finish_reason":null}]}

data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":80,"completion_tokens":19,"total_tokens":99,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":0}}}

data: [DONE]

"#;

#[test]
fn one_call_in_pieces_with_usage_last() {
    let (events, end) = run(ONE_CALL);
    assert_eq!(events, vec![started("call_abc", "get_weather")]);
    assert_eq!(
        end,
        Ok(Finished {
            turn: AssistantTurn {
                text: String::new(),
                reasoning: None,
                tool_calls: vec![call("call_abc", "get_weather", r#"{"city":"Paris"}"#)],
            },
            usage: Some(Usage {
                input_tokens: 80,
                output_tokens: 19,
                cached_input_tokens: 64,
                reasoning_tokens: 0
            }),
            stop: StopReason::ToolUse,
        })
    );
}

#[test]
fn text_then_parallel_calls_interleaved_by_index() {
    let stream = r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Checking "}}]}

data: {"choices":[{"index":0,"delta":{"content":"both."}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_p","type":"function","function":{"name":"weather","arguments":""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_r","type":"function","function":{"name":"weather","arguments":"{\"city\""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":\"Rome\"}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]
"#;
    let (events, end) = run(stream);
    assert_eq!(
        events,
        vec![
            StreamEvent::Text("Checking ".into()),
            StreamEvent::Text("both.".into()),
            started("call_p", "weather"),
            started("call_r", "weather"),
        ]
    );
    let end = end.expect("finished");
    assert_eq!(end.turn.text, "Checking both.");
    assert_eq!(
        end.turn.tool_calls,
        vec![
            call("call_p", "weather", r#"{"city":"Paris"}"#),
            call("call_r", "weather", r#"{"city":"Rome"}"#)
        ]
    );
    assert_eq!((end.usage, end.stop), (None, StopReason::ToolUse));
}

#[test]
fn compatible_servers_quirks_whole_calls_repeated_ids_missing_ids_and_indexes() {
    // A whole call in one chunk (Ollama), then a call whose id and name come again on every
    // chunk (some vLLM versions), then one with no id at all (llama.cpp's older builds), then
    // two whole calls without index (Gemini's compatible endpoint), then one with neither index
    // nor id in two pieces, with `data:` written without the space.
    let stream = r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"fs__read","arguments":"{\"path\":\"/a\"}"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"fs__list","arguments":"{\"dir\":"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"fs__list","arguments":"\"/b\"}"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"type":"function","function":{"name":"fs__stat","arguments":""}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"function":{"arguments":"{}"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"g1","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}},{"id":"g2","type":"function","function":{"name":"b","arguments":"{\"y\":2}"}}]}}]}

data:{"choices":[{"index":0,"delta":{"tool_calls":[{"type":"function","function":{"name":"c","arguments":"{\"z\""}}]}}]}

data:{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":":3}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]
"#;
    let (events, end) = run(stream);
    assert_eq!(
        events,
        vec![
            started("call_1", "fs__read"),
            started("call_2", "fs__list"),
            // Made up: `call_2` is taken.
            started("call_2_1", "fs__stat"),
            started("g1", "a"),
            started("g2", "b"),
            started("call_5", "c"),
        ]
    );
    assert_eq!(
        end.expect("finished").turn.tool_calls,
        vec![
            call("call_1", "fs__read", r#"{"path":"/a"}"#),
            call("call_2", "fs__list", r#"{"dir":"/b"}"#),
            call("call_2_1", "fs__stat", "{}"),
            call("g1", "a", r#"{"x":1}"#),
            call("g2", "b", r#"{"y":2}"#),
            call("call_5", "c", r#"{"z":3}"#),
        ]
    );
}

#[test]
fn arguments_split_inside_a_character_empty_arguments_and_arguments_as_an_object() {
    // "Zürich 日本": the argument text cut inside "ü" and "日" (each chunk's JSON is whole; its
    // escapes are decoded before joining), plus the same cut in the raw bytes by `run`.
    let stream = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c0\",\"function\":{\"name\":\"w\",\"arguments\":\"{\\\"city\\\":\\\"Z\\u00fc\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"rich \u{65e5}\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\u{672c}\\\"}\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"c1\",\"function\":{\"name\":\"now\",\"arguments\":\"\"}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":2,\"id\":\"c2\",\"function\":{\"name\":\"obj\",\"arguments\":{\"a\":[1]}}}]}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n";
    let calls = finished(stream).turn.tool_calls;
    assert_eq!(
        calls,
        vec![
            call("c0", "w", "{\"city\":\"Zürich 日本\"}"),
            call("c1", "now", ""),
            call("c2", "obj", r#"{"a":[1]}"#)
        ]
    );
    assert_eq!(calls[1].arguments_object(), Ok(serde_json::Map::new()));
}

#[test]
fn reasoning_in_either_spelling_is_kept_once() {
    // DeepSeek: reasoning_content; Ollama and OpenRouter: reasoning; a vLLM in transition: both.
    let stream = r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"First, "}}]}

data: {"choices":[{"index":0,"delta":{"reasoning":"second, "}}]}

data: {"choices":[{"index":0,"delta":{"reasoning_content":"third.","reasoning":"third."}}]}

data: {"choices":[{"index":0,"delta":{"content":"Done.","reasoning_content":null}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":30,"prompt_cache_hit_tokens":8,"completion_tokens_details":{"reasoning_tokens":25}}}

data: [DONE]
"#;
    let (events, end) = run(stream);
    assert_eq!(
        events,
        vec![
            StreamEvent::Reasoning("First, ".into()),
            StreamEvent::Reasoning("second, ".into()),
            StreamEvent::Reasoning("third.".into()),
            StreamEvent::Text("Done.".into()),
        ]
    );
    assert_eq!(
        end,
        Ok(Finished {
            turn: AssistantTurn {
                text: "Done.".into(),
                reasoning: Some(Reasoning { text: "First, second, third.".into(), opaque: None }),
                tool_calls: vec![],
            },
            usage: Some(Usage {
                input_tokens: 10,
                output_tokens: 30,
                cached_input_tokens: 8,
                reasoning_tokens: 25
            }),
            stop: StopReason::End,
        })
    );
}

#[test]
fn finish_reasons() {
    let with = |reason: &str, calls: bool| {
        let call = if calls {
            r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"t","arguments":"{}"}}]}}]}"#
        } else {
            r#"data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}"#
        };
        let stream = format!(
            "{call}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{reason}\"}}]}}\n\ndata: [DONE]\n\n"
        );
        finished(&stream).stop
    };
    assert_eq!(with("stop", false), StopReason::End);
    // Ollama says `stop` after tool calls.
    assert_eq!(with("stop", true), StopReason::ToolUse);
    assert_eq!(with("tool_calls", true), StopReason::ToolUse);
    assert_eq!(with("length", false), StopReason::MaxTokens);
    assert_eq!(with("content_filter", false), StopReason::ContentFilter);
    assert_eq!(
        with("insufficient_system_resource", false),
        StopReason::Other("insufficient_system_resource".into())
    );
}

#[test]
fn the_end_without_done_is_complete_after_a_finish_reason_and_truncated_before() {
    let complete = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n";
    assert_eq!(finished(complete).turn.text, "hi");
    let cut = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n";
    let (events, end) = run(cut);
    assert_eq!(events, vec![StreamEvent::Text("hi".into())]);
    assert_eq!(end, Err(Fault::Truncated));
    assert_eq!(run("").1, Err(Fault::Truncated));
}

#[test]
fn an_error_in_a_chunk_ends_the_stream_after_what_came_before() {
    // OpenRouter writes a mid-stream failure as a chunk with an `error` object.
    let stream = r#": OPENROUTER PROCESSING

data: {"choices":[{"index":0,"delta":{"content":"Par"}}]}

data: {"id":"x","object":"chat.completion.chunk","error":{"code":502,"message":"Provider disconnected"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}

data: [DONE]
"#;
    let (events, end) = run(stream);
    assert_eq!(events, vec![StreamEvent::Text("Par".into())]);
    assert_eq!(
        end,
        Err(Fault::InStream { code: Some("502".into()), message: "Provider disconnected".into() })
    );
    // vLLM's shape, and Ollama's string.
    let vllm = "data: {\"error\": {\"object\": \"error\", \"message\": \"out of memory\", \"type\": \"InternalServerError\", \"code\": 500}}\n\n";
    assert_eq!(
        run(vllm).1,
        Err(Fault::InStream { code: Some("500".into()), message: "out of memory".into() })
    );
    let ollama = "data: {\"error\":\"model requires more system memory\"}\n\n";
    assert_eq!(
        run(ollama).1,
        Err(Fault::InStream { code: None, message: "model requires more system memory".into() })
    );
}

#[test]
fn data_that_is_not_json_is_a_protocol_error() {
    let (_, end) = run("data: {\"choices\": [\n\n");
    assert!(
        matches!(end, Err(Fault::Protocol(message)) if message.starts_with("an event that is not JSON"))
    );
}

#[test]
fn a_whole_chat_completion_is_read_as_one_delta() {
    let whole = |body: Value| {
        let mut out = Vec::new();
        let finished = Decoder::default().whole(&body, &mut out);
        (out, finished)
    };
    let (events, end) = whole(json!({
        "choices": [{"message": {"role": "assistant", "content": "  short  "}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2},
    }));
    assert_eq!(events, vec![StreamEvent::Text("  short  ".into())]);
    let end = end.expect("finished");
    assert_eq!(end.turn.text, "  short  ");
    assert_eq!(end.stop, StopReason::MaxTokens);
    let usage = end.usage.expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens), (10, 2));

    let (events, end) = whole(json!({"choices": [{"message": {"content": null, "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}},
        {"id": "call_b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
    ]}, "finish_reason": "tool_calls"}]}));
    assert_eq!(events, vec![started("call_a", "f"), started("call_b", "g")]);
    let end = end.expect("finished");
    assert_eq!(
        end.turn.tool_calls,
        vec![call("call_a", "f", "{\"x\":1}"), call("call_b", "g", "{}")]
    );
    assert_eq!(end.stop, StopReason::ToolUse);

    let (_, end) = whole(json!({"choices": [{"message": {"content": null, "refusal": "no"}}]}));
    let end = end.expect("finished");
    assert_eq!((end.turn.text.as_str(), end.stop), ("", StopReason::ContentFilter));

    let cases = [
        (json!({}), "a body that is not a chat completion (no choices)"),
        (json!({"choices": []}), "a body that is not a chat completion (no choices)"),
        (json!({"choices": [{}]}), "a choice without a message"),
    ];
    for (body, why) in cases {
        assert_eq!(whole(body.clone()).1, Err(Fault::Protocol(why.into())), "{body}");
    }
    let (_, end) = whole(json!({"error": {"message": "Overloaded", "type": "overloaded_error"}}));
    assert!(
        matches!(end, Err(Fault::InStream { code: Some(code), .. }) if code == "overloaded_error")
    );
}
