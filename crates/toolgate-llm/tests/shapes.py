"""Checks the golden files of toolgate-llm's result formats against the providers' own SDK types.

Usage: python shapes.py SNAPSHOT...

Each snapshot (src/format/snapshots/toolgate_llm__format__tests__<format>.snap) holds one JSON
object of rendered results by case name. Every value is validated with the pydantic types of the
official `openai`, `anthropic` and `google-genai` packages, strictly: a key the SDK type does not
know fails (models that allow extra keys are walked for extras; typed dicts are compared with
what pydantic kept). Prints one line per case and exits 1 if any case fails.
"""

import json
import pathlib
import sys

import pydantic


def snapshot_json(path):
    """The JSON body of an insta snapshot (after its `---` header)."""
    text = pathlib.Path(path).read_text()
    _, _, body = text.split("---\n", 2)
    return json.loads(body)


def extras(model, where="$"):
    """Where a parsed openai model (extra = allow) holds keys its type does not declare."""
    found = []
    if isinstance(model, pydantic.BaseModel):
        for key in model.model_extra or {}:
            found.append(f"{where}.{key}")
        for name in type(model).model_fields:
            found += extras(getattr(model, name), f"{where}.{name}")
    elif isinstance(model, list):
        for i, item in enumerate(model):
            found += extras(item, f"{where}[{i}]")
    return found


def openai_model(model_type):
    def check(value):
        parsed = model_type.model_validate(value)
        unknown = extras(parsed)
        if unknown:
            raise ValueError(f"keys unknown to {model_type.__name__}: {unknown}")

    return check


def materialized(value):
    """A validated typed dict with its lazily validated iterables run through."""
    if isinstance(value, dict):
        return {key: materialized(item) for key, item in value.items()}
    if isinstance(value, (str, bytes)):
        return value
    if hasattr(value, "__iter__"):
        return [materialized(item) for item in value]
    return value


def typed_dict(dict_type):
    adapter = pydantic.TypeAdapter(dict_type)

    def check(value):
        kept = materialized(adapter.validate_python(value))
        if kept != value:
            raise ValueError(
                f"{dict_type.__name__} kept {json.dumps(kept)[:400]} of {json.dumps(value)[:400]}"
            )

    return check


def gemini_part(value):
    from google.genai import types

    types.Part.model_validate_json(json.dumps(value))


def validators():
    from anthropic.types import ToolResultBlockParam
    from openai.types.chat import ChatCompletionToolMessageParam
    from openai.types.responses import (
        ResponseCodeInterpreterToolCall,
        ResponseFileSearchToolCall,
        ResponseFunctionWebSearch,
    )
    from openai.types.responses.response_input_item import FunctionCallOutput
    from openai.types.responses.response_output_item import McpCall

    return {
        "openai_chat": typed_dict(ChatCompletionToolMessageParam),
        "function_call_output": openai_model(FunctionCallOutput),
        "mcp_call": openai_model(McpCall),
        "web_search_call": openai_model(ResponseFunctionWebSearch),
        "file_search_call": openai_model(ResponseFileSearchToolCall),
        "code_interpreter_call": openai_model(ResponseCodeInterpreterToolCall),
        "anthropic": typed_dict(ToolResultBlockParam),
        "gemini": gemini_part,
    }


def main(paths):
    checks = validators()
    failures = 0
    checked = 0
    for path in paths:
        name = pathlib.Path(path).name
        fmt = name.removeprefix("toolgate_llm__format__tests__").split(".snap")[0]
        check = checks.get(fmt)
        if check is None:
            print(f"FAIL {name}: no validator for format {fmt!r}")
            failures += 1
            continue
        for case, value in snapshot_json(path).items():
            checked += 1
            try:
                check(value)
                print(f"ok   {fmt}/{case}")
            except Exception as error:  # noqa: BLE001 - every failure is reported
                failures += 1
                lines = str(error).splitlines()
                shown = "\n     ".join(lines[:12] + (["..."] if len(lines) > 12 else []))
                print(f"FAIL {fmt}/{case}: {shown}")
    print(f"{checked} cases checked, {failures} failed")
    return 1 if failures or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
