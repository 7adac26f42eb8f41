"""What an MCP tool call costs in process: the median time of one call, over many, on this machine.

Three figures, each over the same calls (the default scenario's pending event looked up, `getExtraordinaryEvent`,
and an account read, `mockGetAccount`), after unmeasured warm-up calls:

- `client`: the official client's `call_tool` to the server `mock-server mcp` builds, connected in process as
  the SDK connects a client to a server object (its default mode: the request dispatched to the server directly);
- `jsonrpc`: the same over the SDK's in-memory JSON-RPC connection (the session-based handshake, every message
  framed and parsed as stdio and HTTP carry them, no process or socket): the SDK's own framing, on top;
- `toolbox`: the server's side alone (mcp/server.py `Toolbox.call`): the arguments made a request, the request
  answered by the app through its whole pipeline (journal, coverage included), the result shaped.

The target (issue 35): a tool call in process, the `client` median, at most 5 ms.

    .venv/bin/python -m bench.mcp_cost                 # or: make bench-mcp
    .venv/bin/python -m bench.mcp_cost --calls 5000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import Client

from mock_server.app import create_app
from mock_server.mcp.catalog import ALL
from mock_server.mcp.inprocess import Caller
from mock_server.mcp.server import CallerContext, Toolbox, build_server
from mock_server.settings import Settings
from mock_server.state.bounds import Bounds

TARGET_MS = 5.0
SESSION = "mcp-bench"
CALLS = (
    ("getExtraordinaryEvent", {"extraordinary_event_conciliation_key": "9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11"}),
    ("mockGetAccount", {"account_id": "0001-123456"}),
)


async def _timed(call: Callable[[str, dict[str, Any]], Awaitable[Any]], calls: int, warmup: int) -> list[float]:
    """Milliseconds per call, the calls alternating over CALLS."""
    for index in range(warmup):
        await call(*CALLS[index % len(CALLS)])
    times = []
    for index in range(calls):
        name, arguments = CALLS[index % len(CALLS)]
        start = time.perf_counter()
        await call(name, arguments)
        times.append((time.perf_counter() - start) * 1000)
    return times


def _line(label: str, times: list[float]) -> str:
    ordered = sorted(times)
    p90 = ordered[int(len(ordered) * 0.9)]
    return f"{label:8} median {statistics.median(times):.3f} ms  p90 {p90:.3f} ms  ({len(times)} calls)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per figure (default %(default)s)")
    parser.add_argument("--warmup", type=int, default=200, help="unmeasured calls first (default %(default)s)")
    args = parser.parse_args(argv)
    # No journal bound to reach: every call is journaled, as any client's, without evicting the first ones.
    app = create_app(Settings(bounds=Bounds(journal_bytes=256 * 1024**2, journal_total_bytes=256 * 1024**2)))
    calling = CallerContext(SESSION, Caller(), ALL)
    toolbox = Toolbox.of(app, app.state.specs, lambda ctx: calling)
    server = build_server(toolbox)

    async def check(result: Any) -> None:
        status = result.structured_content["status"]
        assert status == 200, result.structured_content

    async def direct(name: str, arguments: dict[str, Any]) -> None:
        await check(await toolbox.call(name, arguments, calling))

    async def through(mode: Any) -> list[float]:
        async with Client(server, mode=mode) as client:

            async def call(name: str, arguments: dict[str, Any]) -> None:
                await check(await client.call_tool(name, arguments))

            return await _timed(call, args.calls, args.warmup)

    async def run() -> tuple[list[float], list[float], list[float]]:
        return await through("auto"), await through("legacy"), await _timed(direct, args.calls, args.warmup)

    client_times, jsonrpc_times, toolbox_times = anyio.run(run)
    print(_line("client", client_times))
    print(_line("jsonrpc", jsonrpc_times))
    print(_line("toolbox", toolbox_times))
    median = statistics.median(client_times)
    verdict = "met" if median <= TARGET_MS else "MISSED"
    print(f"target: a tool call's median at most {TARGET_MS} ms in process -> {verdict} ({median:.3f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
