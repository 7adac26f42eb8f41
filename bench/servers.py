"""What is measured: the three endpoints, and the servers that answer them (the mock, the bare baseline, the anchors).

The bare baseline (bench/bare_app.py) serves the mock's answers as fixed bytes on the server the mock runs
on (`mock_server.server`); Prism and WireMock, with `--anchors`, are installed with npm under
bench/.tools/.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench import bare_app
from bench.harness import HOST, PYTHON, ROOT, TOOLS, WORK, ServerSpec, log

EVENT_KEY = "9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11"  # a pending event of the default scenario
ACCOUNT = "0001-123456"  # the default scenario's account with every mode and a recipient list
LOOKUP_PATH = f"/event_conciliation/extraordinary_event/{EVENT_KEY}"
LIMIT_PATH = f"/limits/account/{ACCOUNT}/limit_update_request"
RECIPIENT_PATH = f"/limits/account/{ACCOUNT}/recipient_list/recipient"
LIMIT_BODY = (
    '{"pix":{"withdraw":[{"start_time":"06:00:00-03:00","amount":400000},'
    '{"start_time":"20:00:00-03:00","amount":200000}],"change":[{"start_time":"06:00:00-03:00","amount":400000}],'
    '"transaction_natural_person":[{"start_time":"06:00:00-03:00","amount":1200000},'
    '{"start_time":"20:00:00-03:00","amount":100000}]}}'
)


@dataclass(frozen=True)
class Endpoint:
    key: str  # short name, as bench/profile.py's --endpoint takes it
    name: str
    method: str
    path: str
    script: str  # under bench/wrk/
    status: int  # what a correct answer is
    sample_body: str | None = None  # for the one-shot check before the load
    new_cpfs: bool = False  # the script takes a base for the CPFs it adds (each run needs its own)


ENDPOINTS = (
    Endpoint("lookup", "event lookup", "GET", LOOKUP_PATH, "lookup.lua", 200),
    Endpoint("limit", "limit change", "POST", LIMIT_PATH, "limit_change.lua", 201, LIMIT_BODY),
    Endpoint(
        "recipient",
        "recipient add",
        "POST",
        RECIPIENT_PATH,
        "recipient_add.lua",
        201,
        '{"document_number":"529.982.247-25"}',
        new_cpfs=True,
    ),
)
ANCHOR_LABELS = ("Prism", "WireMock")


def mock_spec(label: str, *options: str, tree: Path = ROOT, note: str = "") -> ServerSpec:
    """`python -m mock_server` run from `tree`, so that checkout's package is the one measured."""
    argv = (PYTHON, "-m", "mock_server", "--host", HOST, "--port", "{port}", *options)
    return ServerSpec(label, argv, note=note, cwd=tree)


BARE = ServerSpec(
    "bare Starlette",
    (PYTHON, "-m", "bench.bare_app", "--host", HOST, "--port", "{port}"),
    note="the same server (`mock_server.server`), fixed bytes",
)


def prism_js() -> Path:
    return TOOLS / "node_modules/@stoplight/prism-cli/dist/index.js"


def wiremock_jar() -> Path | None:
    return next((TOOLS / "node_modules/wiremock/build").glob("*.jar"), None)


def ensure_anchor_tools() -> None:
    if prism_js().exists() and wiremock_jar() is not None:
        return
    for tool in ("node", "npm", "java"):
        if not shutil.which(tool):
            raise SystemExit(f"bench: --anchors needs {tool} on the PATH")
    log(f"installing @stoplight/prism-cli and wiremock into {TOOLS}")
    TOOLS.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["npm", "install", "--prefix", str(TOOLS), "--no-audit", "--no-fund", "@stoplight/prism-cli", "wiremock"],
        check=True,
        timeout=900,
    )


def prism_spec() -> ServerSpec:
    return ServerSpec(
        "Prism",
        ("node", str(prism_js()), "mock", str(ROOT / "openapi.yaml"), "-h", HOST, "-p", "{port}"),
        ready_path=LOOKUP_PATH,
        note="`prism mock openapi.yaml` (validates requests, answers the spec's examples)",
        start_timeout=120,
    )


def write_wiremock_stubs() -> Path:
    """Stubs equivalent to the bare app: same paths, same JSON bytes; the POSTs need a JSON body with the right key."""
    root = WORK / "wiremock"
    mappings = root / "mappings"
    shutil.rmtree(root, ignore_errors=True)
    mappings.mkdir(parents=True)
    (root / "__files").mkdir()
    json_header = {"Content-Type": "application/json"}
    stubs = {
        "lookup": {
            "request": {"method": "GET", "urlPathPattern": "/event_conciliation/extraordinary_event/[0-9a-fA-F-]{36}"},
            "response": {"status": 200, "body": bare_app.EVENT.decode(), "headers": json_header},
        },
        "limit_change": {
            "request": {
                "method": "POST",
                "urlPathPattern": "/limits/account/[^/]+/limit_update_request",
                "headers": {"Content-Type": {"contains": "application/json"}},
                "bodyPatterns": [{"matchesJsonPath": "$.pix"}],
            },
            "response": {"status": 201, "body": bare_app.LIMIT_CHANGE.decode(), "headers": json_header},
        },
        "recipient_add": {
            "request": {
                "method": "POST",
                "urlPathPattern": "/limits/account/[^/]+/recipient_list/recipient",
                "headers": {"Content-Type": {"contains": "application/json"}},
                "bodyPatterns": [{"matchesJsonPath": "$.document_number"}],
            },
            "response": {"status": 201, "body": bare_app.RECIPIENT.decode(), "headers": json_header},
        },
        "health": {
            "request": {"method": "GET", "url": "/__mock/health"},
            "response": {"status": 200, "body": bare_app.HEALTH.decode(), "headers": json_header},
        },
    }
    for name, stub in stubs.items():
        (mappings / f"{name}.json").write_text(json.dumps(stub, indent=2))
    return root


def wiremock_spec(stubs: Path) -> ServerSpec:
    jar = wiremock_jar()
    if jar is None:
        raise SystemExit(f"bench: no WireMock jar under {TOOLS}")
    return ServerSpec(
        "WireMock",
        (
            "java",
            "-jar",
            str(jar),
            "--bind-address",
            HOST,
            "--port",
            "{port}",
            "--root-dir",
            str(stubs),
            "--disable-banner",
            "--max-request-journal-entries",
            "1000",
        ),
        note="standalone jar from npm `wiremock`, static stubs, journal capped at 1000 like the mock's",
        start_timeout=120,
    )
