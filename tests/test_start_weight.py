"""What a server's start leaves for later: the modules of features no call has asked for yet are imported on their
first call (issue 34: start to the first 200 under 0.5 s). Speed itself is `make bench`'s; this holds the shape."""

from __future__ import annotations

import json
import subprocess
import sys

# Imported by the first call that needs them: the Pact export and its provider states, the probes' client (the
# CLI's healthcheck/wait/pact commands) and the MCP SDK.
LATER = ("mock_server.admin.pact", "mock_server.admin.provider_states", "mock_server.probe", "mcp")


def loaded_after(code: str) -> dict[str, object]:
    script = (
        "import json, sys\n"
        f"{code}\n"
        f"print(json.dumps({{'loaded': sorted(m for m in {LATER!r} if m in sys.modules), 'bundled': bundled}}))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_started_app_has_imported_none_of_them_nor_bundled_the_admin_spec() -> None:
    code = (
        "import mock_server.cli\nfrom mock_server.app import create_app\napp = create_app()\n"
        "bundled = app.state.server.served._admin is not None"
    )
    assert loaded_after(code) == {"loaded": [], "bundled": False}


def test_their_first_call_imports_them() -> None:
    code = (
        "from starlette.testclient import TestClient\nfrom mock_server.app import create_app\n"
        "client = TestClient(create_app(), headers={'X-Mock-Admin': '1'})\n"
        "assert client.get('/__mock/pact', params={'consumer': 'c', 'provider': 'p'}).status_code == 200\n"
        "assert client.post('/__mock/pact/states', json={'state': 'nothing'}).status_code in (200, 400, 409)\n"
        "assert client.get('/__mock/openapi.yaml').status_code == 200\n"
        "import contextlib\nfrom mock_server import cli\n"
        "with contextlib.suppress(SystemExit):\n    cli.main(['healthcheck', '--help'])\n"
        "bundled = client.app.state.server.served._admin is not None"
    )
    assert loaded_after(code) == {"loaded": list(LATER[:3]), "bundled": True}
