"""The one seam to the ASGI server (mock_server/server.py): nothing else imports uvicorn; on a uvicorn release the
seam does not know, the server runs uvicorn's own HTTP protocol, warns once, and still answers correctly."""

from __future__ import annotations

import ast
import json
import logging
import socket
import ssl
import threading
from pathlib import Path

import httpx
import pytest
import uvicorn

from mock_server import server as seam
from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from tests.default_scenario import PENDING_EVENT_PATH
from tests.threaded_server import SAFETY

REPOSITORY = Path(__file__).resolve().parents[1]
# Who may import uvicorn: the seam, and the protocol subclass behind its `Config(http=...)`.
SEAM = {"mock_server/server.py", "mock_server/http/connection.py"}
EVENT = PENDING_EVENT_PATH


def uvicorn_imports(path: Path) -> list[str]:
    """The uvicorn modules `path` imports, anywhere in it (a function's imports too)."""
    source = path.read_text(encoding="utf-8")
    if "uvicorn" not in source:  # an import names it in the text: no need to parse (2.4 MB of 290 files, 1.5 s)
        return []
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "uvicorn"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "uvicorn":
            found.append(node.module)
    return found


def test_only_the_seam_imports_uvicorn() -> None:
    """The package, the benchmarks and the tests reach uvicorn through mock_server/server.py (this file only fakes
    its version)."""
    imports = {
        str(path.relative_to(REPOSITORY)): uvicorn_imports(path)
        for root in ("mock_server", "bench", "tests")
        for path in (REPOSITORY / root).rglob("*.py")
        if not any(part.startswith(".") for part in path.relative_to(REPOSITORY).parts)  # bench/.tools: installed
    }
    importing = {path: modules for path, modules in imports.items() if modules}
    assert set(importing) == SEAM | {"tests/test_server_seam.py"}
    assert importing["tests/test_server_seam.py"] == ["uvicorn"]


def test_the_uvicorn_releases_the_protocol_knows() -> None:
    low, high = seam.KNOWN_UVICORN
    assert seam.stock_protocol_reason(f"{low[0]}.{low[1]}.0") is None
    assert seam.stock_protocol_reason(f"{high[0]}.{high[1]}.7") is None
    assert seam.stock_protocol_reason(uvicorn.__version__) is None  # the one installed here: the protocol's road
    for unknown in (f"{low[0]}.{low[1] - 1}.9", f"{high[0]}.{high[1] + 1}.0", "1.0.0", "dev"):
        reason = seam.stock_protocol_reason(unknown)
        assert reason is not None and f"uvicorn {unknown} is not a release" in reason


@pytest.fixture
def unknown_uvicorn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(uvicorn, "__version__", "9.1.0")
    seam._warn_once.cache_clear()


def test_on_an_unknown_uvicorn_the_server_answers_on_uvicorns_own_protocol_with_one_warning(
    unknown_uvicorn: None, specs: Specs, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mock_server")
    servers = [
        seam.Server(create_app(Settings(port=0), specs), Settings(port=0), configure_logging=False) for _ in range(2)
    ]
    warnings = [r for r in caplog.records if "uvicorn 9.1.0 is not a release" in r.getMessage()]
    assert len(warnings) == 1  # one warning, however many servers
    assert all(server._uvicorn.config.http == "httptools" for server in servers)
    url = servers[0].start(SAFETY)
    try:
        with httpx.Client(base_url=url, timeout=SAFETY) as client:
            lookup = client.get(EVENT)
            assert lookup.status_code == 200 and lookup.json()["status"] == "pending_conciliation"
            change = client.post(
                "/limits/account/0001-123456/limit_update_request",
                json={"limit": {"pix": {"transaction": [{"start_time": "06:00:00-03:00", "amount": 10}]}}},
            )
            assert change.status_code in (201, 400), change.text  # answered by the operation, in its body
            assert client.get("/limits/account/x/nothing").json()["code"] == "not_found"
            journal = client.get("/__mock/requests", headers={"X-Mock-Admin": "1"}).json()["requests"]
            assert [entry["status"] for entry in journal] == [200, change.status_code]  # a path of none: unjournaled
        # uvicorn's own protocol: no Host rule (a foreign Host is answered), no JSON 400 for broken HTTP
        with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=SAFETY) as sock:
            sock.sendall(b"GET /__mock/health HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200 ") and json.loads(answer.partition(b"\r\n\r\n")[2])["status"] == "ok"
    finally:
        servers[0].stop(wait=True)


def test_a_tls_server_on_an_unknown_uvicorn_still_serves_tls(unknown_uvicorn: None, specs: Specs, test_pki) -> None:
    from mock_server.http.tls import server_context

    context = server_context(test_pki.server_cert, test_pki.server_key)
    server = seam.Server(create_app(Settings(port=0), specs), Settings(port=0), context, configure_logging=False)
    url = server.start(SAFETY)
    try:
        assert url.startswith("https://")
        with httpx.Client(verify=ssl.create_default_context(cafile=test_pki.ca), timeout=SAFETY) as client:
            assert client.get(url + "/__mock/health").json()["status"] == "ok"
    finally:
        server.stop(wait=True)


@pytest.mark.e2e  # a fresh interpreter in a child process that builds the app and its server (~0.8 s each)
@pytest.mark.parametrize("build", ["create_app(Settings(port=0))", "Starlette()"])
def test_the_first_app_or_server_of_a_process_freezes_what_start_up_built_and_a_later_one_does_not(build: str) -> None:
    """gc.freeze() once the first app is built (create_app), or for an app made otherwise when its server starts:
    later full collections of the process do not scan it again. Run in a child process: this one (pytest's) has
    built apps already."""
    import subprocess
    import sys

    script = (
        "import gc, json\n"
        "freezes = []\nfreeze = gc.freeze\n"
        "gc.freeze = lambda: freezes.append(freeze())\n"
        "from mock_server.app import create_app\nfrom mock_server.server import Server\n"
        "from mock_server.settings import Settings\nfrom starlette.applications import Starlette\n"
        f"app = {build}\ncounts = [len(freezes)]\n"
        "for _ in range(2):\n"
        "    server = Server(app, Settings(port=0), configure_logging=False)\n"
        "    server.start(10)\n    server.stop(wait=True)\n    counts.append(len(freezes))\n"
        "tracked = any(o is app for o in gc.get_objects())\n"  # frozen: no generation the collector scans
        "print(json.dumps([counts, tracked, gc.isenabled()]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    counts, tracked, collecting = json.loads(done.stdout.strip().splitlines()[-1])
    # by create_app, else at the first server's start; never again
    assert counts == ([1, 1, 1] if build.startswith("create_app") else [0, 1, 1])
    assert not tracked
    assert collecting  # create_app paused the collector while it built, and no longer


def test_halt_ends_the_server_thread_at_once_dropping_open_connections(
    specs: Specs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pytest plugin's in-process server is halted as its run ends: a daemon thread whose uvloop still ran when
    the interpreter finalized crashed the process (SIGSEGV in uvloop's timer callback, one run in ten)."""
    errors: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    server = seam.Server(create_app(Settings(port=0), specs=specs), Settings(port=0))
    url = server.start()
    with httpx.Client(base_url=url) as client:  # a kept-alive connection open as it halts
        assert client.get("/__mock/health").status_code == 200
        server.halt()
        assert server._thread is not None and not server._thread.is_alive()
        with pytest.raises(httpx.TransportError):
            client.get("/__mock/health")
    assert errors == []  # the loop stopped before serve() completed: no "Exception in thread mock-server"
