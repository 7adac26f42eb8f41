"""A scripted agent: the journey docs/mcp.md shows, made of tool calls through the official MCP client.

`python -m tests.mcp.agent` runs it against a server of this process and writes its output into docs/mcp.md;
tests/mcp/test_http.py runs it again and fails when the page says otherwise.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from mock_server.app import create_app
from mock_server.settings import Settings
from tests.default_scenario import PENDING_EVENT
from tests.threaded_server import threaded_server

if TYPE_CHECKING:
    from mcp import Client


def mcp_client(target: Any, **options: Any) -> Client:
    """The SDK's `mcp.Client`, its ~0.9 s of imports made by the first test that needs it: at collection, every
    xdist worker paid them for the tests one of them runs."""
    from mcp import Client

    return Client(target, **options)


DOCS = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
BEGIN, END = "<!-- journey: written by python -m tests.mcp.agent -->", "<!-- /journey -->"
START = datetime(2026, 11, 21, 10, 0, tzinfo=timezone(timedelta(hours=-3)))
ACCOUNT = "0002-000042"
WINDOWS = [{"start_time": "06:00:00-03:00", "amount": 500000}, {"start_time": "20:00:00-03:00", "amount": 100000}]
RAISE = [{"start_time": "06:00:00-03:00", "amount": 800000}, {"start_time": "20:00:00-03:00", "amount": 100000}]
TWO_DAYS = 2 * 24 * 3600


def journey_settings() -> Settings:
    """The server of the journey: every session's clock frozen at START (`mock-server --clock ...`)."""
    return Settings(clock=START)


@dataclass
class Step:
    tool: str
    arguments: dict[str, Any]
    status: int | None
    body: Any


async def call(client: Client, steps: list[Step], tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, arguments)
    structured = result.structured_content
    assert isinstance(structured, dict), result
    steps.append(Step(tool, arguments, structured["status"], structured["body"]))
    return structured["body"]


async def journey(client: Client, account: str = ACCOUNT) -> list[Step]:
    """Register an account, propose a raise, move the clock past the notification period, pay the default
    scenario's pending event, read the limits; then the journal of what was done. Every tool is in the default
    list (issue 42: this flow in at most 8 calls)."""
    steps: list[Step] = []
    await call(client, steps, "mockReset", {"body": {"seed": 1}})  # ids the same on every run
    registration = {
        "account_id": account,
        "registration_date": "2026-11-20T09:00:00-03:00",
        "limit": {"pix": {"withdraw": WINDOWS, "transaction_natural_person": WINDOWS}},
    }
    await call(client, steps, "registerAccountLimit", {"body": registration})
    proposal = {"pix": {"transaction_natural_person": RAISE}}
    await call(client, steps, "createLimitUpdateRequest", {"account_id": account, "body": proposal})
    await call(client, steps, "mockAdvanceClock", {"body": {"seconds": TWO_DAYS}})
    await call(client, steps, "mockPayEvent", {"extraordinary_event_conciliation_key": PENDING_EVENT})
    await call(client, steps, "mockGetAccount", {"account_id": account})
    await call(client, steps, "mockListRequests", {})
    return steps


def render(steps: list[Step]) -> str:
    """The journey as docs/mcp.md shows it: each call, then its status and answer (the journal summed up)."""
    lines = []
    for step in steps:
        lines.append(f"> {step.tool} {json.dumps(step.arguments)}")
        body = step.body
        if step.tool == "mockListRequests":
            body = [f"{r['method']} {r['path']} -> {r['status']}" for r in body["requests"]]
        elif step.tool == "mockPayEvent" and step.status == 200:
            body = {k: body[k] for k in ("extraordinary_event_conciliation_key", "status", "total_paid_amount")}
        lines.append(f"< {step.status} {json.dumps(body)}")
    return "\n".join(lines)


def run_journey() -> list[Step]:
    app = create_app(journey_settings())

    async def main(port: int) -> list[Step]:
        async with mcp_client(f"http://127.0.0.1:{port}/__mock/mcp") as client:
            return await journey(client)

    with threaded_server(app) as port:
        return anyio.run(main, port)


def documented() -> str:
    """The journey's output as docs/mcp.md shows it."""
    found = re.search(re.escape(BEGIN) + r"\n```text\n(.*?)\n```\n" + re.escape(END), DOCS.read_text(), re.DOTALL)
    assert found, f"{DOCS} has no journey block"
    return found.group(1)


def write() -> None:
    text = DOCS.read_text()
    block = f"{BEGIN}\n```text\n{render(run_journey())}\n```\n{END}"
    text = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: block, text, flags=re.DOTALL)
    DOCS.write_text(text)


if __name__ == "__main__":
    write()
    sys.exit(0)
