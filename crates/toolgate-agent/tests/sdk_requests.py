"""Checks request bodies against the request types of the providers' official Python SDKs.

Usage: python sdk_requests.py FILE...

Each FILE is one request body as sent, in a folder named after its API: `chat` (OpenAI Chat
Completions: openai's CompletionCreateParams), `responses` (OpenAI Responses: openai's
ResponseCreateParams) or `anthropic` (Anthropic Messages: anthropic's MessageCreateParams);
the Streaming type when the body says `"stream": true`, else the NonStreaming one.

The types are TypedDicts, which pydantic validates leniently: unknown keys are dropped and
some values coerced. So the check is strict by comparison: the body must validate, and what
pydantic kept (lazily validated lists run through) must be the body itself. A key the SDK does
not know, at any depth, or a value of another type, fails, and the first difference is named.
The only keys let through are the two extensions `extensions` names, each line saying where.

Prints one line per body and a summary; exits 1 if any body fails.
"""

import json
import pathlib
import sys

import pydantic
from anthropic.types import message_create_params as anthropic_params
from openai.types.chat import completion_create_params as chat_params
from openai.types.responses import response_create_params as responses_params

# Each API's module of request types, and the name its two types start with.
APIS = {
    "chat": (chat_params, "CompletionCreateParams"),
    "responses": (responses_params, "ResponseCreateParams"),
    "anthropic": (anthropic_params, "MessageCreateParams"),
}


def extensions(api, body):
    """Takes out of `body` the fields toolgate sends on purpose beyond the SDK's types; where
    each was, as paths. They are:

    - Chat: `reasoning_content` on an assistant message, DeepSeek's reasoning, which it wants
      back within a tool-use turn (OpenAI's own endpoint streams no reasoning, so it gets none);
    - Anthropic: `temperature`, sent only when the person sets one. The SDK has no sampling
      parameters since 1.0 (its users pass them in `extra_body`); the API at
      `anthropic-version: 2023-06-01` still takes them, for the models that sample.
    """
    found = []
    if api == "chat":
        for i, message in enumerate(body.get("messages") or []):
            if message.get("role") == "assistant" and isinstance(
                message.get("reasoning_content"), str
            ):
                del message["reasoning_content"]
                found.append(f"$.messages[{i}].reasoning_content")
    if api == "anthropic" and isinstance(body.get("temperature"), (int, float)):
        del body["temperature"]
        found.append("$.temperature")
    return found


def materialized(value):
    """A validated value with its lazily validated iterables run through."""
    if isinstance(value, dict):
        return {key: materialized(item) for key, item in value.items()}
    if isinstance(value, (str, bytes)):
        return value
    if hasattr(value, "__iter__"):
        return [materialized(item) for item in value]
    return value


def difference(given, kept, where="$"):
    """Where `kept` (what pydantic made of `given`) first differs from it, in words."""
    if isinstance(given, dict) and isinstance(kept, dict):
        for key in given:
            if key not in kept:
                return f"{where}.{key}: a key the SDK type does not know"
            found = difference(given[key], kept[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(given, list) and isinstance(kept, list) and len(given) == len(kept):
        for i, (a, b) in enumerate(zip(given, kept)):
            found = difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (given, kept))
    if (type(given) is not type(kept) and not numbers) or given != kept:
        return f"{where}: {json.dumps(given)[:80]} was read as {json.dumps(kept)[:80]}"
    return None


def check(path):
    """Why the body at `path` is not valid for its API's type (None if it is), and the
    extensions it used."""
    api = path.parent.name
    if api not in APIS:
        return f"no API named {api!r} (the folder names it: chat, responses, anthropic)", []
    body = json.loads(path.read_text())
    extended = extensions(api, body)
    module, base = APIS[api]
    type_name = base + ("Streaming" if body.get("stream") is True else "NonStreaming")
    # The adapter must outlive the lazy iterables it returns: they use its definitions.
    checker = pydantic.TypeAdapter(getattr(module, type_name))
    try:
        kept = materialized(checker.validate_python(body))
    except pydantic.ValidationError as error:
        lines = str(error).splitlines()
        shown = "\n     ".join(lines[:12] + (["..."] if len(lines) > 12 else []))
        return f"{type_name}: {shown}", extended
    found = difference(body, kept)
    return (f"{type_name}: {found}" if found else None), extended


def main(paths):
    failures = 0
    for path in map(pathlib.Path, paths):
        why, extended = check(path)
        name = f"{path.parent.name}/{path.name}"
        if why:
            failures += 1
            print(f"FAIL {name}: {why}")
        elif extended:
            print(f"ok   {name} (extensions: {', '.join(extended)})")
        else:
            print(f"ok   {name}")
    print(f"{len(paths)} bodies checked, {failures} failed")
    return 1 if failures or not paths else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
