"""gate/diff.py's pure rules on small documents: where a change is said to be (a `$ref`'s target, an `allOf`
member), a recursive schema compared without end, a `$ref` cycle refused, a path parameter renamed."""

from __future__ import annotations

from typing import Any

import pytest

from mock_server.gate.diff import SpecShapeError, compare


def spec(body: dict[str, Any], schemas: dict[str, Any] | None = None, path: str = "/things") -> dict[str, Any]:
    operation = {
        "operationId": "makeThing",
        "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
        "responses": {"201": {"description": "made"}},
    }
    return {"openapi": "3.1.0", "paths": {path: {"post": operation}}, "components": {"schemas": schemas or {}}}


def test_a_change_is_placed_where_its_schema_is_written() -> None:
    old = spec(
        {"$ref": "#/components/schemas/Thing"}, {"Thing": {"type": "object", "properties": {"n": {"type": "integer"}}}}
    )
    new = spec(
        {"$ref": "#/components/schemas/Thing"},
        {"Thing": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 9}}}},
    )
    [change] = compare(old, new)
    assert (change.breaking, change.where, change.target) == (True, "/components/schemas/Thing/properties/n", "/body/n")
    assert change.line() == "POST /things: request n: maximum none -> 9 at /components/schemas/Thing/properties/n"


def test_an_all_of_members_property_is_placed_in_that_member() -> None:
    base = {"type": "object", "properties": {"a": {"type": "string"}}}
    old = spec({"allOf": [base, {"properties": {"b": {"type": "string"}}}]})
    new = spec({"allOf": [base, {"properties": {"b": {"type": "string"}}, "required": ["b"]}]})
    [change] = compare(old, new)
    assert change.what == "request field b newly required"
    assert change.where == "/paths/~1things/post/requestBody/content/application~1json/schema/allOf/1/properties/b"


def test_a_recursive_schema_is_compared_to_a_bounded_depth() -> None:
    node = {"type": "object", "properties": {"child": {"$ref": "#/components/schemas/Node"}}}
    document = spec({"$ref": "#/components/schemas/Node"}, {"Node": node})
    assert compare(document, document) == []


def test_a_ref_cycle_is_refused_in_words() -> None:
    document = spec(
        {"$ref": "#/components/schemas/A"},
        {"A": {"$ref": "#/components/schemas/B"}, "B": {"$ref": "#/components/schemas/A"}},
    )
    with pytest.raises(
        SpecShapeError, match=r"the old spec's schema at /components/schemas/\w+ nests or refers too deeply"
    ):
        compare(document, document)


def test_a_renamed_path_parameter_is_no_breaking_change() -> None:
    old, new = spec({"type": "object"}, path="/things/{id}"), spec({"type": "object"}, path="/things/{thing_id}")
    [change] = compare(old, new)
    assert not change.breaking
    assert change.what == "path parameter renamed: /things/{id} -> /things/{thing_id}"
