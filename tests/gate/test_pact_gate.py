"""`mock-server gate pact`: a consumer's pact (pact-python's V3 and V4, the mock's own export, a V2 one) against the
spec; each way a pact can leave the spec is one line naming its interaction; unreadable input exits 2."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from mock_server import cli
from mock_server.gate import inputs
from tests.gate.consumer_pact import CHECKED_IN, CONSUMER, PROVIDER
from tests.pact_flow import run_flow

V4 = CHECKED_IN["v4"]


def gate(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    status = cli.main(["gate", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def pact_document(version: str = "v4") -> dict[str, Any]:
    document: dict[str, Any] = json.loads(CHECKED_IN[version].read_text(encoding="utf-8"))
    return document


def written(tmp_path: Path, document: Any, name: str = "pact.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def interaction(document: dict[str, Any], description: str) -> dict[str, Any]:
    found: dict[str, Any] = next(i for i in document["interactions"] if i["description"] == description)
    return found


def incompatible(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("incompatible: ")]


@pytest.mark.parametrize("version", ["v3", "v4"])
def test_a_pact_python_consumer_pact_passes(capsys, version: str) -> None:
    status, out, err = gate(capsys, "pact", CHECKED_IN[version])
    assert (status, err) == (0, ""), out + err
    assert out == "gate pact: 4 interactions in 1 file: 4 compatible, 0 incompatible\n"


def test_the_mocks_own_export_passes(capsys, client, tmp_path: Path) -> None:
    run_flow(client)
    exported = client.get(f"/__mock/pact?consumer={CONSUMER}&provider={PROVIDER}").json()
    status, out, err = gate(capsys, "pact", written(tmp_path, exported), V4)
    assert (status, err) == (0, ""), out + err
    assert out.endswith("17 interactions in 2 files: 17 compatible, 0 incompatible\n")


def _as_v2(document: dict[str, Any]) -> dict[str, Any]:
    """The V4 pact as a V2 file writes it: one providerState, bodies bare, rules under $.body."""
    v2: dict[str, Any] = {"consumer": document["consumer"], "provider": document["provider"], "interactions": []}
    v2["metadata"] = {"pactSpecification": {"version": "2.0.0"}}
    for item in document["interactions"]:
        request, response = item["request"], item["response"]
        entry: dict[str, Any] = {
            "description": item["description"],
            "providerState": item["providerStates"][0]["name"],
            "request": {k: v for k, v in request.items() if k != "body"},
            "response": {"status": response["status"], "headers": {"Content-Type": "application/json"}},
        }
        if "body" in request:
            entry["request"]["body"] = request["body"]["content"]
            entry["request"]["headers"] = {"Content-Type": "application/json"}
        entry["response"]["body"] = response["body"]["content"]
        rules = response.get("matchingRules", {}).get("body", {})
        entry["response"]["matchingRules"] = {"$.body" + k[1:]: r["matchers"][0] for k, r in rules.items()}
        v2["interactions"].append(entry)
    return v2


def test_a_v2_pact_is_read_too_and_its_rules_honoured(capsys, tmp_path: Path) -> None:
    v2 = _as_v2(pact_document())
    status, out, _ = gate(capsys, "pact", written(tmp_path, v2))
    assert status == 0, out
    lookup = interaction(v2, "a lookup of a paid event")
    lookup["response"]["body"]["security_key"] = "not-a-uuid"  # its own regex rule refuses it; the spec's format too
    status, out, _ = gate(capsys, "pact", written(tmp_path, v2))
    assert status == 1
    [line] = incompatible(out)
    assert '"a lookup of a paid event"' in line
    assert "breaks its own regex rule at $.security_key at /interactions/0/response/body/security_key" in line
    assert "response body security_key must be a UUID" in line


def _wrong_path(document: dict[str, Any]) -> tuple[str, str]:
    interaction(document, "a lookup of a paid event")["request"]["path"] = "/event_conciliation/events/x"
    return (
        "a lookup of a paid event",
        "/event_conciliation/events/x is no path of the spec at /interactions/0/request/path",
    )


def _undocumented_status(document: dict[str, Any]) -> tuple[str, str]:
    interaction(document, "a registration of a new account")["response"]["status"] = 200
    return (
        "a registration of a new account",
        "status 200 is not documented for registerAccountLimit (201, 400, 403, 409, 413, 415, 429, 500) "
        "at /interactions/3/response/status",
    )


def _wrong_type(document: dict[str, Any]) -> tuple[str, str]:
    body = interaction(document, "a lookup of a paid event")["response"]["body"]["content"]
    body["total_paid_amount"] = "974.50"
    return (
        "a lookup of a paid event",
        'response body total_paid_amount must be a number (got "974.50") '
        "at /interactions/0/response/body/content/total_paid_amount",
    )


def _missing_required(document: dict[str, Any]) -> tuple[str, str]:
    del interaction(document, "a registration of a new account")["request"]["body"]["content"]["registration_date"]
    return (
        "a registration of a new account",
        "request body registration_date is required at /interactions/3/request/body/content/registration_date",
    )


def _unknown_state(document: dict[str, Any]) -> tuple[str, str]:
    interaction(document, "a raise of an account's withdraw limit")["providerStates"][0]["name"] = "an account exists"
    return (
        "a raise of an account's withdraw limit",
        "the provider state 'an account exists' is not one the mock knows at /interactions/2/providerStates/0/name",
    )


@pytest.mark.parametrize(
    "defect",
    [_wrong_path, _undocumented_status, _wrong_type, _missing_required, _unknown_state],
    ids=lambda d: d.__name__,
)
def test_each_way_out_of_the_spec_is_one_line_naming_the_interaction(capsys, tmp_path: Path, defect: Any) -> None:
    document = pact_document()
    assert [i["description"] for i in document["interactions"]] == [
        "a lookup of a paid event",
        "a lookup of an unknown event",
        "a raise of an account's withdraw limit",
        "a registration of a new account",
    ]
    description, problem = defect(document)
    path = written(tmp_path, document)
    status, out, err = gate(capsys, "pact", path)
    assert (status, err) == (1, "")
    assert incompatible(out) == [f'incompatible: {path} "{description}": {problem}']
    assert out.splitlines()[-1] == "gate pact: 4 interactions in 1 file: 3 compatible, 1 incompatible"


def test_the_junit_report_has_a_testcase_per_interaction(capsys, tmp_path: Path) -> None:
    document = pact_document()
    _unknown_state(document)
    report = tmp_path / "gate.xml"
    status, _, _ = gate(capsys, "pact", written(tmp_path, document), "--junit", report)
    assert status == 1
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("4", "1")
    failed = [case.get("name") for case in suite.iter("testcase") if case.find("failure") is not None]
    assert failed == ["a raise of an account's withdraw limit"]


def test_another_spec_version_is_checked_with_spec(capsys, tmp_path: Path) -> None:
    from tests.gate.mutations import shipped

    spec = shipped()
    spec["paths"]["/limits/account"].pop("post")
    status, out, _ = gate(capsys, "pact", V4, "--spec", written(tmp_path, spec, "spec.json"))
    assert status == 1
    [line] = incompatible(out)
    assert '"a registration of a new account": POST is not an operation of /limits/account' in line


def test_message_interactions_have_no_call_to_check(capsys, tmp_path: Path) -> None:
    document = pact_document()
    document["interactions"].append({"type": "Asynchronous/Messages", "description": "an event", "contents": {}})
    status, out, _ = gate(capsys, "pact", written(tmp_path, document))
    assert status == 0, out


def _deep(depth: int) -> str:
    return '{"interactions": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot be read: No such file or directory"),
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "is not a pact (an object at the top)"),
        ('{"consumer": {}}', "is not a pact: it has no list of interactions"),
        ('{"interactions": [1]}', "interaction /interactions/0 is not an object"),
        (_deep(100), "nests lists and objects more than 64 deep"),
        (_deep(100_000), "nests lists and objects more than 64 deep"),
        (
            "a: &a [1, 1, 1, 1, 1, 1, 1, 1]\n"
            + "".join(
                f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                for p, c in zip("abcdefg", "bcdefgh", strict=True)
            ),
            "holds more than 2000000 values",
        ),
        (b"\xff\xfe", "is not UTF-8 text"),
    ],
    ids=[
        "missing",
        "not-json",
        "a-list",
        "no-interactions",
        "not-an-object",
        "deep",
        "very-deep",
        "alias-bomb",
        "not-utf8",
    ],
)
def test_an_unreadable_pact_exits_2_in_one_line(
    capsys, tmp_path: Path, content: str | bytes | None, message: str
) -> None:
    path = tmp_path / "pact.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    status, out, err = gate(capsys, "pact", path)
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(f"mock-server gate: {path}: "), err
    assert message in err


def test_a_file_over_the_size_bound_is_refused_unread(capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(inputs, "MAX_BYTES", 1024)
    document = copy.deepcopy(pact_document())
    status, _, err = gate(capsys, "pact", written(tmp_path, document))
    assert status == 2
    assert "is larger than" in err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("openapi: 2.0\n", "is not an OpenAPI 3 document"),
        (
            '{"openapi": "3.1.0", "paths": {"/x": {"get": {"responses": {"200": {"description": "x"}}}}}}',
            "is not an OpenAPI document this gate reads (no 'operationId' where needed)",
        ),
        (
            '{"openapi": "3.1.0", "paths": {"/x": {"get": {"operationId": "x", "responses": {"200": {"$ref": '
            '"other.yaml#/r"}}}}}}',
            "refers to another document",
        ),
    ],
)
def test_an_unreadable_spec_exits_2(capsys, tmp_path: Path, spec: str, message: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(spec, encoding="utf-8")
    status, _, err = gate(capsys, "pact", V4, "--spec", path)
    assert status == 2
    assert message in err


def test_usage_errors_exit_2(capsys) -> None:
    for args in (["pact"], ["nothing"], []):
        status, _, err = gate(capsys, *args)
        assert status == 2
        assert err.startswith("mock-server gate")
