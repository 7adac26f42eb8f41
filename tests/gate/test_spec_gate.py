"""`mock-server gate spec`: the labelled corpus of spec changes (tests/gate/mutations.py) judged as labelled, an
identical spec passes with nothing listed, and with the journal of a client's calls as traffic the lines name the
recorded calls each change breaks (and only a broken call fails the gate)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from mock_server import cli
from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from mock_server.spec.resources import data_path
from tests.default_scenario import PENDING_EVENT_PATH
from tests.gate.mutations import BREAKING, CORPUS, NOT_BREAKING, Mutation
from tests.pact_flow import run_flow
from tests.whole_answer_client import WholeAnswerTestClient

CHANGE_LINE = re.compile(r"^(breaking|not breaking): (.+) at (/\S*)$")


def gate(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    status = cli.main(["gate", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def versions(tmp_path: Path, mutation: Mutation, documents: tuple[Any, Any] | None = None) -> tuple[Path, Path]:
    """The mutation's old and new documents written (`documents`: made already by `mutation.versions()`)."""
    old, new = documents or mutation.versions()
    paths = tmp_path / "old.json", tmp_path / "new.json"
    for path, document in zip(paths, (old, new), strict=True):
        path.write_text(json.dumps(document), encoding="utf-8")
    return paths


def resolves(document: Any, pointer: str) -> bool:
    node = document
    for part in pointer.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(key)] if key.isdigit() and int(key) < len(node) else None
        elif isinstance(node, dict) and key in node:
            node = node[key]
        else:
            return False
    return True


def test_the_corpus_is_labelled_and_large_enough() -> None:
    assert len(CORPUS) >= 30
    assert len({m.name for m in CORPUS}) == len(CORPUS)
    assert len(BREAKING) >= 15 and len(NOT_BREAKING) >= 15


def test_an_identical_spec_passes_with_nothing_listed(capsys) -> None:
    spec = data_path("openapi.yaml")
    status, out, err = gate(capsys, "spec", "--old", spec, "--new", spec)
    assert (status, err) == (0, "")
    assert out == f"gate spec: {spec} -> {spec}: no changes\n"


@pytest.mark.parametrize("mutation", CORPUS, ids=lambda m: m.name)
def test_every_mutation_is_judged_as_labelled_with_a_pointer_each(capsys, tmp_path: Path, mutation: Mutation) -> None:
    old, new = mutation.versions()  # each a deep copy of the spec: made once
    old_path, new_path = versions(tmp_path, mutation, (old, new))
    status, out, err = gate(capsys, "spec", "--old", old_path, "--new", new_path)
    assert err == ""
    assert status == (1 if mutation.breaking else 0), out
    changes = [m.groups() for line in out.splitlines() if (m := CHANGE_LINE.match(line))]
    if mutation.breaking:
        assert changes, out
    assert any(kind == "breaking" for kind, _, _ in changes) == mutation.breaking
    for _, what, pointer in changes:
        assert resolves(new, pointer) or resolves(old, pointer), (what, pointer)


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory, specs: Specs) -> Path:
    """The journal of a client's flow through the seven operations, as GET /__mock/requests exports it."""
    with WholeAnswerTestClient(create_app(Settings(), specs)) as client:
        run_flow(client)
        exported = client.get("/__mock/requests").json()
    path = tmp_path_factory.mktemp("traffic") / "journal.json"
    path.write_text(json.dumps(exported), encoding="utf-8")
    return path


def named_calls(out: str, change: str) -> list[str]:
    """The recorded calls listed under the breaking change whose line contains `change`."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("breaking: ") and change in line)
    calls = []
    for line in lines[start + 2 :]:
        if not line.startswith("    "):
            break
        calls.append(line.strip())
    return calls


@pytest.mark.parametrize(
    ("name", "change", "calls"),
    [
        (
            "operation-removed",
            "POST /limits/account: operation removed",
            ["3 POST /limits/account -> 201", "4 POST /limits/account -> 409"],
        ),
        (
            "request-field-renamed",
            "registration_date renamed to registered_at",
            ["3 POST /limits/account -> 201", "4 POST /limits/account -> 409"],
        ),
        (
            "response-field-removed",
            "response field paid_at removed",
            [
                f"0 GET {PENDING_EVENT_PATH} -> 200",
                "1 GET /event_conciliation/extraordinary_event/5c9f6e3a-0d2b-4a8c-9e7f-2b4d6f8a0c66 -> 200",
            ],
        ),
        (
            "status-removed",
            "status 404 removed",
            ["2 GET /event_conciliation/extraordinary_event/00000000-0000-4000-8000-000000000000 -> 404"],
        ),
        (
            "request-max-items-lowered",
            "POST /limits/account: request limit.pix.withdraw: maxItems 2 -> 1",
            ["3 POST /limits/account -> 201", "4 POST /limits/account -> 409"],
        ),
    ],
)
def test_with_a_journal_the_lines_name_the_recorded_calls_that_break(
    capsys, tmp_path: Path, journal: Path, name: str, change: str, calls: list[str]
) -> None:
    mutation = next(m for m in CORPUS if m.name == name)
    old_path, new_path = versions(tmp_path, mutation)
    status, out, err = gate(capsys, "spec", "--old", old_path, "--new", new_path, "--traffic", journal)
    assert (status, err) == (1, ""), out
    assert named_calls(out, change) == [f"{journal}#/requests/{call}" for call in calls]
    assert "refused by the new spec" not in out  # every refusal is explained by a change listed


@pytest.mark.parametrize("name", ["header-parameter-renamed", "request-max-length-lowered", "query-parameter-renamed"])
def test_a_breaking_change_no_recorded_call_meets_passes_with_traffic(
    capsys, tmp_path: Path, journal: Path, name: str
) -> None:
    """The flow sends no X-Mock-Session, no account id over 16 characters, no ?fields=: nothing it did breaks."""
    mutation = next(m for m in CORPUS if m.name == name)
    old_path, new_path = versions(tmp_path, mutation)
    status, out, _ = gate(capsys, "spec", "--old", old_path, "--new", new_path, "--traffic", journal)
    assert status == 0, out
    assert "  breaks no recorded call" in out
    assert out.splitlines()[-1] == "traffic: 13 recorded calls replayed: 0 broken"


def test_a_pact_is_traffic_too(capsys, tmp_path: Path) -> None:
    from tests.gate.consumer_pact import CHECKED_IN

    mutation = next(m for m in CORPUS if m.name == "request-field-renamed")
    old_path, new_path = versions(tmp_path, mutation)
    status, out, _ = gate(capsys, "spec", "--old", old_path, "--new", new_path, "--traffic", CHECKED_IN["v4"])
    assert status == 1
    assert named_calls(out, "renamed") == [
        f'{CHECKED_IN["v4"]} "a registration of a new account" POST /limits/account -> 201'
    ]


def test_the_junit_report_fails_only_the_changes_that_break_calls(capsys, tmp_path: Path, journal: Path) -> None:
    mutation = next(m for m in CORPUS if m.name == "request-max-length-lowered")
    old_path, new_path = versions(tmp_path, mutation)
    report = tmp_path / "spec.xml"
    gate(capsys, "spec", "--old", old_path, "--new", new_path, "--junit", report)
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("2", "1")
    gate(capsys, "spec", "--old", old_path, "--new", new_path, "--traffic", journal, "--junit", report)
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("2", "0")


@pytest.mark.parametrize(
    ("traffic", "message"),
    [
        ('{"requests": [{"nothing": 1}]}', "is neither a pact (interactions) nor a journal"),
        ("just: text", "is neither a pact (interactions) nor a journal"),
        ("[[[[", "is not valid JSON"),
        ("a: [b", "is neither JSON nor YAML (line 2, column 1)"),
    ],
)
def test_unreadable_traffic_exits_2(capsys, tmp_path: Path, traffic: str, message: str) -> None:
    spec = data_path("openapi.yaml")
    path = tmp_path / "traffic.json"
    path.write_text(traffic, encoding="utf-8")
    status, out, err = gate(capsys, "spec", "--old", spec, "--new", spec, "--traffic", path)
    assert (status, out) == (2, "")
    assert message in err and err.count("\n") == 1


def test_a_spec_with_a_ref_to_nothing_exits_2(capsys, tmp_path: Path) -> None:
    spec = data_path("openapi.yaml")
    broken = tmp_path / "new.yaml"
    broken.write_text(
        spec.read_text(encoding="utf-8").replace("#/components/schemas/Money", "#/components/schemas/Cash")
    )
    status, _, err = gate(capsys, "spec", "--old", spec, "--new", broken)
    assert status == 2
    assert str(broken) in err


def test_old_and_new_are_required(capsys) -> None:
    status, _, err = gate(capsys, "spec", "--old", data_path("openapi.yaml"))
    assert status == 2
    assert "--new" in err
