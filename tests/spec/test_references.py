"""A `$ref` joined to the URI of the document it is written in as urljoin joins it (spec/openapi.py's `_joined`:
a reference within the same document without parsing URIs, any other by urljoin)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin

import pytest

from mock_server.spec.openapi import ADMIN_URI, PUBLIC_URI, _joined, load_specs

BASES = (
    PUBLIC_URI,
    ADMIN_URI,
    ADMIN_URI + "#/paths/~1__mock~1sessions/post/requestBody",
    "http://mock-server/a/b/c.yaml?x=1#/components",
)
REFS = ("#/components/schemas/Error", "#/a%20b/~1c", "#/a?b#c", "#", "", "../openapi.yaml#/components/x", "other.yaml")


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("ref", REFS)
def test_a_reference_is_joined_as_urljoin_joins_it(base: str, ref: str) -> None:
    assert _joined(base, ref) == urljoin(base, ref)


def refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in refs(value)]
    return []


def test_every_reference_of_the_shipped_specs_is_joined_as_urljoin_joins_it() -> None:
    specs = load_specs()
    for spec in (specs.public, specs.admin):
        found = refs(spec.document)
        assert found
        for ref in found:
            assert _joined(spec.uri + "#/paths", ref) == urljoin(spec.uri + "#/paths", ref)
