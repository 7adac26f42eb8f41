"""The two OpenAPI documents are valid, complete, and match the routes the server really has."""

from __future__ import annotations

from typing import Any

import pytest
from openapi_spec_validator import validate
from openapi_spec_validator.readers import read_from_filename
from starlette.applications import Starlette
from starlette.routing import Route

from mock_server.http.pipeline import PathEndpoint
from mock_server.spec.openapi import HTTP_METHODS, Specs
from mock_server.spec.resources import data_path

CONTRACT_OPERATIONS = {
    "getExtraordinaryEvent": ("GET", "/event_conciliation/extraordinary_event/{extraordinary_event_conciliation_key}"),
    "registerAccountLimit": ("POST", "/limits/account"),
    "createLimitUpdateRequest": ("POST", "/limits/account/{account_id}/limit_update_request"),
    "createRecipientList": ("POST", "/limits/account/{account_id}/recipient_list"),
    "addRecipient": ("POST", "/limits/account/{account_id}/recipient_list/recipient"),
    "removeRecipient": ("DELETE", "/limits/account/{account_id}/recipient_list/recipient/{recipient_id}"),
    "createRecipientListLimitUpdateRequest": (
        "POST",
        "/limits/account/{account_id}/recipient_list/limit_update_request",
    ),
}


@pytest.mark.parametrize("name", ["openapi.yaml", "admin/openapi.yaml"])
def test_spec_passes_openapi_spec_validator(name: str) -> None:
    path = data_path(name)
    document, base_uri = read_from_filename(str(path))
    validate(document, base_uri=base_uri)
    assert document["openapi"] == "3.1.0"


def test_public_operations_are_the_contracts(specs: Specs) -> None:
    """The interface's operations, each at its method and path: an operation added beside them is checked by
    tests/test_adding_an_operation.py, one renamed or moved fails here."""
    found = {op.operation_id: (op.method, op.path) for op in specs.public.operations.values()}
    assert {name: found.get(name) for name in CONTRACT_OPERATIONS} == CONTRACT_OPERATIONS


def _spec_routes(specs: Specs) -> set[tuple[str, str]]:
    return {(op.method, op.path) for spec in (specs.public, specs.admin) for op in spec.operations.values()}


def _app_routes(app: Starlette) -> set[tuple[str, str]]:
    routes = set()
    for route in app.routes:
        assert isinstance(route, Route), f"unexpected route type {route!r}"
        assert isinstance(route.app, PathEndpoint), f"{route.path} is not built from the spec"
        routes |= {(method, route.path) for method in route.app.runners}
    return routes


def test_every_route_is_in_a_spec_and_every_spec_operation_is_routed(app: Starlette, specs: Specs) -> None:
    assert _app_routes(app) == _spec_routes(specs)


def test_a_route_missing_from_the_spec_is_detected(app: Starlette, specs: Specs) -> None:
    """The comparison above can fail: an extra route breaks it."""
    from mock_server.http.pipeline import OperationRunner

    runner = next(iter(app.routes[0].app.runners.values()))  # type: ignore[attr-defined]
    assert isinstance(runner, OperationRunner)
    extra = Starlette(routes=[*app.routes, Route("/extra", PathEndpoint({"GET": runner}))])
    assert _app_routes(extra) - _spec_routes(specs) == {("GET", "/extra")}


def _operations(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{method.upper()} {path}", item[method])
        for path, item in document["paths"].items()
        for method in HTTP_METHODS
        if method in item
    ]


def _resolve(document: dict[str, Any], node: dict[str, Any], specs: Specs, uri: str) -> dict[str, Any]:
    from urllib.parse import urljoin

    while "$ref" in node:
        uri = urljoin(uri, node["$ref"])
        node = specs.public.registry.resolver().lookup(uri).contents
    return node


@pytest.mark.parametrize("which", ["public", "admin"])
def test_every_operation_is_documented_with_examples(specs: Specs, which: str) -> None:
    spec = getattr(specs, which)
    missing = []
    for label, op in _operations(spec.document):
        for key in ("summary", "description", "operationId"):
            if not op.get(key):
                missing.append(f"{label}: no {key}")
        if "requestBody" in op:
            body = _resolve(spec.document, op["requestBody"], specs, spec.uri)
            media = body["content"]["application/json"]
            if "example" not in media and "examples" not in media:
                missing.append(f"{label}: request body without example")
        for status, response in op["responses"].items():
            response = _resolve(spec.document, response, specs, spec.uri)
            for media_type, media in response.get("content", {}).items():
                if media_type == "application/json" and "example" not in media and "examples" not in media:
                    missing.append(f"{label} {status}: response without example")
    assert missing == []


def test_mock_decisions_are_marked(specs: Specs) -> None:
    """What the interface leaves open and the mock decides carries x-mock-defined (CONTRACT, preamble)."""
    paths = specs.public.document["paths"]
    for operation_id, (method, path) in CONTRACT_OPERATIONS.items():
        if operation_id == "getExtraordinaryEvent":
            continue
        responses = paths[path][method.lower()]["responses"]
        success = next(status for status in responses if status.startswith("2"))
        assert responses[success].get("x-mock-defined") is True, operation_id
    assert specs.public.document["components"]["schemas"]["Error"]["x-mock-defined"] is True
    assert specs.admin.document["x-mock-defined"] is True
