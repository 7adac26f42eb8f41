"""A call as a gate sees it (from a pact's interaction, a journal entry), the operation of a spec it is a call of,
and what that spec's own compiled checks (spec/openapi.py) say of its request and its answer: each problem with a
JSON pointer into the file the call was read from."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from mock_server.domain.errors import Detail, FieldPath
from mock_server.http.session_url import split_session_path
from mock_server.spec.openapi import Operation, Parameter, Spec

JSON_MEDIA = re.compile(r"^application/(.+\+)?json\s*(;.*)?$", re.IGNORECASE)
# Headers the mock itself defines and a pact or journal of another provider never needs.
MOCK_HEADERS = frozenset({"x-mock-session"})


def pointer(*parts: str | int) -> str:
    """A JSON pointer (RFC 6901) of `parts`."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def field_pointer(base: str, path: FieldPath) -> str:
    return base + pointer(*path)


@dataclass(frozen=True)
class CallProblem:
    """Why a call does not fit: what, and where (a JSON pointer into the file it came from)."""

    what: str
    where: str


@dataclass(frozen=True)
class Locations:
    """Where each part of a call lies in its file (JSON pointers): problems are named there."""

    method: str
    path: str
    query: str
    headers: str
    body: str
    status: str
    response_body: str


@dataclass(frozen=True)
class GateCall:
    """One request and, when known, its answer."""

    method: str  # upper case
    path: str  # without the query string
    query: Mapping[str, list[str]] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-case names
    body: Any = None
    has_body: bool = False
    content_type: str | None = None
    status: int | None = None
    response_body: Any = None
    has_response_body: bool = False


def _template(path: str) -> re.Pattern[str]:
    parts = re.split(r"{([^{}]+)}", path)
    return re.compile("".join(re.escape(p) if i % 2 == 0 else f"(?P<p{i}>[^/]+)" for i, p in enumerate(parts)))


def _names(path: str) -> list[str]:
    return re.findall(r"{([^{}]+)}", path)


def match_operation(spec: Spec, method: str, path: str) -> tuple[Operation | None, dict[str, str], bool]:
    """(the operation of `method` at `path`, its path parameters, whether the path is a path of the spec at all).
    A path with a session prefix (`/__session/NAME/...`) is the path after it."""
    in_session = split_session_path(path)
    if in_session is not None:
        path = in_session[1]
    path_known = False
    operations = spec.paths()
    for template in spec.document.get("paths") or {}:
        found = _template(template).fullmatch(path)
        if found is None:
            continue
        path_known = True
        for operation in operations.get(template, []):
            if operation.method == method:
                values = [unquote(v) for v in found.groups()]
                return operation, dict(zip(_names(template), values, strict=True)), True
    return None, {}, path_known


def _as_schema_value(parameter: Parameter, text: str) -> Any:
    """A query or header value (text on the wire) as its schema's type reads it."""
    kinds = parameter.check.schema.get("type") if isinstance(parameter.check.schema, dict) else None
    kinds = {kinds} if isinstance(kinds, str) else set(kinds or ())
    if kinds & {"integer", "number"}:
        try:
            return int(text)
        except ValueError:
            try:
                return float(text)
            except ValueError:
                return text
    if "boolean" in kinds and text in ("true", "false"):
        return text == "true"
    return text


def request_problems(spec: Spec, call: GateCall, at: Locations) -> tuple[Operation | None, list[CallProblem]]:
    """The operation `call` is a call of, and every way its request is not one `spec` accepts."""
    operation, path_values, path_known = match_operation(spec, call.method, call.path)
    if operation is None:
        if path_known:
            return None, [CallProblem(f"{call.method} is not an operation of {call.path}", at.method)]
        return None, [CallProblem(f"{call.path} is no path of the spec", at.path)]
    problems: list[CallProblem] = []
    for parameter in operation.parameters:
        if parameter.location == "path":
            value: Any = path_values.get(parameter.name)
            where = at.path
            label = f"path parameter {parameter.name}"
        elif parameter.location == "query":
            values = call.query.get(parameter.name)
            value = _as_schema_value(parameter, values[0]) if values else None
            where = at.query + pointer(parameter.name)
            label = f"query parameter {parameter.name}"
        elif parameter.location == "header":
            if parameter.name.lower() in MOCK_HEADERS:
                continue
            text = call.headers.get(parameter.name.lower())
            value = _as_schema_value(parameter, text) if text is not None else None
            where = at.headers + pointer(parameter.name)
            label = f"header {parameter.name}"
        else:
            continue
        if value is None:
            if parameter.required:
                problems.append(CallProblem(f"the {label} is required", where))
            continue
        for detail in parameter.check.problems(value):
            problems.append(CallProblem(f"the {label} {detail.message}", where))
    if call.has_body and call.content_type is not None and operation.body_media_types:
        media = call.content_type.split(";")[0].strip().lower()
        if media not in (m.lower() for m in operation.body_media_types):
            problems.append(
                CallProblem(
                    f"the body's content type {media} is none of {', '.join(operation.body_media_types)}", at.body
                )
            )
    if not call.has_body:
        if operation.body_required:
            problems.append(CallProblem("the request body is required", at.body))
    elif operation.body is None and not operation.body_media_types:
        problems.append(CallProblem(f"{operation.operation_id} takes no request body", at.body))
    elif operation.body is not None:
        for detail in operation.body.problems(call.body):
            problems.append(
                CallProblem(f"request body {_field(detail)}{detail.message}", field_pointer(at.body, detail.path))
            )
    return operation, problems


def _field(detail: Detail) -> str:
    return detail.field + " " if detail.path else ""


def response_problems(operation: Operation, call: GateCall, at: Locations) -> list[CallProblem]:
    """How the call's answer contradicts the operation's documented responses (nothing when no answer is known)."""
    if call.status is None:
        return []
    found = operation.response_problems(call.status, call.response_body, call.has_response_body)
    if found is None:
        documented = ", ".join(operation.responses)
        return [
            CallProblem(
                f"status {call.status} is not documented for {operation.operation_id} ({documented})", at.status
            )
        ]
    return [
        CallProblem(f"response body {_field(d)}{d.message}", field_pointer(at.response_body, d.path)) for d in found
    ]
