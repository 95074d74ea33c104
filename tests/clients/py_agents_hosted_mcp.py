"""The OpenAI Agents SDK's HostedMCPTool against toolgate's /v1/responses.

Usage: py_agents_hosted_mcp.py BASE_URL

An agent with the fixture server `fx` as a hosted MCP tool whose calls need approval; its
`on_approval_request` callback approves a call and denies another. The Runner keeps the
conversation itself (no previous_response_id): each request sends the earlier output items
back. Prints a JSON report: the final outputs, the calls asked about, the items of each run.
"""

import asyncio
import json
import sys

from agents import Agent, HostedMCPTool, OpenAIResponsesModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

set_tracing_disabled(True)
client = AsyncOpenAI(base_url=sys.argv[1], api_key="unused-by-toolgate", max_retries=0)
asked = []


def on_approval(request):
    arguments = json.loads(request.data.arguments)
    asked.append({"name": request.data.name, "arguments": arguments})
    if arguments.get("text") == "deny me":
        return {"approve": False, "reason": "not this one"}
    return {"approve": True}


agent = Agent(
    name="assistant",
    instructions="Use the tools.",
    model=OpenAIResponsesModel(model="gpt-4.1-mini", openai_client=client),
    tools=[HostedMCPTool(
        tool_config={"type": "mcp", "server_label": "fx", "require_approval": "always"},
        on_approval_request=on_approval,
    )],
)


async def main():
    report = {"runs": []}
    for prompt in ["echo, approved", "echo, denied"]:
        result = await Runner.run(agent, prompt)
        report["runs"].append({
            "final": result.final_output,
            "items": [item.type for item in result.new_items],
        })
    report["asked"] = asked
    print(json.dumps(report))


asyncio.run(main())
