#!/usr/bin/env python3
"""An MCP server on the official Python SDK (``mcp`` 2.x, ``MCPServer``), for toolgate's trace
tests: the upstream that shows which W3C trace context reached it.

One tool, ``trace_context`` (no arguments), answers with one text block holding JSON:
  {"traceparent": str|null, "tracestate": str|null,      the request's params._meta, as received
   "sdk_parent": {"trace_id": hex, "span_id": hex}|null} the parent the SDK's own OpenTelemetry
                                                         middleware continued from that _meta
The SDK wraps every request in a SERVER span whose parent it extracts from ``_meta``; without an
OpenTelemetry SDK installed that span records nothing but carries the parent's context, which is
what ``sdk_parent`` reports.

Usage (run it with the test venv's interpreter, ``$TOOLGATE_TEST_PYTHON``):
  py_trace_server.py stdio
  py_trace_server.py http     streamable HTTP on a free port of 127.0.0.1; prints
                              "listening http://127.0.0.1:PORT/mcp" on stdout once it accepts
"""

from __future__ import annotations

import json
import socket
import sys

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from opentelemetry import trace

server = MCPServer("py-trace-server")


@server.tool()
async def trace_context(ctx: Context) -> str:
    """The W3C trace context this request arrived with."""
    meta = dict(ctx.request_context.meta or {})
    parent = trace.get_current_span().get_span_context()
    sdk_parent = None
    if parent.is_valid:
        sdk_parent = {"trace_id": format(parent.trace_id, "032x"), "span_id": format(parent.span_id, "016x")}
    return json.dumps(
        {"traceparent": meta.get("traceparent"), "tracestate": meta.get("tracestate"), "sdk_parent": sdk_parent}
    )


def serve_http() -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    # Listening already: a client that connects before uvicorn accepts waits in the backlog.
    listener.listen(64)
    port = listener.getsockname()[1]
    print(f"listening http://127.0.0.1:{port}/mcp", flush=True)
    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) == 2 else ""
    if mode == "stdio":
        server.run("stdio")
    elif mode == "http":
        serve_http()
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
