"""Identifiers in paths: an unknown but well-formed one is the contract's 404, whatever its length.

The interface states no length for account_id or recipient_id in a path (issue 12 item 6): a bound there would
turn "never registered" into a 400. Only registration bounds account_id (1-64, CONTRACT 2), and every bound the
interface does not state is marked `x-mock-defined` in the spec and listed in docs/decisions.md.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mock_server.spec.openapi import Spec, Specs
from mock_server.spec.served import bundle_admin
from scripts.spec_examples import operations, resolved
from tests.helpers import assert_error

LONG = "x" * 65
VERY_LONG = "0001-" + "9" * 3000
WINDOWS = {"transaction": [{"start_time": "06:00:00-03:00", "amount": 100000}]}


@pytest.mark.parametrize("account_id", [LONG, VERY_LONG, "conta-não-registrada"])
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/limits/account/{}/limit_update_request", {"pix": WINDOWS}),
        ("POST", "/limits/account/{}/recipient_list", {"limit": {"pix": WINDOWS}}),
        ("POST", "/limits/account/{}/recipient_list/recipient", {"document_number": "529.982.247-25"}),
        ("POST", "/limits/account/{}/recipient_list/limit_update_request", {"pix": WINDOWS}),
        ("DELETE", "/limits/account/{}/recipient_list/recipient/5b0d7e4a-1f2b-4c3d-9e8f-7a6b5c4d3e2f", None),
        ("GET", "/__mock/accounts/{}", None),
        ("POST", "/__mock/accounts/{}/limits/evaluate", {"mode": "withdraw", "amount": 1}),
    ],
)
def test_an_unknown_account_id_is_account_not_found(
    client: httpx.Client, method: str, path: str, body: Any, account_id: str
) -> None:
    response = client.request(method, path.format(account_id), json=body)

    assert_error(response, 404, "account_not_found")


@pytest.mark.parametrize("recipient_id", [LONG, "r" * 3000, "not-a-uuid"])
def test_an_unknown_recipient_id_is_recipient_not_found(client: httpx.Client, recipient_id: str) -> None:
    response = client.delete(f"/limits/account/0001-123456/recipient_list/recipient/{recipient_id}")

    assert_error(response, 404, "recipient_not_found")


def test_registration_still_bounds_account_id_as_the_contract_says(client: httpx.Client) -> None:
    body = {
        "account_id": LONG,
        "registration_date": "2026-11-21T09:00:00-03:00",
        "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1}]}},
    }

    assert_error(client.post("/limits/account", json=body), 400, "invalid_request", ["account_id"])


# The bounds a schema can state that the interface never does (it states the 1-2 windows itself).
BOUND_KEYWORDS = ("maxLength", "maximum", "exclusiveMaximum", "maxProperties")


def _unmarked_bounds(node: Any, where: str, marked: bool) -> list[str]:
    if isinstance(node, list):
        return [p for i, item in enumerate(node) for p in _unmarked_bounds(item, f"{where}/{i}", marked)]
    if not isinstance(node, dict):
        return []
    marked = marked or node.get("x-mock-defined") is True
    found = [f"{where}: {key}" for key in BOUND_KEYWORDS if key in node and not marked]
    for key, value in node.items():
        if key not in ("example", "examples"):
            found += _unmarked_bounds(value, f"{where}/{key}", marked)
    return found


def test_every_bound_the_interface_does_not_state_is_marked_mock_defined(specs: Specs) -> None:
    spec: Spec
    problems = []
    for spec in (specs.public, specs.admin):
        problems += _unmarked_bounds(spec.document, spec.uri + "#", marked=False)
    assert problems == []


def test_the_audit_finds_an_unmarked_bound() -> None:
    document = {"components": {"schemas": {"Id": {"type": "string", "maxLength": 64}}}}
    assert _unmarked_bounds(document, "#", marked=False) == ["#/components/schemas/Id: maxLength"]


# Path parameters that give a name to what the call creates, not look one up: a snapshot's name follows the
# session-name rule (issue 24: newlines, `<b>`, 5,000 characters and %FF were taken as names).
NAMING_PARAMETERS = frozenset({"mockTakeSnapshot: name"})


def test_no_path_parameter_bounds_the_length_of_an_identifier(specs: Specs) -> None:
    """A path parameter's schema may say what an id looks like (the event key is a UUID, CONTRACT 2), never how
    long an unknown one may be; only a name the call creates is bounded."""
    bounded = []
    for document in (specs.public.document, bundle_admin(specs.admin.document, specs.public.document)):
        for operation_id, _, _, op in operations(document):
            for raw in op.get("parameters", []):
                param = resolved(document, raw)
                if param["in"] != "path":
                    continue
                schema = resolved(document, param["schema"])
                if "maxLength" in schema or "pattern" in schema:
                    bounded.append(f"{operation_id}: {param['name']}")
    assert set(bounded) == NAMING_PARAMETERS
