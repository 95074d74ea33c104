"""Reads the fake LLM's answers with the providers' official Python SDKs.

Usage: python sdk_streams.py ORIGIN API_KEY < cases.json

ORIGIN is the fake's `http://127.0.0.1:PORT`; cases.json a JSON array of cases, each
{"client": NAME}, asked in order (one request each, so one turn of the fake's script each).
Clients:

- chat: openai `client.chat.completions.create(stream=True)`, tool call deltas accumulated
  by index as the OpenAI docs show (the id and name kept from the chunks that carry them,
  the arguments joined);
- chat_helper: openai `client.chat.completions.stream(...).get_final_completion()`, the
  SDK's own accumulation;
- responses: openai `client.responses.create(stream=True)`, the events read one by one
  (text and summary deltas joined, arguments deltas joined per item and checked against the
  `.done` events and the completed response);
- anthropic: anthropic `client.messages.stream(...)`, `get_final_message()`.

Prints one JSON line per case: {"text", "reasoning", "reasoning_key", "tool_calls": [{"id",
"name", "arguments"}], "finish", "usage": [input, output], "signature"} with the
arguments as the text the SDK gave (Anthropic: its parsed input dumped), or {"error": "..."}
when the SDK raised.
"""

import json
import sys
import traceback

import anthropic
import openai

TOOLS_CHAT = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
TOOLS_RESPONSES = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
TOOLS_ANTHROPIC = [{"name": "get_weather", "input_schema": {"type": "object"}}]
MESSAGES = [{"role": "user", "content": "What is the weather in Zürich?"}]


def chat(origin, key):
    client = openai.OpenAI(base_url=origin + "/v1", api_key=key, max_retries=0)
    stream = client.chat.completions.create(
        model="gpt-fake",
        messages=MESSAGES,
        tools=TOOLS_CHAT,
        stream=True,
        stream_options={"include_usage": True},
    )
    text, reasoning, key_seen, finish, usage = "", "", None, None, None
    calls = {}
    for chunk in stream:
        if chunk.usage is not None:
            usage = [chunk.usage.prompt_tokens, chunk.usage.completion_tokens]
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                text += delta.content
            extra = delta.model_extra or {}
            for name in ("reasoning_content", "reasoning"):
                if extra.get(name):
                    reasoning += extra[name]
                    key_seen = name
            for call in delta.tool_calls or []:
                seen = calls.setdefault(call.index, {"id": None, "name": "", "arguments": ""})
                if call.id:
                    seen["id"] = call.id
                if call.function is not None:
                    if call.function.name:
                        seen["name"] = call.function.name
                    if call.function.arguments:
                        seen["arguments"] += call.function.arguments
            if choice.finish_reason:
                finish = choice.finish_reason
    return {
        "text": text,
        "reasoning": reasoning or None,
        "reasoning_key": key_seen,
        "tool_calls": [calls[index] for index in sorted(calls)],
        "finish": finish,
        "usage": usage,
    }


def chat_helper(origin, key):
    client = openai.OpenAI(base_url=origin + "/v1", api_key=key, max_retries=0)
    with client.chat.completions.stream(
        model="gpt-fake",
        messages=MESSAGES,
        tools=TOOLS_CHAT,
        stream_options={"include_usage": True},
    ) as stream:
        for _ in stream:
            pass
        completion = stream.get_final_completion()
    choice = completion.choices[0]
    message = choice.message
    extra = message.model_extra or {}
    key_seen = next((name for name in ("reasoning_content", "reasoning") if extra.get(name)), None)
    usage = completion.usage
    return {
        "text": message.content or "",
        "reasoning": extra.get(key_seen) if key_seen else None,
        "reasoning_key": key_seen,
        "tool_calls": [
            {"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
            for call in message.tool_calls or []
        ],
        "finish": choice.finish_reason,
        "usage": [usage.prompt_tokens, usage.completion_tokens] if usage else None,
    }


def responses(origin, key):
    client = openai.OpenAI(base_url=origin + "/v1", api_key=key, max_retries=0)
    stream = client.responses.create(
        model="gpt-fake",
        input=MESSAGES,
        tools=TOOLS_RESPONSES,
        stream=True,
    )
    text, reasoning, finish, usage = "", "", None, None
    arguments = {}
    calls = []
    for event in stream:
        kind = event.type
        if kind == "response.output_text.delta":
            text += event.delta
        elif kind == "response.reasoning_summary_text.delta":
            reasoning += event.delta
        elif kind == "response.function_call_arguments.delta":
            arguments[event.item_id] = arguments.get(event.item_id, "") + event.delta
        elif kind == "response.function_call_arguments.done":
            if arguments.get(event.item_id, "") != event.arguments:
                raise AssertionError(f"the deltas of {event.item_id} do not add up to .done")
        elif kind == "response.output_item.done" and event.item.type == "function_call":
            item = event.item
            if arguments.get(item.id, "") != item.arguments:
                raise AssertionError(f"the deltas of {item.id} do not add up to the item")
            calls.append({"id": item.call_id, "name": item.name, "arguments": item.arguments})
        elif kind in ("response.completed", "response.incomplete"):
            response = event.response
            finish = response.status
            usage = [response.usage.input_tokens, response.usage.output_tokens]
            if response.output_text != text:
                raise AssertionError("the completed response's text is not the deltas'")
    return {
        "text": text,
        "reasoning": reasoning or None,
        "reasoning_key": None,
        "tool_calls": calls,
        "finish": finish,
        "usage": usage,
    }


def anthropic_messages(origin, key):
    client = anthropic.Anthropic(base_url=origin, api_key=key, max_retries=0)
    with client.messages.stream(
        model="claude-fake",
        max_tokens=1024,
        messages=MESSAGES,
        tools=TOOLS_ANTHROPIC,
    ) as stream:
        for _ in stream:
            pass
        message = stream.get_final_message()
    text, reasoning, signature, calls = "", None, None, []
    for block in message.content:
        if block.type == "text":
            text += block.text
        elif block.type == "thinking":
            reasoning = block.thinking
            signature = block.signature
        elif block.type == "tool_use":
            calls.append({"id": block.id, "name": block.name, "arguments": json.dumps(block.input)})
    return {
        "text": text,
        "reasoning": reasoning,
        "reasoning_key": None,
        "signature": signature,
        "tool_calls": calls,
        "finish": message.stop_reason,
        "usage": [message.usage.input_tokens, message.usage.output_tokens],
    }


CLIENTS = {
    "chat": chat,
    "chat_helper": chat_helper,
    "responses": responses,
    "anthropic": anthropic_messages,
}


def main():
    origin, key = sys.argv[1], sys.argv[2]
    for case in json.load(sys.stdin):
        try:
            out = CLIENTS[case["client"]](origin, key)
        except Exception as error:  # the SDK refused the answer: say how
            last = traceback.format_exception_only(type(error), error)[-1].strip()
            out = {"error": last}
        print(json.dumps(out, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
