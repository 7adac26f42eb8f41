"""The tools, read from the two specs: one per operation, named by its operationId, described by its summary.

A tool's arguments are the operation's path and query parameters by name, its JSON body as `body`, and an optional
`session`; its input schema holds the very schemas requests are validated with (spec/openapi.py, every `$ref`
resolved), so a client reads one self-contained JSON Schema. A call becomes the HTTP request a client would send
(`HttpRequest`), answered by the app in process (mcp/inprocess.py): validation, faults, the journal and coverage
happen there, never here. Only what cannot be put in a request at all is refused here, in the contract's body.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from mock_server.domain.errors import Detail, InvalidRequest
from mock_server.spec.openapi import Operation, Spec, Specs

MCP_PATH = "/__mock/mcp"  # the MCP endpoint itself: an operation of the admin spec, never a tool
BODY = "body"
SESSION = "session"
# The session argument's words; its schema is the spec's SessionName.
SESSION_HELP = "The mock session to act in (X-Mock-Session); default: this MCP session's own, ending with it."
BODY_HELP = "The request's JSON body."
# What every tool answers: the HTTP status and the answer (JSON, the text of a non-JSON answer, or null).
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["status", "body"],
    "properties": {
        "status": {"type": ["integer", "null"], "description": "HTTP status; null: no answer (a reset)."},
        "body": {"description": "The answer's JSON, or its text."},
    },
}


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """The request a tool call stands for, as a client would send it."""

    method: str
    path: str  # decoded, as ASGI's scope["path"]
    raw_path: bytes  # percent-encoded: an id holding `/` arrives as %2F, as from any client
    query: bytes
    body: bytes | None  # None: no body
    session: str | None  # None: the caller's default session


@dataclass(frozen=True, slots=True)
class Tool:
    """One operation as a tool."""

    name: str
    description: str
    method: str
    path: str  # the spec's template, e.g. /limits/account/{account_id}
    input_schema: dict[str, Any]
    path_names: tuple[str, ...]
    query_names: tuple[str, ...]
    takes_body: bool
    read_only: bool
    tags: tuple[str, ...] = ()  # the spec's tags: `pages` and `specs` answer no agent wants as a tool

    def request(self, arguments: Mapping[str, Any] | None) -> HttpRequest:
        """The HTTP request for `arguments`; InvalidRequest for what no request can carry (an unknown argument,
        a missing path parameter, an object where a parameter's text goes)."""
        given = dict(arguments or {})
        problems: list[Detail] = []
        known = {*self.path_names, *self.query_names, SESSION, *((BODY,) if self.takes_body else ())}
        problems += [Detail((name,), "is not an argument of this tool") for name in given if name not in known]
        path, raw_path = self.path, self.path
        for name in self.path_names:
            if name not in given:
                problems.append(Detail((name,), "is required"))
                continue
            text = _text(name, given[name], problems)
            path = path.replace("{" + name + "}", text)
            raw_path = raw_path.replace("{" + name + "}", quote(text, safe=""))
        query = [(name, _text(name, given[name], problems)) for name in self.query_names if name in given]
        session = given.get(SESSION)
        if session is not None and not isinstance(session, str):
            problems.append(Detail((SESSION,), "must be a string"))
        if problems:
            raise InvalidRequest("The tool's arguments cannot make a request.", problems)
        body = None
        if BODY in given:
            body = json.dumps(given[BODY], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return HttpRequest(self.method, path, raw_path.encode("ascii"), urlencode(query).encode("ascii"), body, session)


def _text(name: str, value: Any, problems: list[Detail]) -> str:
    """A path or query parameter's value as the URL carries it: a string as it is, a number or boolean as JSON
    writes it (the spec's schema judges it next, as it would a client's)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    problems.append(Detail((name,), "must be a string, a number or a boolean"))
    return ""


def _item(spec: Spec, operation: Operation) -> dict[str, Any]:
    item: dict[str, Any] = spec.document["paths"][operation.path][operation.method.lower()]
    return item


def _parameter_words(spec: Spec, operation: Operation) -> dict[str, str]:
    """Each parameter's description in the spec, by name (a `$ref` followed, in this document or the other)."""
    words: dict[str, str] = {}
    declared = [
        *spec.document["paths"][operation.path].get("parameters", ()),
        *_item(spec, operation).get("parameters", ()),
    ]
    for node in declared:
        if "$ref" in node:
            node, _ = spec.documents.lookup(node["$ref"], spec.uri)
        if node.get("description"):
            words[node["name"]] = " ".join(str(node["description"]).split())
    return words


def _described(schema: Any, words: str) -> Any:
    """`schema` with a description: its own, else `words` (a client shows an agent each argument's words)."""
    if isinstance(schema, Mapping) and schema.get("description"):
        return schema
    return {**schema, "description": words} if isinstance(schema, Mapping) else schema


def _tool(spec: Spec, operation: Operation, session_schema: Mapping[str, Any]) -> Tool:
    properties: dict[str, Any] = {}
    words = _parameter_words(spec, operation)
    required: list[str] = []
    path_names: list[str] = []
    query_names: list[str] = []
    for param in operation.parameters:
        if param.location not in ("path", "query"):
            continue  # headers: X-Mock-Session is `session`; X-Mock-Admin guards browsers, not tools
        where = "path" if param.location == "path" else "query"
        properties[param.name] = _described(param.check.schema, words.get(param.name, f"The {where} parameter."))
        (path_names if param.location == "path" else query_names).append(param.name)
        if param.required or param.location == "path":
            required.append(param.name)
    if operation.body is not None:
        properties[BODY] = _described(operation.body.schema, BODY_HELP)
        if operation.body_required:
            required.append(BODY)
    properties[SESSION] = {**session_schema, "description": SESSION_HELP}
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    item = _item(spec, operation)
    return Tool(
        name=operation.operation_id,
        description=f"{item.get('summary') or operation.operation_id} ({operation.method} {operation.path})",
        method=operation.method,
        path=operation.path,
        input_schema=schema,
        path_names=tuple(path_names),
        query_names=tuple(query_names),
        takes_body=operation.body is not None,
        read_only=operation.method == "GET",
        tags=tuple(item.get("tags", ())),
    )


def tools_of(specs: Specs) -> dict[str, Tool]:
    """Every operation of the public spec, then of the admin spec, as a tool by name; the MCP endpoint aside."""
    session_schema = specs.admin.check("#/components/schemas/SessionName").schema
    found: dict[str, Tool] = {}
    for spec in (specs.public, specs.admin):
        for operation in spec.operations.values():
            if operation.path != MCP_PATH:
                found[operation.operation_id] = _tool(spec, operation, session_schema)
    return found
