"""Instructions a request costs on the in-process road (the ASGI app, no socket, no uvicorn), under callgrind.

The machine is shared: wall time moves with the neighbours, instructions do not. This drives the bench's exact
requests (bench/servers.py: a lookup, a limit change) through the app built by `create_app`, WARM times each
unmeasured, then COUNT times inside `functools.reduce`, the C function callgrind is told to collect in
(`--toggle-collect`): the total it reports over COUNT is one request's instructions, the event loop's share
included (the same on both sides of a comparison).

    .venv/bin/python -m bench.instructions                    # both, this checkout (valgrind on PATH)
    .venv/bin/python -m bench.instructions --tree /tmp/main   # another checkout's package, same venv

Run under valgrind by itself (`--child`): one process per endpoint, so one endpoint's warm-up is not counted in
another's.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.servers import ACCOUNT, LIMIT_BODY, LIMIT_PATH, LOOKUP_PATH

ROOT = Path(__file__).resolve().parent.parent
WARM = 1000
COUNT = 500
TOGGLE = "functools_reduce"  # the C function whose calls alone are counted
REQUESTS = {
    "lookup": ("GET", LOOKUP_PATH, b"", 200),
    "limit": ("POST", LIMIT_PATH, LIMIT_BODY.encode(), 201),
}
_TOTAL = re.compile(r"^summary:\s+(\d+)", re.MULTILINE)


def _driver(endpoint: str) -> Any:
    """A function answering the endpoint's request once through the app, on one event loop."""
    from starlette.types import Message

    from mock_server.app import create_app

    method, path, body, expected = REQUESTS[endpoint]
    app = create_app()
    loop = asyncio.new_event_loop()
    headers = [(b"host", b"127.0.0.1:8080"), (b"user-agent", b"wrk")]
    if body:
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
    }
    statuses: list[int] = []
    message: Message = {"type": "http.request", "body": body, "more_body": False}

    async def receive() -> Message:
        return message

    async def send(sent: Message) -> None:
        if sent["type"] == "http.response.start":
            statuses.append(sent["status"])

    def once(_: Any = None, __: Any = None) -> None:
        loop.run_until_complete(app(dict(scope), receive, send))

    once()
    if statuses != [expected]:
        raise SystemExit(f"{endpoint}: answered {statuses}, expected {expected} (account {ACCOUNT})")
    return once


def child(endpoint: str) -> None:
    import mock_server

    print(f"measuring {mock_server.__file__}", file=sys.stderr)
    once = _driver(endpoint)
    for _ in range(WARM):
        once()
    functools.reduce(once, range(COUNT), None)  # counted


def count(endpoint: str, tree: Path) -> float:
    """Instructions a request, measured in a child under callgrind, the package imported from `tree`."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("valgrind is missing (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "callgrind.out"
        # The script by its path, the package (and bench/servers.py's requests) from `tree`.
        env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
        subprocess.run(
            [
                valgrind,
                "--tool=callgrind",
                "-q",
                f"--toggle-collect={TOGGLE}",
                f"--callgrind-out-file={out}",
                sys.executable,
                str(Path(__file__).resolve()),
                "--child",
                endpoint,
            ],
            check=True,
            env=env,
            cwd=work,
            stdout=subprocess.DEVNULL,
            timeout=1800,
        )
        found = _TOTAL.search(out.read_text())
        if found is None:
            raise SystemExit("callgrind wrote no summary")
        return int(found.group(1)) / COUNT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose mock_server is measured")
    parser.add_argument("--child", choices=sorted(REQUESTS), help=argparse.SUPPRESS)
    parser.add_argument("endpoints", nargs="*", help="lookup, limit (default: both)")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    for endpoint in args.endpoints or sorted(REQUESTS):
        if endpoint not in REQUESTS:
            parser.error(f"no endpoint {endpoint!r}: {', '.join(REQUESTS)}")
        print(f"{endpoint}: {count(endpoint, args.tree.resolve()) / 1000:.1f}k instructions a request", flush=True)


if __name__ == "__main__":
    main()
