#!/usr/bin/env python3
"""Scriptable MCP client on the official Python SDK (``mcp`` 2.x), for toolgate's tests.

Connects to one MCP server, runs a JSON script of operations and prints ONE JSON
document on stdout. Run it with the test venv's interpreter
(``tests/deps/python/venv/bin/python``, i.e. ``$TOOLGATE_TEST_PYTHON``).

Usage:
  py_client.py [OPTIONS] stdio CMD [ARGS...]
  py_client.py [OPTIONS] http URL          (streamable HTTP, e.g. http://127.0.0.1:PORT/mcp)
  py_client.py [OPTIONS] sse URL           (legacy HTTP+SSE, e.g. http://127.0.0.1:PORT/sse)

Options (must come before the transport word):
  --script JSON       JSON array of steps (or one step object); '@FILE' reads a file,
                      '-' reads stdin. Default: [{"op":"info"},{"op":"list_tools"}]
  --mode MODE         legacy | auto | 2026-07-28   (default: legacy)
  --timeout SECS      per-step and connect timeout (default: 30)
  --header 'K: V'     extra HTTP header (http/sse; repeatable)
  --env K=V           extra env var for the stdio child (repeatable); the SDK
                      otherwise passes only HOME LOGNAME PATH SHELL TERM USER
  --inherit-env       pass this process's whole environment to the stdio child
  --cwd DIR           working directory of the stdio child
  --answer-input      declare sampling, elicitation and roots, and answer each with a
                      fixed reply: sampling 'the model says "<prompt>"' (model test-model),
                      elicitation accept {"username":"ada","email":"ada@example.com"},
                      roots [file:///home/ada/project "project"]; each question asked is
                      listed in the output's "asked"
  --pretty            indent the JSON output

Steps (every step may carry an "id" that is echoed back):
  {"op":"info"}                                   negotiated version, serverInfo, capabilities
  {"op":"list_tools"} / list_resources / list_resource_templates / list_prompts
        all pages unless "cursor" is given (then exactly one page); adds "names"
  {"op":"call_tool","name":N,"arguments":{...}}   result: content, isError, structuredContent
                                                 ("meta": {...} sends it as the request's _meta)
        with "progress":true the call asks for progress, listed in the step's "progress"
  {"op":"read_resource","uri":U}                  result: contents
  {"op":"get_prompt","name":N,"arguments":{...}}  result: messages
  {"op":"complete","ref":{"type":"ref/prompt","name":N},"argument":{"name":A,"value":V}}
  {"op":"ping"}  {"op":"set_logging_level","level":L}
  {"op":"subscribe_resource","uri":U}  {"op":"unsubscribe_resource","uri":U}
  {"op":"sleep","ms":N}                           wait (lets notifications arrive)

Output: {"client":"python-sdk","sdkVersion":..,"mode":..,"transport":..,"connected":true,
         "protocolVersion":..,"serverInfo":{..},"steps":[..],"notifications":[..]}
  each step: {"op":..,"ok":true,"result":{wire JSON},"ms":..[,"names":[..]]}
          or {"op":..,"ok":false,"error":{"code":int|null,"message":str,"data":..,"kind":str}}
Exit status: 0 when connected (even if steps failed), 1 on connection failure
(a JSON document with "connected":false is still printed), 2 on usage errors.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from contextlib import AsyncExitStack
from importlib import metadata
from typing import Any

USAGE = __doc__.split("Steps (")[0]
KNOWN_OPS = {
    "info",
    "list_tools",
    "list_resources",
    "list_resource_templates",
    "list_prompts",
    "call_tool",
    "read_resource",
    "get_prompt",
    "complete",
    "ping",
    "set_logging_level",
    "subscribe_resource",
    "unsubscribe_resource",
    "sleep",
}


def usage_error(msg: str) -> None:
    sys.stderr.write(f"py_client.py: {msg}\n\n{USAGE}")
    sys.exit(2)


def parse_argv(argv: list[str]) -> dict[str, Any]:
    opts: dict[str, Any] = {
        "script": '[{"op":"info"},{"op":"list_tools"}]',
        "mode": "legacy",
        "timeout": 30.0,
        "headers": {},
        "env": {},
        "inherit_env": False,
        "cwd": None,
        "answer_input": False,
        "pretty": False,
    }
    i = 0

    def value() -> str:
        nonlocal i
        if i + 1 >= len(argv):
            usage_error(f"{argv[i]} needs a value")
        i += 1
        return argv[i]

    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            sys.stdout.write(__doc__)
            sys.exit(0)
        elif a == "--script":
            opts["script"] = value()
        elif a == "--mode":
            opts["mode"] = value()
        elif a == "--timeout":
            try:
                opts["timeout"] = float(value())
            except ValueError:
                usage_error("--timeout needs a number of seconds")
        elif a == "--header":
            k, sep, v = value().partition(":")
            if not sep:
                usage_error("--header needs 'Name: value'")
            opts["headers"][k.strip()] = v.strip()
        elif a == "--env":
            k, sep, v = value().partition("=")
            if not sep:
                usage_error("--env needs K=V")
            opts["env"][k] = v
        elif a == "--inherit-env":
            opts["inherit_env"] = True
        elif a == "--cwd":
            opts["cwd"] = value()
        elif a == "--answer-input":
            opts["answer_input"] = True
        elif a == "--pretty":
            opts["pretty"] = True
        elif a in ("stdio", "http", "sse"):
            rest = argv[i + 1 :]
            if not rest:
                usage_error(f"{a} needs {'a command' if a == 'stdio' else 'a URL'}")
            if a != "stdio" and len(rest) != 1:
                usage_error(f"{a} takes exactly one URL")
            opts["transport"] = a
            opts["target"] = rest
            break
        else:
            usage_error(f"unknown argument {a!r}")
        i += 1
    if "transport" not in opts:
        usage_error("missing transport (stdio CMD... | http URL | sse URL)")

    raw = opts["script"]
    try:
        if raw == "-":
            raw = sys.stdin.read()
        elif raw.startswith("@"):
            with open(raw[1:], encoding="utf-8") as f:
                raw = f.read()
        script = json.loads(raw)
    except (OSError, ValueError) as e:
        usage_error(f"bad --script: {e}")
    if isinstance(script, dict):
        script = [script]
    if not isinstance(script, list) or not all(isinstance(s, dict) and "op" in s for s in script):
        usage_error('--script must be a JSON array of objects with an "op" key')
    unknown = sorted({s["op"] for s in script} - KNOWN_OPS)
    if unknown:
        usage_error(f"unknown op(s) {unknown}; known: {sorted(KNOWN_OPS)}")
    opts["script"] = script
    return opts


def dump(model: Any) -> Any:
    """Wire-form JSON of a pydantic model: camelCase keys, only the fields the peer sent."""
    if hasattr(model, "model_dump"):
        return model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return model


def error_json(e: BaseException) -> dict[str, Any]:
    from mcp import MCPError

    if isinstance(e, MCPError):
        # -32001 is the SDK's local request timeout, not a server error.
        kind = "timeout" if e.code == -32001 else "jsonrpc"
        out: dict[str, Any] = {"code": e.code, "message": e.message, "kind": kind}
        if e.data is not None:
            out["data"] = e.data
        return out
    if isinstance(e, TimeoutError):
        return {"code": None, "message": str(e) or "timed out", "kind": "timeout"}
    if isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        return error_json(e.exceptions[0])
    return {"code": None, "message": f"{type(e).__name__}: {e}", "kind": type(e).__name__}


LIST_OPS = {
    # op: (client method, result field, name key)
    "list_tools": ("list_tools", "tools", "name"),
    "list_resources": ("list_resources", "resources", "uri"),
    "list_resource_templates": ("list_resource_templates", "resourceTemplates", "uriTemplate"),
    "list_prompts": ("list_prompts", "prompts", "name"),
}


async def run_step(client: Any, step: dict[str, Any]) -> dict[str, Any]:
    import anyio
    import mcp.types as t

    op = step["op"]
    if op == "info":
        return {
            "protocolVersion": client.protocol_version,
            "serverInfo": dump(client.server_info),
            "capabilities": dump(client.server_capabilities),
            "instructions": client.instructions,
        }
    if op in LIST_OPS:
        method, field, key = LIST_OPS[op]
        fn = getattr(client, method)
        if "cursor" in step:
            page = dump(await fn(cursor=step["cursor"]))
            return {"result": page, "names": [x.get(key) for x in page.get(field, [])]}
        items: list[Any] = []
        cursor = None
        pages = 0
        while True:
            page = dump(await fn(cursor=cursor))
            pages += 1
            items.extend(page.get(field, []))
            cursor = page.get("nextCursor")
            if not cursor or pages >= 1000:
                break
        return {"result": {field: items, "pages": pages}, "names": [x.get(key) for x in items]}
    if op == "call_tool":
        if step.get("meta") is not None:
            res = await client.call_tool(step["name"], step.get("arguments"), meta=step["meta"])
            return {"result": dump(res)}
        if not step.get("progress"):
            return {"result": dump(await client.call_tool(step["name"], step.get("arguments")))}
        # With a progress token, so the server may send progress before its answer.
        progress: list[Any] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append({"progress": value, "total": total, "message": message})

        res = await client.call_tool(step["name"], step.get("arguments"), progress_callback=on_progress)
        return {"result": dump(res), "progress": progress}
    if op == "read_resource":
        return {"result": dump(await client.read_resource(step["uri"]))}
    if op == "get_prompt":
        return {"result": dump(await client.get_prompt(step["name"], step.get("arguments")))}
    if op == "complete":
        ref_json = step["ref"]
        ref_cls = t.PromptReference if ref_json.get("type") == "ref/prompt" else t.ResourceTemplateReference
        ctx = step.get("context", {}).get("arguments") if isinstance(step.get("context"), dict) else None
        res = await client.complete(ref_cls.model_validate(ref_json), step["argument"], ctx)
        return {"result": dump(res)}
    if op == "ping":
        return {"result": dump(await client.send_ping())}
    if op == "set_logging_level":
        return {"result": dump(await client.set_logging_level(step["level"]))}
    if op == "subscribe_resource":
        return {"result": dump(await client.subscribe_resource(step["uri"]))}
    if op == "unsubscribe_resource":
        return {"result": dump(await client.unsubscribe_resource(step["uri"]))}
    if op == "sleep":
        await anyio.sleep(float(step.get("ms", 0)) / 1000)
        return {"result": {}}
    raise ValueError(f"unknown op {op!r}")


async def main(opts: dict[str, Any]) -> int:
    import anyio
    import mcp
    from mcp.shared.exceptions import MCPDeprecationWarning

    warnings.simplefilter("ignore", MCPDeprecationWarning)

    out: dict[str, Any] = {
        "client": "python-sdk",
        "sdkVersion": metadata.version("mcp"),
        "mode": opts["mode"],
        "transport": opts["transport"],
        "connected": False,
    }
    notifications: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            notifications.append({"transportError": f"{type(message).__name__}: {message}"})
        else:
            notifications.append(dump(message))

    async def no_log(_params: Any) -> None:
        return None

    # --answer-input: fixed answers to the server's questions, each question noted.
    asked: list[str] = []

    async def answer_sampling(_context: Any, params: Any) -> Any:
        prompt = " ".join(getattr(m.content, "text", "") for m in params.messages)
        asked.append(f"sampling: {prompt}")
        return mcp.types.CreateMessageResult(
            role="assistant",
            content=mcp.types.TextContent(type="text", text=f"the model says {json.dumps(prompt)}"),
            model="test-model",
        )

    async def answer_elicitation(_context: Any, params: Any) -> Any:
        asked.append(f"elicitation: {params.message}")
        return mcp.types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})

    async def answer_roots(_context: Any) -> Any:
        asked.append("roots")
        return mcp.types.ListRootsResult(roots=[mcp.types.Root(uri="file:///home/ada/project", name="project")])

    answers: dict[str, Any] = {}
    if opts["answer_input"]:
        out["asked"] = asked
        answers = {
            "sampling_callback": answer_sampling,
            "elicitation_callback": answer_elicitation,
            "list_roots_callback": answer_roots,
        }

    timeout = opts["timeout"]
    target: Any
    http_client = None
    if opts["transport"] == "stdio":
        env = dict(os.environ) if opts["inherit_env"] else {}
        env.update(opts["env"])
        cmd = opts["target"]
        target = mcp.StdioServerParameters(command=cmd[0], args=cmd[1:], env=env or None, cwd=opts["cwd"])
    elif opts["transport"] == "http":
        url = opts["target"][0]
        if opts["headers"]:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            http_client = create_mcp_http_client(headers=opts["headers"])
            target = streamable_http_client(url, http_client=http_client)
        else:
            target = url
    else:
        from mcp.client.sse import sse_client

        target = sse_client(opts["target"][0], headers=opts["headers"] or None, timeout=timeout)

    try:
        client = mcp.Client(
            target,
            mode=opts["mode"],
            cache=None,
            read_timeout_seconds=timeout,
            message_handler=on_message,
            logging_callback=no_log,
            client_info=mcp.Implementation(name="toolgate-py-client", version="0.1.0"),
            **answers,
        )
    except ValueError as e:
        usage_error(str(e))

    steps: list[dict[str, Any]] = []
    connected = False
    try:
        async with AsyncExitStack() as stack:
            # The connect (initialize / server/discover) is bounded by read_timeout_seconds.
            if http_client is not None:
                await stack.enter_async_context(http_client)
            await stack.enter_async_context(client)
            connected = True
            out["connected"] = True
            out["protocolVersion"] = client.protocol_version
            out["serverInfo"] = dump(client.server_info)
            out["steps"] = steps
            for step in opts["script"]:
                steps.append(await timed_step(client, step, timeout))
            # Snapshot before closing: errors raised by the shutdown itself are not reported.
            out["notifications"] = list(notifications)
    except Exception as e:  # noqa: BLE001 - every failure becomes data
        if not connected:
            out["error"] = error_json(e)
            emit(out, opts)
            return 1
        out["closeError"] = error_json(e)
    out["steps"] = steps
    out.setdefault("notifications", list(notifications))
    emit(out, opts)
    return 0


async def timed_step(client: Any, step: dict[str, Any], timeout: float) -> dict[str, Any]:
    import anyio

    rec: dict[str, Any] = {"op": step["op"]}
    if "id" in step:
        rec["id"] = step["id"]
    t0 = time.perf_counter()
    try:
        with anyio.fail_after(timeout + 2):  # the SDK read timeout (-32001) fires first
            body = await run_step(client, step)
        rec["ok"] = True
        rec.update(body if step["op"] != "info" else {"result": body})
    except Exception as e:  # noqa: BLE001 - every failure becomes data
        rec["ok"] = False
        rec["error"] = error_json(e)
    rec["ms"] = round((time.perf_counter() - t0) * 1000, 3)
    return rec


def emit(out: dict[str, Any], opts: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(out, indent=2 if opts["pretty"] else None) + "\n")
    sys.stdout.flush()


def ensure_sdk() -> None:
    """Re-exec under tests/deps/python/venv when started by an interpreter without the SDK."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        here = os.path.dirname(os.path.abspath(__file__))
        venv_python = os.path.normpath(os.path.join(here, "..", "deps", "python", "venv", "bin", "python"))
        if os.path.exists(venv_python) and not os.environ.get("_TOOLGATE_PY_CLIENT_REEXEC"):
            os.environ["_TOOLGATE_PY_CLIENT_REEXEC"] = "1"
            os.execv(venv_python, [venv_python, os.path.abspath(__file__), *sys.argv[1:]])
        sys.stderr.write("py_client.py: the 'mcp' package is missing; run scripts/install-test-deps\n")
        sys.exit(2)
    os.environ.pop("_TOOLGATE_PY_CLIENT_REEXEC", None)


if __name__ == "__main__":
    ensure_sdk()
    import anyio

    options = parse_argv(sys.argv[1:])
    sys.exit(anyio.run(main, options))
