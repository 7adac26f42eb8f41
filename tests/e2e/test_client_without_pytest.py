"""`mock_server.client` as a script or a unittest suite uses it (issue 32 item 4): the project installed with pip
into a new venv that holds no pytest, the server started there by `mock-server --port 0`, and a script of that
venv driving two sessions through `PixMock` (made and deleted explicitly, every admin helper once), then a
unittest case doing what docs/from-tests.md shows.

Needs the package index (pip resolves the runtime dependencies, from its cache when warm): about 30-60 s.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.default_scenario import PENDING_EVENT
from tests.live_server import EXIT_TIMEOUT, START_TIMEOUT, read_line, stop_process

pytestmark = pytest.mark.e2e

REPOSITORY = Path(__file__).resolve().parents[2]
TIMEOUT = 600.0  # pip over the network; its own timeouts are shorter
READY = re.compile(r"^mock-server ready on (?P<url>\S+) ")
PENDING = PENDING_EVENT


def _env() -> dict[str, str]:
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSAFEPATH")
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("MOCK_SERVER_")}


@dataclass
class Venv:
    root: Path
    elsewhere: Path  # the working directory: outside the repository, so that only the installed package is found

    def bin(self, name: str) -> str:
        return str(self.root / "bin" / name)

    def python(self, code: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.bin("python"), "-c", code],
            cwd=self.elsewhere,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A new venv with the project installed by pip (no extra: the runtime alone), at the constraints' pins."""
    elsewhere = tmp_path_factory.mktemp("nopytest")
    root = elsewhere / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=TIMEOUT, env=_env())
    installed = subprocess.run(
        [
            str(root / "bin" / "python"),
            *("-m", "pip", "install", "--quiet", "--disable-pip-version-check"),
            *("-c", str(REPOSITORY / "constraints.txt"), str(REPOSITORY)),
        ],
        cwd=elsewhere,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    return Venv(root, elsewhere)


@pytest.fixture(scope="module")
def server_url(venv: Venv) -> Iterator[str]:
    """`mock-server --port 0` of the venv, up (its ready line read)."""
    proc = subprocess.Popen(
        [venv.bin("mock-server"), "--port", "0", "--seed", "7"],
        cwd=venv.elsewhere,
        env={**_env(), "PYTHONUNBUFFERED": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        line = read_line(proc, time.monotonic() + START_TIMEOUT) or ""
        ready = READY.match(line)
        assert ready, f"no ready line: {line!r}"
        yield ready["url"]
    finally:
        stop_process(proc)


def test_the_venv_has_no_pytest(venv: Venv) -> None:
    found = venv.python("import importlib.util as u; print(u.find_spec('pytest'), u.find_spec('_pytest'))")
    assert found.stdout.strip() == "None None", found.stderr


SCRIPT = """
import json, sys
from mock_server.client import MockServerError, PixMock, VerificationFailed

BASE = sys.argv[1]
PENDING = "{pending}"
out = {{}}
with PixMock(BASE, "job-1") as one, PixMock(BASE, "job-2") as two:
    out["url"] = one.url
    out["created"] = one.create(scenario="default")["name"]
    two.create()
    out["paid"] = one.pay(PENDING)["status"]
    out["other"] = two.client.get("/event_conciliation/extraordinary_event/" + PENDING).json()["status"]
    out["frozen"] = one.freeze("2026-11-21T10:00:00-03:00")["now"]
    out["advanced"] = one.advance(3600)["now"]
    out["scheduled"] = two.schedule(PENDING, "cancel", after_lookups=1)["action"]
    out["after_schedule"] = two.client.get("/event_conciliation/extraordinary_event/" + PENDING).json()["status"]
    out["fault"] = one.fault("getExtraordinaryEvent", status=503)["status"]
    out["faulted"] = one.client.get("/event_conciliation/extraordinary_event/" + PENDING).status_code
    out["journal"] = [entry["status"] for entry in one.requests()]
    out["verified"] = one.verify("getExtraordinaryEvent", status=503, times=1)["matched"]
    try:
        one.verify("getExtraordinaryEvent", status=200)
    except VerificationFailed as failed:
        out["verification_failed"] = [failed.matched, len(failed.calls)]
    one.client.get("/event_conciliation/extraordinary_event/" + PENDING)  # answered: an interaction of the pact
    out["pact"] = [one.pact("script", "pix-limits")["consumer"]["name"], len(one.pact("script", "pix")["interactions"])]
    out["snapshot"] = one.snapshot("paid")["name"]
    one.reset()
    out["reset"] = one.client.get("/event_conciliation/extraordinary_event/" + PENDING).json()["status"]
    out["restored"] = one.restore("paid")["name"]
    out["after_restore"] = one.state()["events"][0]["status"] if one.state()["events"] else None
    out["loaded"] = one.load_state(one.state())
    out["cancelled"] = PixMock(BASE, "job-3").cancel(PENDING)["status"]
    out["coverage"] = "getExtraordinaryEvent" in json.dumps(one.coverage())
    try:
        one.pay("00000000-0000-4000-8000-000000000000")  # no such event
    except MockServerError as refused:
        out["refused"] = [refused.status, refused.body["code"]]
    try:
        one.create()
    except MockServerError as refused:
        out["twice"] = [refused.status, refused.body["code"]]
    out["listed"] = sorted(s["name"] for s in one.sessions()["sessions"])
    out["deleted"] = [one.delete(), two.delete(), PixMock(BASE, "job-3").delete(), one.delete()]
    out["left"] = sorted(s["name"] for s in PixMock(BASE).sessions()["sessions"])
out["pytest_loaded"] = sorted(m for m in sys.modules if m.split(".")[0] in ("pytest", "_pytest"))
print(json.dumps(out))
"""


def test_a_script_drives_sessions_through_the_client(venv: Venv, server_url: str) -> None:
    ran = subprocess.run(
        [venv.bin("python"), "-c", SCRIPT.format(pending=PENDING), server_url],
        cwd=venv.elsewhere,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=EXIT_TIMEOUT,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    out = json.loads(ran.stdout)
    assert out["url"] == f"{server_url}/__session/job-1"
    assert out["created"] == "job-1"
    assert out["paid"] == "paid"
    assert out["other"] == "pending_conciliation"  # the other session is untouched
    assert out["frozen"].startswith("2026-11-21T10:00:00")
    assert out["advanced"].startswith("2026-11-21T11:00:00")
    assert out["scheduled"] == "cancel"
    assert out["after_schedule"] == "canceled"
    assert (out["fault"], out["faulted"]) == (503, 503)
    assert out["journal"] == [503]  # job-1's public calls only: the lookup the fault answered
    assert out["verified"] == 1
    assert out["verification_failed"] == [0, 1]
    assert out["pact"] == ["script", 1]  # the answered lookup; the injected fault makes no interaction
    assert out["snapshot"] == "paid"
    assert out["reset"] == "pending_conciliation"
    assert out["restored"] == "paid"
    assert out["after_restore"] is not None
    assert out["loaded"]
    assert out["cancelled"] == "canceled"  # job-3: made by its first call
    assert out["coverage"] is True
    assert out["refused"] == [404, "event_not_found"]
    assert out["twice"] == [409, "session_already_exists"]
    assert {"job-1", "job-2", "job-3"} <= set(out["listed"])
    assert out["deleted"] == [True, True, True, False]
    assert not {"job-1", "job-2", "job-3"} & set(out["left"])
    assert out["pytest_loaded"] == []


UNITTEST = """
import sys
import unittest

from mock_server.client import PixMock

BASE = sys.argv.pop()


class LookupTest(unittest.TestCase):
    def setUp(self):
        self.mock = PixMock(BASE, session=self.id().rsplit(".", 1)[-1])
        self.mock.create()
        self.addCleanup(self.mock.delete)
        self.addCleanup(self.mock.close)

    def test_paid(self):
        self.mock.pay("{pending}")
        status = self.mock.client.get("/event_conciliation/extraordinary_event/{pending}").json()["status"]
        self.assertEqual(status, "paid")

    def test_pending(self):
        status = self.mock.client.get("/event_conciliation/extraordinary_event/{pending}").json()["status"]
        self.assertEqual(status, "pending_conciliation")


if __name__ == "__main__":
    unittest.main()
"""


def test_a_unittest_suite_gets_a_session_a_test(venv: Venv, server_url: str) -> None:
    script = venv.elsewhere / "test_lookup.py"
    script.write_text(textwrap.dedent(UNITTEST.format(pending=PENDING)), encoding="utf-8")
    ran = subprocess.run(
        [venv.bin("python"), str(script), server_url],
        cwd=venv.elsewhere,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=EXIT_TIMEOUT,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "Ran 2 tests" in ran.stderr and ran.stderr.rstrip().endswith("OK")
    listing = f"PixMock({server_url!r}).sessions()['sessions']"
    left = venv.python(f"from mock_server.client import PixMock; print(sorted(s['name'] for s in {listing}))")
    assert "test_paid" not in left.stdout and "test_pending" not in left.stdout, left.stdout + left.stderr
