"""What a server's start leaves for later: the modules of features no call has asked for yet are imported on their
first call (issue 34: start to the first 200 under 0.5 s). Speed itself is `make bench`'s; this holds the shape.

Each check is a fresh interpreter in a child process that starts the app or the CLI (~0.6 s each): `make test-e2e`
runs them."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from typing import cast

import pytest

from mock_server.spec.resources import data_path
from tests.default_scenario import PENDING_EVENT_PATH

# Imported by the first call that needs them: the Pact export and its provider states, the probes' client (the
# CLI's healthcheck/wait/pact commands) and the MCP SDK.
LATER = ("mock_server.admin.pact", "mock_server.admin.provider_states", "mock_server.probe", "mcp")
# Not imported by an app that create_app built (as the pytest plugin builds it) and that has answered a lookup:
# what shadow mode, record mode and the state file need (the outbound client, the recording's end, persistence).
NOT_FOR_A_LOOKUP = (
    "mock_server.admin.recording",
    "mock_server.http.outbound",
    "mock_server.http.record",
    "mock_server.http.shadow",
    "mock_server.scenarios.state_file",
    "mock_server.state.persistence",
)
# Telemetry's libraries (issue 44): OpenTelemetry only when a collector is named, prometheus_client at the first
# scrape of GET /__mock/metrics. A lookup with neither loads neither: tracing off costs nothing.
TELEMETRY = ("opentelemetry", "prometheus_client")
LOOKUP = PENDING_EVENT_PATH  # fixtures/default.yaml's
pytestmark = pytest.mark.e2e


def loaded_after(code: str, watched: tuple[str, ...] = LATER, env: dict[str, str] | None = None) -> dict[str, object]:
    script = (
        "import json, sys\n"
        f"{code}\n"
        f"print(json.dumps({{'loaded': sorted(m for m in {watched!r} if m in sys.modules), 'bundled': bundled}}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True, env=env
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@functools.cache
def loaded_after_the_cli_s_start() -> tuple[set[str], object]:
    """What the CLI's modules and create_app() imported (of LATER and NOT_FOR_A_LOOKUP), and whether the admin spec
    was bundled: one child process for the two tests that ask (each ~1 s, most of it the imports they watch)."""
    code = (
        "import mock_server.cli\nfrom mock_server.app import create_app\napp = create_app()\n"
        "bundled = app.state.server.served._admin is not None"
    )
    found = loaded_after(code, (*LATER, *NOT_FOR_A_LOOKUP))
    return set(cast(list[str], found["loaded"])), found["bundled"]


def test_a_started_app_has_imported_none_of_them_nor_bundled_the_admin_spec() -> None:
    loaded, bundled = loaded_after_the_cli_s_start()
    assert loaded & set(LATER) == set()
    assert bundled is False


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


def test_an_app_that_answered_a_lookup_has_not_imported_what_other_modes_need() -> None:
    code = (
        "from starlette.testclient import TestClient\nfrom mock_server.app import create_app\n"
        "from mock_server.server import Server\nfrom mock_server.settings import Settings\n"
        "client = TestClient(create_app(Settings(port=0)))\n"
        f"assert client.get({LOOKUP!r}).status_code == 200\n"
        "bundled = None"
    )
    watched = (*NOT_FOR_A_LOOKUP, "mock_server.admin.verify", *TELEMETRY)  # nor verify's rules
    untraced = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MOCK_SERVER_OTEL"))}
    assert loaded_after(code, watched, untraced) == {"loaded": [], "bundled": None}


def test_a_second_start_on_the_shipped_scenarios_reads_no_yaml() -> None:
    """The specs' parse and the shipped scenarios' judged parse come from their caches (spec/openapi.py,
    scenarios/validated.py), written by the first start as byte code is: PyYAML and rapidyaml are not imported."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    code = "from mock_server.app import create_app\napp = create_app()\nbundled = None"
    loaded_after(code, env=env)  # the first start: writes the caches where it can
    fixtures = data_path("fixtures")
    if not all((fixtures / "__pycache__" / f"{p.name}.validated.json").is_file() for p in fixtures.glob("*.yaml")):
        pytest.skip(f"{fixtures} is not writable: every start reads the shipped scenarios")
    big_files = ("mock_server.scenarios.stream", "mock_server.scenarios.batch_packing")  # their lean path
    assert loaded_after(code, ("yaml", "ryml", *big_files), env) == {"loaded": [], "bundled": None}


def test_the_cli_s_start_without_those_modes_has_not_imported_them_either() -> None:
    loaded, _ = loaded_after_the_cli_s_start()
    assert loaded & set(NOT_FOR_A_LOOKUP) == set()
