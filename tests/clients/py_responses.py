"""The official `openai` Python SDK against toolgate's /v1/responses.

Usage: py_responses.py BASE_URL

Runs the scenarios below in order against a gateway that serves the fixture MCP server as
`fx`, with a fake model behind it whose script the Rust test wrote in the same order. Every
response, output item and stream event is validated against the SDK's own types (pydantic),
and a negative control shows that the validation can fail. Prints a JSON report on success;
an assertion names what failed otherwise.
"""

import json
import sys

import openai
import pydantic
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseOutputItem, ResponseStreamEvent

BASE_URL = sys.argv[1]
client = openai.OpenAI(base_url=BASE_URL, api_key="unused-by-toolgate", max_retries=0)
MODEL = "gpt-4.1-mini"

ITEM = pydantic.TypeAdapter(ResponseOutputItem)
EVENT = pydantic.TypeAdapter(ResponseStreamEvent)
report = {}


def fx(require_approval, allowed=None):
    tool = {"type": "mcp", "server_label": "fx", "require_approval": require_approval,
            "authorization": "never-stored-token"}
    if allowed is not None:
        tool["allowed_tools"] = allowed
    return tool


def validated(response):
    """The response as JSON, checked against the SDK's types, strictly."""
    raw = response.model_dump(mode="json", exclude_unset=True, by_alias=True)
    Response.model_validate(raw, strict=True)
    for item in raw["output"]:
        ITEM.validate_python(item, strict=True)
    return raw


def types(raw):
    return [item["type"] for item in raw["output"]]


# Negative control: the same check refuses an mcp_call without its server_label.
broken = {"type": "mcp_call", "id": "mcp_1", "name": "echo", "arguments": "{}"}
try:
    ITEM.validate_python(broken, strict=True)
    raise AssertionError("the SDK's types accepted an mcp_call without server_label")
except pydantic.ValidationError:
    report["negative_control"] = "refused"

# 1. A call that needs no approval: listed, called, answered.
first = validated(client.responses.create(
    model=MODEL, input="echo hi", tools=[fx("never", ["echo", "fail"])]))
assert types(first) == ["mcp_list_tools", "mcp_call", "message"], types(first)
listed = {tool["name"] for tool in first["output"][0]["tools"]}
assert listed == {"echo", "fail"}, listed
call = first["output"][1]
assert call["server_label"] == "fx" and call["name"] == "echo", call
assert call["status"] == "completed" and "hi" in call["output"], call
assert first["output"][2]["content"][0]["text"] == "The echo said hi.", first["output"][2]
assert first["status"] == "completed" and first["usage"]["total_tokens"] > 0, first
assert "never-stored-token" not in json.dumps(first), "a credential was echoed"
report["first"] = first["id"]

# 2. Continued: the server is not listed again; a tool error is an mcp_call that failed.
second = validated(client.responses.create(
    model=MODEL, previous_response_id=first["id"], input="now fail",
    tools=[fx("never", ["echo", "fail"])]))
assert types(second) == ["mcp_call", "message"], types(second)
failed = second["output"][0]
assert failed["status"] == "failed" and failed["output"] is None, failed
assert failed["error"]["type"] == "mcp_tool_execution_error", failed
assert "expected" in json.dumps(failed["error"]["content"]), failed

# 3. Approval required: the call waits, is approved, then runs.
asked = validated(client.responses.create(
    model=MODEL, input="echo with approval", tools=[fx("always")]))
assert types(asked) == ["mcp_list_tools", "mcp_approval_request"], types(asked)
request = asked["output"][1]
assert request["name"] == "echo" and json.loads(request["arguments"]) == {"text": "approve me"}
approved = validated(client.responses.create(
    model=MODEL, previous_response_id=asked["id"], tools=[fx("always")],
    input=[{"type": "mcp_approval_response", "approval_request_id": request["id"],
            "approve": True}]))
assert types(approved) == ["mcp_call", "message"], types(approved)
assert approved["output"][0]["approval_request_id"] == request["id"], approved["output"][0]
assert "approve me" in approved["output"][0]["output"], approved["output"][0]

# 4. Denied: nothing runs, and the model reads why.
asked = validated(client.responses.create(
    model=MODEL, input="echo, to be denied", tools=[fx("always")]))
request = asked["output"][-1]
assert request["type"] == "mcp_approval_request", asked["output"]
denied = validated(client.responses.create(
    model=MODEL, previous_response_id=asked["id"], tools=[fx("always")],
    input=[{"type": "mcp_approval_response", "approval_request_id": request["id"],
            "approve": False, "reason": "not this one"}]))
assert types(denied) == ["message"], types(denied)

# 5. Streamed: every event is one the SDK knows, in order, numbered.
events = []
with client.responses.create(model=MODEL, input="echo in a stream", stream=True,
                             tools=[fx("never")]) as stream:
    for event in stream:
        raw = event.model_dump(mode="json", exclude_unset=True, by_alias=True)
        EVENT.validate_python(raw, strict=True)
        events.append(raw)
kinds = [event["type"] for event in events]
assert kinds[0] == "response.created" and kinds[-1] == "response.completed", kinds
for wanted in ["response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed",
               "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done",
               "response.mcp_call.in_progress", "response.mcp_call.completed",
               "response.output_text.delta", "response.output_text.done",
               "response.output_item.added", "response.output_item.done"]:
    assert wanted in kinds, (wanted, kinds)
numbers = [event["sequence_number"] for event in events]
assert numbers == list(range(len(events))), numbers
text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
assert text == "Streamed answer.", text
final = events[-1]["response"]
Response.model_validate(final, strict=True)
report["streamed_events"] = len(events)

# 6. The application's own function: returned to it, then answered.
weather_function = {"name": "get_weather", "description": "The weather in a city.",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                   "required": ["city"]}}
weather = {"type": "function", **weather_function}
called = validated(client.responses.create(model=MODEL, input="weather?", tools=[weather]))
assert types(called) == ["function_call"], types(called)
function_call = called["output"][0]
answered = validated(client.responses.create(
    model=MODEL, previous_response_id=called["id"], tools=[weather],
    input=[{"type": "function_call_output", "call_id": function_call["call_id"],
            "output": "sunny"}]))
assert answered["output"][-1]["content"][0]["text"] == "It is sunny in Paris."

# 7. Stored: retrieved by id, deleted, then unknown.
again = client.responses.retrieve(first["id"])
assert again.id == first["id"] and again.output[1].type == "mcp_call"
client.responses.delete(first["id"])
try:
    client.responses.retrieve(first["id"])
    raise AssertionError("a deleted response was found")
except openai.NotFoundError:
    report["deleted"] = True

# 8. Refusals name the field: an unknown server, a server named by URL.
for tool, param in [({"type": "mcp", "server_label": "nope"}, "tools[0].server_label"),
                    ({"type": "mcp", "server_label": "x", "server_url": "http://127.0.0.1:1/mcp"},
                     "tools[0].server_url")]:
    try:
        client.responses.create(model=MODEL, input="x", tools=[tool])
        raise AssertionError(f"{tool} was accepted")
    except openai.BadRequestError as error:
        assert error.body["param"] == param, error.body

# 9. Chat Completions with the same hosted tool: run here (policy-only approval).
chat = client.chat.completions.create(
    model=MODEL, messages=[{"role": "user", "content": "echo via chat"}],
    tools=[{"type": "mcp", "server_label": "fx", "require_approval": "always"}])
raw = chat.model_dump(mode="json", exclude_unset=True)
ChatCompletion.model_validate(raw, strict=True)
assert chat.choices[0].message.content == "Chat echoed.", raw
assert chat.choices[0].finish_reason == "stop", raw

# 10. Streamed, with the application's function: chunks the SDK knows, the call returned.
chat_weather = {"type": "function", "function": weather_function}
chunks = []
for chunk in client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "weather in Rome?"}],
        tools=[chat_weather], stream=True, stream_options={"include_usage": True}):
    raw = chunk.model_dump(mode="json", exclude_unset=True)
    ChatCompletionChunk.model_validate(raw, strict=True)
    chunks.append(raw)
calls = [c for chunk in chunks for choice in chunk["choices"]
         for c in (choice["delta"].get("tool_calls") or [])]
assert len(calls) == 1 and calls[0]["function"]["name"] == "get_weather", chunks
finishes = [choice.get("finish_reason") for chunk in chunks for choice in chunk["choices"]]
assert "tool_calls" in finishes, chunks
assert chunks[-1]["usage"]["total_tokens"] > 0, chunks[-1]
answered = client.chat.completions.create(
    model=MODEL, tools=[chat_weather],
    messages=[{"role": "user", "content": "weather in Rome?"},
              {"role": "assistant", "content": None, "tool_calls": [
                  {"id": calls[0]["id"], "type": "function",
                   "function": {"name": "get_weather", "arguments": calls[0]["function"]["arguments"]}}]},
              {"role": "tool", "tool_call_id": calls[0]["id"], "content": "sunny"}])
assert answered.choices[0].message.content == "Sunny via chat.", answered
report["chat_chunks"] = len(chunks)

# 11. A server's response_format: the Responses API's own item, valid for the SDK.
searched = validated(client.responses.create(
    model=MODEL, input="search cats", tools=[{"type": "mcp", "server_label": "fy",
                                              "require_approval": "never"}]))
assert types(searched) == ["mcp_list_tools", "web_search_call", "message"], types(searched)
assert searched["output"][1]["status"] == "completed", searched["output"][1]

print(json.dumps(report))
