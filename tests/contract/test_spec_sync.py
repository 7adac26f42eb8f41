"""admin/openapi.yaml's lists of the public operations are what scripts/spec_sync.py renders from openapi.yaml now:
an operation added to the public spec fails here until `make spec-sync` rewrites them."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest

from scripts import spec_sync
from tests.helpers import read_yaml

ADDED = {"get": {"operationId": "notYetAnOperation", "responses": {"200": {"description": "pong"}}}}


@functools.cache
def _public_read() -> dict[str, Any]:
    document: dict[str, Any] = read_yaml(spec_sync.PUBLIC.read_text(encoding="utf-8"))
    return document


def _public() -> dict[str, Any]:
    """The public spec, read once a process (libyaml's loader, tests.helpers.read_yaml); a copy each call."""
    return copy.deepcopy(_public_read())


def _admin() -> str:
    return spec_sync.ADMIN.read_text(encoding="utf-8")


def test_the_committed_admin_spec_is_a_fresh_rendering() -> None:
    assert _admin() == spec_sync.rendered(), "admin/openapi.yaml is stale: run `make spec-sync` and commit it"


def test_an_operation_added_to_the_public_spec_makes_the_admin_spec_stale() -> None:
    public = _public()
    public["paths"]["/limits/not-yet-added"] = ADDED
    again = spec_sync.render(_admin(), public)
    assert again != _admin()
    schemas = read_yaml(again)["components"]["schemas"]
    enum = schemas["PublicOperationId"]["enum"]
    assert enum[-1] == "notYetAnOperation" and len(enum) == len(spec_sync.public_operations(_public())) + 1
    rules = schemas["FaultRequest"]["allOf"]
    added = next(rule for rule in rules if "notYetAnOperation" in _named_by(rule))
    match = added["then"]["properties"]["match"]["properties"]  # alone, or beside operations of its shape
    assert match["path"]["not"] == {} and "no path parameter" in match["path"]["description"]
    assert match["body_contains"]["not"] == {} and "takes no request body" in match["body_contains"]["description"]


def _named_by(rule: dict[str, Any]) -> list[str]:
    """The operations a FaultRequest rule applies to (its `const` or `enum`); none for a rule of another field."""
    condition = rule.get("if", {}).get("properties", {}).get("operation_id", {})
    return [condition["const"]] if "const" in condition else list(condition.get("enum", []))


def test_rendering_twice_changes_nothing() -> None:
    once = spec_sync.render(_admin(), _public())
    assert spec_sync.render(once, _public()) == once


def test_the_enum_is_every_operation_of_the_public_spec_in_its_order() -> None:
    enum = read_yaml(_admin())["components"]["schemas"]["PublicOperationId"]["enum"]
    assert enum == [operation.operation_id for operation in spec_sync.public_operations(_public())]


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda text: text.replace("# END generated: fault-match\n", ""), "fault-match has no line"),
        (lambda text: text.replace(": fault-match; do not edit", ": matches; do not edit"), "no generated block is"),
    ],
)
def test_a_damaged_block_is_named(damage: Any, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        spec_sync.render(damage(_admin()), _public())


def test_a_public_spec_that_is_not_yaml_is_a_clear_refusal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "openapi.yaml"
    broken.write_text('paths:\n  /x:\n    description: a `{"b": 1}` c\n', encoding="utf-8")
    monkeypatch.setattr(spec_sync, "PUBLIC", broken)
    assert spec_sync.main(["--check"]) == 2
    assert "spec-sync: the specs cannot be read: ScannerError" in capsys.readouterr().err
