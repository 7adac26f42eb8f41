"""The tools read from the specs: one per operation, the spec's own schemas, the request a call stands for."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from mock_server.domain.errors import InvalidRequest
from mock_server.domain.operations import OPERATIONS
from mock_server.mcp.tools import BODY, MCP_PATH, SESSION, tools_of
from mock_server.spec.openapi import Specs


def test_one_tool_per_operation_of_both_specs_the_mcp_endpoint_aside(specs: Specs) -> None:
    tools = tools_of(specs)
    public = {op.operation_id for op in specs.public.operations.values()}
    admin = {op.operation_id for op in specs.admin.operations.values() if op.path != MCP_PATH}
    assert public == set(OPERATIONS)
    assert set(tools) == public | admin
    assert not {op.operation_id for op in specs.admin.operations.values() if op.path == MCP_PATH} & set(tools)


def test_a_tool_is_described_by_its_summary(specs: Specs) -> None:
    tool = tools_of(specs)["registerAccountLimit"]
    assert tool.description == "Register a new limit (POST /limits/account)"


def test_the_input_schema_holds_the_schemas_requests_are_validated_with(specs: Specs) -> None:
    tools = tools_of(specs)
    for spec in (specs.public, specs.admin):
        for op in spec.operations.values():
            if op.path == MCP_PATH:
                continue
            schema = tools[op.operation_id].input_schema
            Draft202012Validator.check_schema(schema)
            assert "$ref" not in json.dumps(schema), op.operation_id  # self-contained: every reference resolved
            properties = schema["properties"]
            for param in op.parameters:
                if param.location in ("path", "query"):
                    described = properties[param.name]
                    assert described["description"], (op.operation_id, param.name)
                    assert {**described, "description": None} == {**param.check.schema, "description": None}
            if op.body is not None:
                assert properties[BODY]["description"]
                assert {**properties[BODY], "description": None} == {**op.body.schema, "description": None}
                assert (BODY in schema.get("required", [])) is op.body_required
            else:
                assert BODY not in properties
            assert SESSION in properties and SESSION not in schema.get("required", [])


def test_a_call_is_the_request_a_client_would_send(specs: Specs) -> None:
    tool = tools_of(specs)["createLimitUpdateRequest"]
    request = tool.request({"account_id": "0001-123456", "body": {"pix": {}}, "session": "s1"})
    assert (request.method, request.path, request.raw_path) == (
        "POST",
        "/limits/account/0001-123456/limit_update_request",
        b"/limits/account/0001-123456/limit_update_request",
    )
    assert json.loads(request.body or b"") == {"pix": {}}
    assert request.session == "s1"


def test_a_path_parameter_is_percent_encoded_as_any_client_does(specs: Specs) -> None:
    request = tools_of(specs)["mockGetAccount"].request({"account_id": "a/b c"})
    assert request.path == "/__mock/accounts/a/b c"
    assert request.raw_path == b"/__mock/accounts/a%2Fb%20c"


def test_query_parameters_go_in_the_query_string(specs: Specs) -> None:
    tool = tools_of(specs)["mockListRequests"]
    name = tool.query_names[0]
    request = tool.request({name: "x y"})
    assert request.query == f"{name}=x+y".encode()


@pytest.mark.parametrize(
    ("arguments", "field", "message"),
    [
        ({}, "account_id", "is required"),
        ({"account_id": "0001-123456", "nope": 1}, "nope", "is not an argument of this tool"),
        ({"account_id": {"an": "object"}}, "account_id", "must be a string, a number or a boolean"),
        ({"account_id": "0001-123456", "session": 7}, "session", "must be a string"),
    ],
)
def test_what_no_request_can_carry_is_refused_in_the_contracts_body(specs: Specs, arguments, field, message) -> None:
    with pytest.raises(InvalidRequest) as refused:
        tools_of(specs)["mockGetAccount"].request(arguments)
    assert refused.value.body()["details"] == [{"field": field, "message": message}]
