"""verify-provider --baseline / --write-baseline: a provider with two planted defects adopts the gate with a
baseline holding both (exit 0, "2 known"); a third defect fails the run naming only it; a defect fixed is reported
fixed; the baseline is byte-stable from run to run; the JUnit report skips the known ones with their reason
(five verify-provider runs in all)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.types import ASGIApp

from mock_server import cli
from tests.planted_defects import DEFECTS, mock_app, serve

BY_NAME = {defect.name: defect for defect in DEFECTS}
# Each shows in one check: getExtraordinaryEvent's unknown key, registerAccountLimit's second registration.
KNOWN = ("unknown-key-answers-another-event", "duplicate-account-wrong-code")
THIRD = "notification-never-awaited"  # createLimitUpdateRequest: shows in three checks


def provider(*names: str) -> ASGIApp:
    app: ASGIApp = mock_app()
    for name in names:
        app = BY_NAME[name].wrap(app)  # type: ignore[arg-type]  # a defect wraps any ASGI app
    return app


def verify(capsys: pytest.CaptureFixture[str], url: str, *args: str | Path) -> tuple[int, str, str]:
    status = cli.main(["verify-provider", "--target", url, "--quiet", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def listed(out: str, kind: str) -> list[str]:
    return [m[1] for line in out.splitlines() if (m := re.match(rf"^{kind}: +(.+?)(?: \(.*\))?$", line))]


@pytest.fixture(scope="module")
def two_defects() -> Iterator[str]:
    with serve(provider(*KNOWN)) as url:
        yield url


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory, two_defects: str) -> Path:
    """The baseline of the two defects, written once (a run id of its own each run: fresh accounts)."""
    path = tmp_path_factory.mktemp("baseline") / "baseline.json"
    status = cli.main(["verify-provider", "--target", two_defects, "--quiet", "--write-baseline", str(path)])
    assert status == 1  # writing a baseline reports the run as it is
    return path


@pytest.mark.e2e  # real providers (in threads), verify-provider runs against them: a new feature's slow test
def test_the_baseline_is_sorted_and_byte_stable(capsys, tmp_path: Path, two_defects: str, baseline: Path) -> None:
    again = tmp_path / "again.json"
    verify(capsys, two_defects, "--write-baseline", again)
    assert again.read_bytes() == baseline.read_bytes()
    entries = json.loads(baseline.read_text(encoding="utf-8"))["divergences"]
    assert [e["check"] for e in entries] == [
        "getExtraordinaryEvent: event-unknown 1/1: look up a key no event has (EVC100011)",
        "registerAccountLimit: register-twice 2/2: register the same account_id again",
    ]
    assert entries[1]["reason"] == '/code: expected "account_already_registered", got "conflict"'


@pytest.mark.e2e  # real providers (in threads), verify-provider runs against them: a new feature's slow test
def test_a_baseline_holding_both_defects_exits_0_says_2_known_and_skips_them_in_junit(
    capsys, tmp_path: Path, two_defects: str, baseline: Path
) -> None:
    report = tmp_path / "report.xml"
    status, out, err = verify(capsys, two_defects, "--baseline", baseline, "--report", report)
    assert (status, err) == (0, ""), out
    assert f"baseline {baseline}: 2 known, 0 new, 0 fixed" in out
    assert len(listed(out, "known")) == 2
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0"
    skipped = {
        case.get("name"): element.get("message")
        for case in suite.iter("testcase")
        if (element := case.find("skipped")) is not None
    }
    assert skipped["register-twice 2/2: register the same account_id again"] == (
        'known divergence (baseline): /code: expected "account_already_registered", got "conflict"'
    )
    assert len(skipped) == 2


@pytest.mark.e2e  # real providers (in threads), verify-provider runs against them: a new feature's slow test
def test_a_third_defect_fails_the_run_naming_only_it(capsys, baseline: Path) -> None:
    with serve(provider(*KNOWN, THIRD)) as url:
        status, out, _ = verify(capsys, url, "--baseline", baseline)
    assert status == 1
    new = listed(out, "new")
    assert new and all(check.startswith("createLimitUpdateRequest: ") for check in new), new
    assert f"baseline {baseline}: 2 known, {len(new)} new, 0 fixed" in out


@pytest.mark.e2e  # real providers (in threads), verify-provider runs against them: a new feature's slow test
def test_a_fixed_defect_is_reported_fixed(capsys, baseline: Path) -> None:
    with serve(provider(KNOWN[0])) as url:
        status, out, _ = verify(capsys, url, "--baseline", baseline)
    assert status == 0, out
    assert listed(out, "fixed") == ["registerAccountLimit: register-twice 2/2: register the same account_id again"]
    assert f"baseline {baseline}: 1 known, 0 new, 1 fixed" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot be read"),
        ("[]", "is not a baseline"),
        ("{", "is not JSON"),
        ('{"divergences": [{}]}', "is not a baseline"),
    ],
)
def test_an_unusable_baseline_exits_2_before_any_call(
    capsys, tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "baseline.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    status, out, err = verify(capsys, "http://127.0.0.1:9", "--baseline", path)
    assert (status, out) == (2, "")
    assert message in err and str(path) in err
