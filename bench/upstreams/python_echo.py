"""An MCP server on the official Python SDK (the pinned `mcp` package: `MCPServer`, which was
`FastMCP` before mcp 2), serving two tools over streamable HTTP on 127.0.0.1: `echo`, which
answers at once, and `wait`, which answers after a number of milliseconds.

`toolgate-bench upstream` runs it as the Python-SDK upstream (Starlette on Uvicorn), with the
interpreter of tests/deps/python/venv (scripts/install-test-deps):

    python bench/upstreams/python_echo.py --port PORT

It serves http://127.0.0.1:PORT/mcp until it is terminated.
"""

import argparse

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("python-echo", log_level="WARNING")


@server.tool()
def echo(message: str) -> str:
    """Echoes the message back."""
    return f"Echo: {message}"


@server.tool()
async def wait(ms: int, ctx: Context) -> str:
    """Answers after `ms` milliseconds, with one progress notification before the answer."""
    await anyio.sleep(ms / 1000)
    await ctx.report_progress(1, 1)
    return f"waited {ms} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="port on 127.0.0.1 to serve")
    args = parser.parse_args()
    server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
