"""The OpenAPI documents, loaded once, and the request validators compiled from their own schemas.

Nothing here restates a rule: every check is the spec's JSON Schema (2020-12, as OpenAPI 3.1 says),
so what the spec allows the server accepts and what it forbids the server rejects.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import jsonschema_rs
import yaml
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from .documents import is_valid_document
from .errors import Detail, FieldPath
from .resources import data_path

if TYPE_CHECKING:
    from referencing._core import Resolver

# Base URIs under which the two documents are registered: the admin document refers to the public one
# as `../openapi.yaml`, which resolves the same way on disk and over HTTP (/__mock/openapi.yaml -> /openapi.yaml).
PUBLIC_URI = "http://mock-server/openapi.yaml"
ADMIN_URI = "http://mock-server/__mock/openapi.yaml"
HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


def format_checker() -> FormatChecker:
    """The standard formats (date-time needs rfc3339-validator, installed) plus the spec's `br-document`."""
    checker = FormatChecker()
    checker.checks("br-document")(_document_format)
    return checker


def _document_format(value: object) -> bool:
    """A format constrains strings only (JSON Schema 2020-12, 7.1): a number is the `type` keyword's business."""
    return not isinstance(value, str) or is_valid_document(value)


def _details(errors: Iterable[ValidationError], prefix: FieldPath) -> list[Detail]:
    """One detail per problem, naming the field itself (a missing or unknown key included)."""
    details: list[Detail] = []
    for error in errors:
        path = prefix + tuple(error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            for name in error.validator_value:  # type: ignore[union-attr]
                if name not in error.instance:
                    details.append(Detail((*path, name), "is required"))
        elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = error.schema.get("properties", {})  # type: ignore[union-attr]
            for name in error.instance:
                if name not in known:
                    details.append(Detail((*path, name), "is not a known field"))
        elif error.validator == "enum":  # CONTRACT 1's layout: 'payed' is not one of pending_conciliation, paid, ...
            allowed = ", ".join(str(v) for v in error.validator_value)  # type: ignore[union-attr]
            details.append(Detail(path, f"{error.instance!r} is not one of {allowed}"))
        elif error.validator == "format" and error.validator_value == "br-document":
            message = f"{error.instance!r} is not a valid CPF or CNPJ (wrong check digits, or one repeated digit)"
            details.append(Detail(path, message))
        else:
            details.append(Detail(path, error.message))
    return details


def _one_per_field(details: Iterable[Detail]) -> list[Detail]:
    """CONTRACT 2: one entry per invalid field; several problems of one field are joined in its message."""
    messages: dict[FieldPath, list[str]] = {}
    for detail in details:
        found = messages.setdefault(detail.path, [])
        if detail.message not in found:
            found.append(detail.message)
    merged = [Detail(path, "; ".join(found)) for path, found in messages.items()]
    return sorted(merged, key=lambda d: d.field)


def _is_within(path: FieldPath, parent: FieldPath) -> bool:
    return path[: len(parent)] == parent


@dataclass(frozen=True, slots=True)
class SchemaCheck:
    """One schema of the spec, compiled by two engines from the same (inlined) schema.

    jsonschema-rs, the engine schemathesis itself judges requests with, gives the verdict in about a
    microsecond (profiling showed the pure-Python walk as most of a validated POST's cost: 58 of 140 us).
    jsonschema explains a rejection best (the missing or unknown field by name); what it does not see is
    added from jsonschema-rs. It must not decide: its `pattern` is Python's `re.search`, where `$` also
    matches before a final newline, so it would let `"06:00:00Z\n"` through where ECMA-262 does not.
    """

    validator: Draft202012Validator
    fast: jsonschema_rs.Validator

    def problems(self, instance: Any, prefix: FieldPath = ()) -> list[Detail]:
        if self.fast.is_valid(instance):
            return []
        details = _details(self.validator.iter_errors(instance), prefix)
        explained = [d.path for d in details]
        for error in self.fast.iter_errors(instance):
            where = prefix + tuple(error.instance_path)
            if not any(_is_within(path, where) for path in explained):
                details.append(Detail(where, error.message))
        return _one_per_field(details)


@dataclass(frozen=True, slots=True)
class Parameter:
    name: str
    location: str  # path, query or header
    required: bool
    check: SchemaCheck


@dataclass(frozen=True, slots=True)
class Operation:
    operation_id: str
    method: str  # upper case
    path: str
    parameters: tuple[Parameter, ...]
    body: SchemaCheck | None
    body_required: bool
    responses: Mapping[str, SchemaCheck | None]  # status ("201", "4XX", "default") -> body schema


@dataclass
class Spec:
    """One OpenAPI document with its operations compiled."""

    uri: str
    text: str  # the file as written (served as is, comments and order kept)
    document: dict[str, Any]
    registry: Registry[Any]
    operations: dict[str, Operation] = field(default_factory=dict)

    def check(self, ref: str) -> SchemaCheck:
        """A validator for the schema at `ref`: a pointer such as `#/components/schemas/Error`, or a full URI."""
        schema = _inlined({"$ref": urljoin(self.uri, ref)}, self.registry.resolver(self.uri))
        return SchemaCheck(
            Draft202012Validator(schema, format_checker=format_checker()),
            jsonschema_rs.Draft202012Validator(
                schema, validate_formats=True, formats={"br-document": is_valid_document}
            ),
        )

    @cached_property
    def json_text(self) -> str:
        return json.dumps(self.document)

    def paths(self) -> dict[str, list[Operation]]:
        by_path: dict[str, list[Operation]] = {}
        for operation in self.operations.values():
            by_path.setdefault(operation.path, []).append(operation)
        return by_path


def _inlined(schema: Any, resolver: Resolver[Any], depth: int = 0) -> Any:
    """`schema` with every `$ref` replaced by what it points at, resolved once at start-up.

    Validation then never resolves a reference per request (that was most of its cost), and the rules
    are still exactly the spec's. Our schemas are not recursive; the depth guard says so loudly if one becomes so.
    """
    if depth > 64:
        raise ValueError("the spec's schemas nest too deeply (a recursive $ref?)")
    if isinstance(schema, list):
        return [_inlined(item, resolver, depth + 1) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        resolved = resolver.lookup(schema["$ref"])
        target = _inlined(resolved.contents, resolved.resolver, depth + 1)
        siblings = {k: _inlined(v, resolver, depth + 1) for k, v in schema.items() if k != "$ref"}
        # In 2020-12 a $ref applies beside its siblings, exactly as an allOf member does.
        return {"allOf": [target], **siblings} if siblings else target
    return {key: _inlined(value, resolver, depth + 1) for key, value in schema.items()}


def _pointer(*parts: str) -> str:
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def _resolve(spec: Spec, node: dict[str, Any], uri: str) -> tuple[dict[str, Any], str]:
    """Follow the `$ref`s of a parameter, request body or response object to the object and its URI."""
    while "$ref" in node:
        uri = urljoin(uri, node["$ref"])
        node = spec.registry.resolver().lookup(uri).contents
    return node, uri


def _compile(spec: Spec) -> None:
    document = spec.document
    for path, item in document.get("paths", {}).items():
        shared = item.get("parameters", [])
        for method in HTTP_METHODS:
            if method not in item:
                continue
            op = item[method]
            base = spec.uri + _pointer("paths", path, method)
            located = [(spec.uri + _pointer("paths", path, "parameters", str(i)), raw) for i, raw in enumerate(shared)]
            located += [(f"{base}/parameters/{i}", raw) for i, raw in enumerate(op.get("parameters", []))]
            params = []
            for where, raw in located:
                param, where = _resolve(spec, raw, where)
                params.append(
                    Parameter(
                        name=param["name"],
                        location=param["in"],
                        required=bool(param.get("required", False)),
                        check=spec.check(where + "/schema"),
                    )
                )
            body = None
            body_required = False
            if "requestBody" in op:
                request_body, where = _resolve(spec, op["requestBody"], base + "/requestBody")
                body_required = bool(request_body.get("required", False))
                if "application/json" in request_body.get("content", {}):
                    body = spec.check(where + "/content/application~1json/schema")
            responses: dict[str, SchemaCheck | None] = {}
            for status, raw in op.get("responses", {}).items():
                response, where = _resolve(spec, raw, f"{base}/responses/{status}")
                content = response.get("content", {})
                responses[str(status)] = (
                    spec.check(where + "/content/application~1json/schema") if "application/json" in content else None
                )
            spec.operations[op["operationId"]] = Operation(
                operation_id=op["operationId"],
                method=method.upper(),
                path=path,
                parameters=tuple(params),
                body=body,
                body_required=body_required,
                responses=responses,
            )


# libyaml when present: the same safe semantics, many times faster (the pure-Python reader took about half
# of the start-up, reading the two specs).
FastSafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_document(path: Path) -> tuple[str, dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    loaded = yaml.load(text, Loader=FastSafeLoader)
    assert isinstance(loaded, dict), f"{path} is not an OpenAPI document"
    return text, loaded


@dataclass(frozen=True)
class Specs:
    public: Spec
    admin: Spec


def load_specs(public_path: Path | None = None, admin_path: Path | None = None) -> Specs:
    """Load both documents into one registry and compile their operations. Done once per process."""
    public_text, public_doc = read_document(public_path or data_path("openapi.yaml"))
    admin_text, admin_doc = read_document(admin_path or data_path("admin/openapi.yaml"))
    registry: Registry[Any] = Registry().with_resources(
        [
            (PUBLIC_URI, Resource.from_contents(public_doc, default_specification=DRAFT202012)),
            (ADMIN_URI, Resource.from_contents(admin_doc, default_specification=DRAFT202012)),
        ]
    )
    public = Spec(PUBLIC_URI, public_text, public_doc, registry)
    admin = Spec(ADMIN_URI, admin_text, admin_doc, registry)
    _compile(public)
    _compile(admin)
    return Specs(public, admin)
