"""Every public operation of openapi.yaml has its one declaration (domain/operations.py), a handler, and what its
declaration names exists in the spec: an eighth operation without any of them fails here, loudly."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import pytest

from mock_server.admin.pact_replay import FACT_STATES
from mock_server.api.handlers import HANDLERS
from mock_server.domain.operations import OPERATIONS, Fact, OperationFacts, Shows
from mock_server.spec.openapi import Operation, Spec, Specs


def _properties(schema: Any) -> set[str]:
    """The property names a schema gives an object, through `allOf`, `oneOf` and `anyOf`."""
    if not isinstance(schema, dict):
        return set()
    found = set(schema.get("properties", {}))
    for key in ("allOf", "oneOf", "anyOf"):
        for member in schema.get(key, ()):
            found |= _properties(member)
    return found


def _success_fields(operation: Operation) -> set[str]:
    found: set[str] = set()
    for status, check in operation.responses.items():
        if status.startswith("2") and check is not None:
            found |= _properties(check.schema)
    return found


def declaration_problems(spec: Spec, declarations: Mapping[str, OperationFacts], handlers: Iterable[str]) -> list[str]:
    """What is missing or wrong between the spec's operations, their declarations and their handlers."""
    operations = spec.operations
    handled = set(handlers)
    problems = [f"{name}: no declaration in domain/operations.py" for name in operations if name not in declarations]
    problems += [
        f"{name}: declared, but openapi.yaml has no such operation" for name in declarations if name not in operations
    ]
    problems += [f"{name}: no handler in api/handlers.py" for name in operations if name not in handled]
    problems += [f"{name}: a handler of no operation of openapi.yaml" for name in handled if name not in operations]
    issued = {facts.issued_id for facts in declarations.values()}
    for name, facts in declarations.items():
        operation = operations.get(name)
        if operation is None:
            continue
        if facts.operation_id != name:
            problems.append(f"{name}: declared under the name {facts.operation_id}")
        path = {p.name for p in operation.parameters if p.location == "path"}
        body = _properties(operation.body.schema) if operation.body is not None else set()
        problems += [
            f"{name}: the description's {{{p}}} is neither a path parameter nor a body field"
            for p in facts.placeholders
            if p not in path | body
        ]
        fields = _success_fields(operation)
        problems += [f"{name}: generated {p} is no field of its answer" for p in facts.generated if p[1:] not in fields]
        if facts.issued_id is not None and f"/{facts.issued_id}" not in facts.generated:
            problems.append(f"{name}: the id it issues ({facts.issued_id}) is not among its generated fields")
        for parameter in facts.names_issued:
            if parameter not in path:
                problems.append(f"{name}: names {parameter}, which is no path parameter of it")
            if parameter not in issued:
                problems.append(f"{name}: names {parameter}, which no operation issues")
        shown = {Shows.EVENT: Fact.EVENT, Shows.ACCOUNT: Fact.ACCOUNT}.get(facts.shows)
        if shown is not None and shown not in facts.relies_on:
            problems.append(f"{name}: shows the {shown.value}, which it does not rely on")
        for fact in (facts.creates, facts.removes):
            if fact is not None and fact not in facts.relies_on:
                problems.append(f"{name}: creates or removes {fact.value}, which it does not rely on")
    return problems


def test_every_operation_of_the_spec_is_declared_and_handled(specs: Specs) -> None:
    assert declaration_problems(specs.public, OPERATIONS, HANDLERS) == []


def test_an_operation_without_its_declaration_fails(specs: Specs) -> None:
    missing = {name: facts for name, facts in OPERATIONS.items() if name != "addRecipient"}
    assert declaration_problems(specs.public, missing, HANDLERS) == [
        "addRecipient: no declaration in domain/operations.py",
        "removeRecipient: names recipient_id, which no operation issues",
    ]


def test_a_declaration_of_an_operation_the_spec_lacks_fails(specs: Specs) -> None:
    extra = {
        **OPERATIONS,
        "payEvent": OperationFacts("payEvent", "a payment of {key}", relies_on=(Fact.EVENT,), shows=Shows.EVENT),
    }
    assert declaration_problems(specs.public, extra, HANDLERS) == [
        "payEvent: declared, but openapi.yaml has no such operation"
    ]


def test_an_operation_without_a_handler_fails(specs: Specs) -> None:
    handlers = [name for name in HANDLERS if name != "removeRecipient"]
    assert declaration_problems(specs.public, OPERATIONS, handlers) == [
        "removeRecipient: no handler in api/handlers.py"
    ]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"description": "a registration of {account}"}, "{account} is neither a path parameter nor a body field"),
        ({"generated": frozenset({"/event_time"})}, "generated /event_time is no field of its answer"),
        ({"issued_id": "account_id"}, "the id it issues (account_id) is not among its generated fields"),
        ({"names_issued": ("recipient_id",)}, "names recipient_id, which is no path parameter of it"),
        ({"relies_on": (), "creates": None}, "shows the account, which it does not rely on"),
        ({"removes": Fact.RECIPIENT}, "creates or removes recipient, which it does not rely on"),
    ],
)
def test_a_declaration_that_names_what_the_spec_lacks_fails(specs: Specs, change: dict[str, Any], problem: str) -> None:
    wrong = replace(OPERATIONS["registerAccountLimit"], **change)
    problems = declaration_problems(specs.public, {**OPERATIONS, "registerAccountLimit": wrong}, HANDLERS)
    assert len(problems) == 1 and problem in problems[0], problems


def test_a_declaration_may_rely_on_no_fact(specs: Specs) -> None:
    """An operation that reads no record (a stateless ping) says so: `relies_on=()`, and its answer shows nothing."""
    stateless = replace(OPERATIONS["getExtraordinaryEvent"], relies_on=(), shows=Shows.NOTHING)
    assert declaration_problems(specs.public, {**OPERATIONS, "getExtraordinaryEvent": stateless}, HANDLERS) == []


def test_a_declaration_says_what_it_relies_on_and_shows() -> None:
    """Neither has a default: an operation declared without them is a TypeError, not an operation relying on
    nothing by omission."""
    with pytest.raises(TypeError, match="relies_on"):
        OperationFacts("pingLimits", "a ping", shows=Shows.NOTHING)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="shows"):
        OperationFacts("pingLimits", "a ping", relies_on=())  # type: ignore[call-arg]


def test_every_fact_an_operation_relies_on_is_a_provider_state() -> None:
    assert set(FACT_STATES) == set(Fact)
