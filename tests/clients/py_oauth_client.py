#!/usr/bin/env python3
"""An MCP client on the official Python SDK (``mcp`` 2.x) that authenticates with the SDK's own
OAuth support, for toolgate's tests (crates/toolgate/tests/it/sdk_oauth.rs).

Connects to one streamable HTTP endpoint, lists the tools, calls one, and prints ONE JSON
document on stdout. Run it with the test venv's interpreter ($TOOLGATE_TEST_PYTHON).

Usage:
  py_oauth_client.py --flow code [--expired-token JWT] URL
  py_oauth_client.py --flow client-credentials --client-id ID --client-secret SECRET --issuer ISS URL
  py_oauth_client.py --flow key --key KEY URL
Options: --tool NAME (default fx__echo), --text TEXT (its "text" argument, default "hi"),
--timeout SECS (default 60).

Flows:
  code                 `OAuthClientProvider`: the SDK gets a 401, reads the protected resource
                       metadata it names, the authorization server's metadata, registers a client
                       (DCR), and runs the authorization code flow with PKCE and `resource`. The
                       redirect handler follows the authorization URL with plain GETs (keeping
                       cookies) up to the redirect URI, as a browser through an authorization
                       server that logs in and consents by itself would, and the callback handler
                       hands the SDK the code, state and iss found there. Then the access token is
                       made to expire (the SDK's expiry time set in the past, and the token swapped
                       for --expired-token when given, an expired one for the same audience), and
                       the tool is called again: the SDK refreshes before sending.
  client-credentials   `ClientCredentialsOAuthProvider` (mcp.client.auth.extensions): discovery from
                       the 401, then the client_credentials grant with `resource`.
  key                  an API key as `Authorization: Bearer KEY`, no OAuth.

Output: {client, sdkVersion, flow, connected, protocolVersion, tools: [names], result,
authorization?: {resource, scope, code_challenge_method}, refreshed?: {result, tokenChanged,
tokensSaved}, requests: [{method, url, status, grantType?, resource?}], error?}.
`authorization` is what the authorization URL asked for; `requests` is every HTTP request the
SDK sent, in order, with the grant and `resource` of token requests. Exit status 0 when the
tool was called, 1 otherwise.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from importlib import metadata
from typing import Any
from urllib.parse import parse_qs, urljoin, urlparse

REDIRECT_URI = "http://127.0.0.1:9/callback"
MAX_REDIRECTS = 10


def usage_error(message: str) -> None:
    sys.stderr.write(f"py_oauth_client.py: {message}\n\n{__doc__}")
    sys.exit(2)


def parse_argv(argv: list[str]) -> dict[str, Any]:
    opts: dict[str, Any] = {"tool": "fx__echo", "text": "hi", "timeout": 60.0}
    names = {
        "--flow": "flow",
        "--client-id": "client_id",
        "--client-secret": "client_secret",
        "--issuer": "issuer",
        "--key": "key",
        "--expired-token": "expired_token",
        "--tool": "tool",
        "--text": "text",
        "--timeout": "timeout",
    }
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in names:
            if i + 1 >= len(argv):
                usage_error(f"{arg} needs a value")
            opts[names[arg]] = argv[i + 1]
            i += 2
        elif arg.startswith("-"):
            usage_error(f"unknown option {arg}")
        else:
            if "url" in opts:
                usage_error("one URL only")
            opts["url"] = arg
            i += 1
    opts["timeout"] = float(opts["timeout"])
    if "url" not in opts:
        usage_error("missing URL")
    flow = opts.get("flow")
    needed = {"code": [], "client-credentials": ["client_id", "client_secret", "issuer"], "key": ["key"]}
    if flow not in needed:
        usage_error("--flow must be code, client-credentials or key")
    for name in needed[flow]:
        if name not in opts:
            usage_error(f"--flow {flow} needs --{name.replace('_', '-')}")
    return opts


def dump(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


class MemoryStorage:
    """The SDK's `TokenStorage`, in memory; counts the tokens it is given."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None
        self.saved = 0

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens
        self.saved += 1

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


class Browser:
    """Follows an authorization URL with plain GETs, keeping cookies, until the redirect URI."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.landed: str | None = None
        self.asked: dict[str, str] = {}

    async def redirect_handler(self, authorization_url: str) -> None:
        import httpx2

        query = parse_qs(urlparse(authorization_url).query)
        self.asked = {k: query[k][0] for k in ("resource", "scope", "code_challenge_method") if k in query}
        url = authorization_url
        async with httpx2.AsyncClient(follow_redirects=False, timeout=self.timeout) as http:
            for _ in range(MAX_REDIRECTS):
                if url.startswith(REDIRECT_URI):
                    self.landed = url
                    return
                response = await http.get(url)
                location = response.headers.get("location")
                if location is None:
                    raise RuntimeError(f"GET {url}: {response.status_code} without a redirect: {response.text}")
                url = urljoin(url, location)
        raise RuntimeError(f"more than {MAX_REDIRECTS} redirects from {authorization_url}")

    async def callback_handler(self) -> Any:
        from mcp.client.auth import AuthorizationCodeResult

        if self.landed is None:
            raise RuntimeError("the redirect handler did not reach the redirect URI")
        query = parse_qs(urlparse(self.landed).query)
        if "error" in query:
            raise RuntimeError(f"the authorization server refused: {self.landed}")
        first = lambda name: query.get(name, [None])[0]  # noqa: E731
        return AuthorizationCodeResult(code=first("code"), state=first("state"), iss=first("iss"))


async def main(opts: dict[str, Any]) -> int:
    import httpx2
    import mcp
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPDeprecationWarning

    warnings.simplefilter("ignore", MCPDeprecationWarning)
    out: dict[str, Any] = {
        "client": "python-sdk",
        "sdkVersion": metadata.version("mcp"),
        "flow": opts["flow"],
        "connected": False,
    }
    requests: list[dict[str, Any]] = []
    out["requests"] = requests

    async def log_response(response: Any) -> None:
        request = response.request
        entry: dict[str, Any] = {"method": request.method, "url": str(request.url), "status": response.status_code}
        if request.method == "POST" and b"grant_type=" in (request.content or b""):
            form = parse_qs(request.content.decode())
            entry["grantType"] = form["grant_type"][0]
            entry["resource"] = form.get("resource", [None])[0]
        requests.append(entry)

    storage = MemoryStorage()
    provider = None
    headers: dict[str, str] = {}
    url = opts["url"]
    if opts["flow"] == "code":
        from mcp.client.auth import OAuthClientProvider
        from mcp.shared.auth import OAuthClientMetadata

        browser = Browser(opts["timeout"])
        provider = OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(
                client_name="toolgate-py-oauth-client",
                redirect_uris=[REDIRECT_URI],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
            ),
            storage=storage,
            redirect_handler=browser.redirect_handler,
            callback_handler=browser.callback_handler,
        )
    elif opts["flow"] == "client-credentials":
        from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

        provider = ClientCredentialsOAuthProvider(
            server_url=url,
            storage=storage,
            client_id=opts["client_id"],
            client_secret=opts["client_secret"],
            issuer=opts["issuer"],
        )
    else:
        headers["Authorization"] = f"Bearer {opts['key']}"

    http = httpx2.AsyncClient(
        auth=provider,
        headers=headers,
        timeout=httpx2.Timeout(opts["timeout"]),
        event_hooks={"response": [log_response]},
    )
    arguments = {"text": opts["text"]}
    try:
        async with http:
            client = mcp.Client(
                streamable_http_client(url, http_client=http),
                mode="legacy",
                cache=None,
                read_timeout_seconds=opts["timeout"],
                client_info=mcp.Implementation(name="toolgate-py-oauth-client", version="0.1.0"),
            )
            async with client:
                out["connected"] = True
                out["protocolVersion"] = client.protocol_version
                tools = await client.list_tools()
                out["tools"] = [tool.name for tool in tools.tools]
                out["result"] = dump(await client.call_tool(opts["tool"], arguments))
                if opts["flow"] == "code":
                    out["authorization"] = browser.asked
                    # The access token expires: the SDK must refresh it before the next request.
                    before = storage.tokens.access_token
                    saved = storage.saved
                    if "expired_token" in opts:
                        provider.context.current_tokens = provider.context.current_tokens.model_copy(
                            update={"access_token": opts["expired_token"]}
                        )
                    provider.context.token_expiry_time = time.time() - 1
                    result = await client.call_tool(opts["tool"], arguments)
                    out["refreshed"] = {
                        "result": dump(result),
                        "tokenChanged": storage.tokens.access_token not in (before, opts.get("expired_token")),
                        "tokensSaved": storage.saved - saved,
                    }
    except Exception as e:  # noqa: BLE001 - every failure becomes data
        out["error"] = f"{type(e).__name__}: {e}"
        for inner in getattr(e, "exceptions", []):
            out["error"] += f"; {type(inner).__name__}: {inner}"
    sys.stdout.write(json.dumps(out) + "\n")
    return 0 if "result" in out and "error" not in out else 1


if __name__ == "__main__":
    try:
        import anyio
        import mcp  # noqa: F401
    except ImportError:
        sys.stderr.write("py_oauth_client.py: the 'mcp' package is missing; run scripts/install-test-deps\n")
        sys.exit(2)
    sys.exit(anyio.run(main, parse_argv(sys.argv[1:])))
