"""The files `make interop` feeds the tools answer as they say, so the target fails only for what it tests.

The Specmatic examples of interop/specmatic-examples send text/plain (a 415 no example in the spec can
provoke); each must be answered as written, by the operation it names. The openapi-python-client config reads the
spec downloads (application/yaml) as text, and the operations serving YAML give no schema a generator would
parse the text with.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from mock_server.spec.openapi import Specs

INTEROP = Path(__file__).resolve().parents[2] / "interop"
EXAMPLES = sorted((INTEROP / "specmatic-examples").glob("*.json"))


def test_there_is_a_415_example_for_every_operation_that_takes_a_body(specs: Specs) -> None:
    with_body = {op.operation_id for op in specs.public.operations.values() if op.body is not None}
    assert {path.name.removesuffix("_415.json") for path in EXAMPLES} == with_body


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_each_specmatic_example_is_answered_as_written(client: httpx.Client, specs: Specs, path: Path) -> None:
    example: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    request, expected = example["http-request"], example["http-response"]
    operation = specs.public.operations[path.name.removesuffix("_415.json")]
    assert request["method"] == operation.method

    answer = client.request(request["method"], request["path"], headers=request["headers"], content=request["body"])

    assert answer.status_code == expected["status"]
    assert answer.headers["content-type"] == expected["headers"]["Content-Type"]
    assert answer.json() == expected["body"]
    journal = client.get("/__mock/requests").json()["requests"]
    assert journal[-1]["operation_id"] == operation.operation_id


def test_the_generator_reads_yaml_responses_as_text(specs: Specs) -> None:
    config = yaml.safe_load((INTEROP / "openapi-python-client.yaml").read_text(encoding="utf-8"))
    assert config == {"content_type_overrides": {"application/yaml": "text/plain"}}
    for operation_id in ("mockAdminSpec", "publicSpecYaml"):
        op = specs.admin.operations[operation_id]
        path = specs.admin.document["paths"][op.path]["get"]
        assert path["responses"]["200"]["content"] == {"application/yaml": {}}
