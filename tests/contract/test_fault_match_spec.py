"""The admin spec's FaultRequest states, per operation, what a fault's `match` may name: these checks keep that in
step with the public spec (openapi.yaml), so a path parameter added or renamed there cannot be forgotten here."""

from __future__ import annotations

import pytest

from mock_server.spec.openapi import Operation, Specs, load_specs

SPECS: Specs = load_specs()
PUBLIC = SPECS.public.operations
EVERY_NAME = sorted({p.name for op in PUBLIC.values() for p in op.parameters if p.location == "path"} | {"key"})


def fault_problems(operation_id: str, match: object) -> list[str]:
    check = SPECS.admin.operations["mockCreateFault"].body
    assert check is not None
    return [d.field for d in check.problems({"operation_id": operation_id, "match": match})]


def path_names(operation: Operation) -> set[str]:
    return {p.name for p in operation.parameters if p.location == "path"}


@pytest.mark.parametrize("operation_id", sorted(PUBLIC))
def test_match_path_accepts_exactly_the_operations_path_parameters(operation_id: str) -> None:
    own = path_names(PUBLIC[operation_id])
    for name in EVERY_NAME:
        problems = fault_problems(operation_id, {"path": {name: "x"}})
        if name in own:
            assert problems == [], (operation_id, name)
        else:
            assert problems in (["match.path"], [f"match.path.{name}"]), (operation_id, name, problems)
    if own:
        assert fault_problems(operation_id, {"path": dict.fromkeys(own, "x")}) == []


@pytest.mark.parametrize("operation_id", sorted(PUBLIC))
def test_match_body_contains_only_where_the_operation_takes_a_body(operation_id: str) -> None:
    takes_body = PUBLIC[operation_id].body is not None
    problems = fault_problems(operation_id, {"body_contains": {}})
    assert problems == ([] if takes_body else ["match.body_contains"])


FAULT_EXAMPLES = SPECS.admin.document["paths"]["/__mock/faults"]["post"]["requestBody"]["content"]["application/json"][
    "examples"
]


@pytest.mark.parametrize("name", sorted(FAULT_EXAMPLES))
def test_each_fault_request_example_is_valid_and_armed(client, name: str) -> None:
    # Redocly's linter cannot judge these (.redocly.lint-ignore.yaml says why): the server's own validator does.
    example = FAULT_EXAMPLES[name]["value"]
    response = client.post("/__mock/faults", json=example)
    assert response.status_code == 201, response.text
    armed = response.json()
    assert {key: armed[key] for key in example} == example
