"""The changes between two versions of an OpenAPI document, judged for a client of the old one: breaking (a call
it makes is refused, or an answer it reads changes under it) or not, each with a JSON pointer into the document
that holds it (the new one, or the old one for what was removed) and the part of a call it touches (`target`),
by which traffic.py finds the recorded calls it breaks.

Requests are judged as what a client sends (narrowing breaks, widening does not), responses as what it reads
(widening breaks: a type, a format, an enum value it does not know; a field gone or no longer sure to be there).
A path parameter renamed changes no call on the wire: the operations are paired by their paths with the
parameters' names left out."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mock_server.gate.calls import pointer
from mock_server.spec.openapi import HTTP_METHODS

JSON = "application/json"
MAX_SCHEMA_DEPTH = 48  # a recursive schema is compared this deep, no deeper
LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_PLACEHOLDER = re.compile(r"{[^{}]+}")


class SpecShapeError(Exception):
    """A document is not an OpenAPI document this comparison can read (a `$ref` it cannot follow...)."""


@dataclass(frozen=True)
class SpecChange:
    """One difference between the versions."""

    breaking: bool
    what: str
    where: str  # JSON pointer into the document that holds the thing changed
    operation: str  # "POST /limits/account" (the old path), or "" for the document as a whole
    side: str  # operation, request, response, parameter, security
    status: str | None = None  # the response's status, for a response change
    target: str = ""  # the part of a call it touches: /body/a/*/b, /query/name, /headers/name (lower case)
    renamed_to: str = ""  # a renamed or moved field or parameter: the part of a call it is now

    def line(self) -> str:
        return f"{self.operation}: {self.what} at {self.where}" if self.operation else f"{self.what} at {self.where}"


@dataclass(frozen=True)
class LocatedSchema:
    """A schema with its `$ref`s followed and its `allOf` members folded in, and where each part of it is written
    in its document: the pointers a change names."""

    schema: dict[str, Any]
    at: str
    properties_at: dict[str, str]
    items_at: str | None


@dataclass(frozen=True)
class _Side:
    """One version: its document, for `$ref`s, and which one it is (the messages name it)."""

    document: Mapping[str, Any]
    name: str  # "old" or "new"

    def lookup(self, ref: str) -> tuple[Any, str]:
        if not ref.startswith("#"):
            raise SpecShapeError(f"the {self.name} spec refers outside itself ({ref}): give it bundled")
        found: Any = self.document
        for part in ref[1:].split("/")[1:]:
            key = part.replace("~1", "/").replace("~0", "~")
            try:
                found = found[int(key)] if isinstance(found, list) else found[key]
            except (KeyError, IndexError, ValueError, TypeError):
                raise SpecShapeError(f"the {self.name} spec's {ref} points at nothing") from None
        return found, ref[1:]

    def locate(self, node: Any, at: str) -> tuple[Any, str]:
        """A parameter, request body or response object with its `$ref`s followed, and where it is written."""
        for _ in range(MAX_SCHEMA_DEPTH):
            if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
                return node, at
            node, at = self.lookup(node["$ref"])
        raise SpecShapeError(f"the {self.name} spec's references at {at} go round in a circle")

    def resolve(self, node: Any) -> Any:
        return self.locate(node, "")[0]

    def schema(self, node: Any, at: str, depth: int = 0) -> LocatedSchema:
        """The schema at `at`, located: properties and required joined over `allOf` (and a `$ref` with siblings,
        which OpenAPI 3.1 applies beside them); any other keyword from the first part that has it."""
        if depth > MAX_SCHEMA_DEPTH:
            raise SpecShapeError(f"the {self.name} spec's schema at {at} nests or refers too deeply")
        parts: list[tuple[Any, str]]
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            target, target_at = self.lookup(node["$ref"])
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            if not siblings:
                return self.schema(target, target_at, depth + 1)
            parts = [(target, target_at), (siblings, at)]
        elif isinstance(node, dict) and isinstance(node.get("allOf"), list):
            own = {k: v for k, v in node.items() if k != "allOf"}
            parts = [(own, at), *((m, f"{at}/allOf/{i}") for i, m in enumerate(node["allOf"]))]
        elif isinstance(node, dict):
            properties = _mapping(node, "properties")
            return LocatedSchema(
                node,
                at,
                {name: at + pointer("properties", name) for name in properties},
                at + "/items" if "items" in node else None,
            )
        else:
            return LocatedSchema({} if node is True or node is None else {"not": {}}, at, {}, None)
        merged: dict[str, Any] = {}
        properties_at: dict[str, str] = {}
        items_at = None
        for part, part_at in parts:
            located = self.schema(part, part_at, depth + 1)
            for key, value in located.schema.items():
                if key == "properties" and isinstance(value, dict):
                    merged["properties"] = {**value, **merged.get("properties", {})}
                elif key == "required" and isinstance(value, list):
                    merged["required"] = [*merged.get("required", []), *value]
                else:
                    merged.setdefault(key, value)
            for name, name_at in located.properties_at.items():
                properties_at.setdefault(name, name_at)
            items_at = items_at or located.items_at
        return LocatedSchema(merged, at, properties_at, items_at)


def _mapping(node: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The object under `key`, or an empty one when there is none (or something else is there)."""
    found = node.get(key)
    return found if isinstance(found, dict) else {}


def _types(schema: Mapping[str, Any]) -> set[str] | None:
    kind = schema.get("type")
    if kind is None:
        return None  # any type
    found = {kind} if isinstance(kind, str) else {str(k) for k in kind} if isinstance(kind, list) else set()
    if schema.get("nullable") is True:
        found.add("null")
    return found


def _accepts(types: set[str] | None, kind: str) -> bool:
    return types is None or kind in types or (kind == "integer" and "number" in types)


def _closed(schema: Mapping[str, Any]) -> bool:
    """Whether the object refuses fields it does not name."""
    return schema.get("additionalProperties") is False or schema.get("unevaluatedProperties") is False


def _field_text(field: tuple[str, ...]) -> str:
    return ".".join(field).replace(".*", "[]") or "the body"


class _Comparison:
    """The changes found in one run, with the context each comparison adds."""

    def __init__(self, old: _Side, new: _Side) -> None:
        self.old, self.new = old, new
        self.changes: list[SpecChange] = []

    def add(self, breaking: bool, what: str, where: str, operation: str, side: str, **more: Any) -> None:
        self.changes.append(SpecChange(breaking, what, where, operation, side, **more))

    # --- schemas -----------------------------------------------------------------------------------------------

    def schemas(
        self,
        old_raw: Any,
        old_at: str,
        new_raw: Any,
        new_at: str,
        operation: str,
        reading: bool,
        field: tuple[str, ...] = (),
        status: str | None = None,
        depth: int = 0,
    ) -> None:
        """Compare a schema's versions: `reading`, a response's (what the client reads), else a request's."""
        if depth > MAX_SCHEMA_DEPTH:
            return
        old_located, new_located = self.old.schema(old_raw, old_at), self.new.schema(new_raw, new_at)
        old, new = old_located.schema, new_located.schema
        side = "response" if reading else "request"
        target = "/body" + pointer(*field)
        name = _field_text(field)

        def add(breaking: bool, what: str, at: str = new_located.at) -> None:
            self.add(breaking, what, at, operation, side, status=status, target=target)

        old_types, new_types = _types(old), _types(new)
        if old_types != new_types:
            narrowed = old_types is None or any(not _accepts(new_types, t) for t in old_types)
            widened = new_types is None or any(not _accepts(old_types, t) for t in new_types)
            shown = f"{_shown_types(old_types)} -> {_shown_types(new_types)}"
            if reading:
                add(widened, f"response {name}: type {shown}")
            else:
                add(narrowed, f"request {name}: type {shown}" + (" (narrowed)" if narrowed else " (widened)"))
        if old.get("format") != new.get("format"):
            was, now = old.get("format"), new.get("format")
            text = f"{name}: format {was or 'none'} -> {now or 'none'}"
            add(bool(now) if not reading else bool(was), f"{side} {text}")
        self._enums(old, new, add, reading, name)
        if old.get("pattern") != new.get("pattern"):
            text = f"{side} {name}: pattern {old.get('pattern') or 'none'} -> {new.get('pattern') or 'none'}"
            add(not reading and new.get("pattern") is not None, text)
        for bound in (*LOWER_BOUNDS, *UPPER_BOUNDS):
            was, now = old.get(bound), new.get(bound)
            if was == now or isinstance(was, bool) or isinstance(now, bool):
                continue
            lower = bound in LOWER_BOUNDS
            if now is None:
                narrowed = False
            elif was is None:
                narrowed = True
            else:
                narrowed = now > was if lower else now < was
            shown = f"{'none' if was is None else was} -> {'none' if now is None else now}"
            add(not reading and narrowed, f"{side} {name}: {bound} {shown}")
        self._objects(old_located, new_located, operation, reading, field, status, depth, add)
        if "items" in old and "items" in new and old_located.items_at and new_located.items_at:
            self.schemas(
                old["items"],
                old_located.items_at,
                new["items"],
                new_located.items_at,
                operation,
                reading,
                (*field, "*"),
                status,
                depth + 1,
            )

    def _enums(self, old: Mapping[str, Any], new: Mapping[str, Any], add: Any, reading: bool, name: str) -> None:
        was, now = old.get("enum"), new.get("enum")
        if was == now:
            return
        side = "response" if reading else "request"
        if not isinstance(now, list):
            add(reading, f"{side} {name}: enum dropped (any value)")
            return
        if not isinstance(was, list):
            add(not reading, f"{side} {name}: now one of {_values(now)}")
            return
        added = [v for v in now if v not in was]
        removed = [v for v in was if v not in now]
        if added:
            add(reading, f"{side} {name}: enum value{'s' if len(added) > 1 else ''} {_values(added)} added")
        if removed:
            add(not reading, f"{side} {name}: enum value{'s' if len(removed) > 1 else ''} {_values(removed)} removed")

    def _objects(
        self,
        old_located: LocatedSchema,
        new_located: LocatedSchema,
        operation: str,
        reading: bool,
        field: tuple[str, ...],
        status: str | None,
        depth: int,
        add: Any,
    ) -> None:
        old, new = old_located.schema, new_located.schema
        old_props = _mapping(old, "properties")
        new_props = _mapping(new, "properties")
        old_required = set(old.get("required") or ()) if isinstance(old.get("required"), list) else set()
        new_required = set(new.get("required") or ()) if isinstance(new.get("required"), list) else set()
        old_at, new_at = old_located.properties_at, new_located.properties_at
        removed = [n for n in old_props if n not in new_props]
        added = [n for n in new_props if n not in old_props]
        renamed: dict[str, str] = {}
        if not reading:  # a field renamed: one gone, one new of the same schema, in the same object
            for gone in removed:
                was = self.old.schema(old_props[gone], old_at[gone]).schema
                same = next(
                    (
                        n
                        for n in added
                        if n not in renamed.values() and self.new.schema(new_props[n], new_at[n]).schema == was
                    ),
                    None,
                )
                if same is not None:
                    renamed[gone] = same
        side = "response" if reading else "request"

        def change(breaking: bool, what: str, at: str, name: str, renamed_to: str = "") -> None:
            target = "/body" + pointer(*field, name)
            self.add(breaking, what, at, operation, side, status=status, target=target, renamed_to=renamed_to)

        for gone in removed:
            text = _field_text((*field, gone))
            if gone in renamed:
                now = renamed[gone]
                what = f"request field {text} renamed to {now}"
                change(True, what, new_at[now], gone, "/body" + pointer(*field, now))
            elif reading:
                change(True, f"response field {text} removed", old_at[gone], gone)
            else:
                change(_closed(new), f"request field {text} removed", old_at[gone], gone)
        for name in added:
            if name in renamed.values():
                continue
            required = name in new_required
            what = f"{side} field {_field_text((*field, name))} added" + (
                " (required)" if required and not reading else ""
            )
            change(not reading and required, what, new_at[name], name)
        for name in old_props:
            if name not in new_props:
                continue
            text = _field_text((*field, name))
            at = new_at[name]
            if not reading and name in new_required and name not in old_required:
                change(True, f"request field {text} newly required", at, name)
            elif not reading and name in old_required and name not in new_required:
                change(False, f"request field {text} now optional", at, name)
            elif reading and name in old_required and name not in new_required:
                change(True, f"response field {text} no longer always present", at, name)
            elif reading and name not in old_required and name in new_required:
                change(False, f"response field {text} now always present", at, name)
            self.schemas(
                old_props[name],
                old_at[name],
                new_props[name],
                at,
                operation,
                reading,
                (*field, name),
                status,
                depth + 1,
            )
        if not reading and not _closed(old) and _closed(new):
            add(True, f"request {_field_text(field)}: fields it does not name now refused")
        elif not reading and _closed(old) and not _closed(new):
            add(False, f"request {_field_text(field)}: fields it does not name now allowed")


def _shown_types(types: set[str] | None) -> str:
    return "any" if types is None else "|".join(sorted(types))


def _values(values: Iterable[Any]) -> str:
    return ", ".join(str(v) for v in values)


# --- operations, parameters, bodies, responses, security ---------------------------------------------------------


def _operations(side: _Side) -> dict[tuple[str, str], tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """(METHOD, path with its parameters unnamed) -> (method, path, the operation, its path item)."""
    paths = side.document.get("paths")
    if not isinstance(paths, dict):
        raise SpecShapeError(f"the {side.name} spec has no paths")
    found = {}
    for path, raw_item in paths.items():
        item = side.resolve(raw_item)
        if not isinstance(item, dict):
            continue
        for method in HTTP_METHODS:
            operation = item.get(method)
            if isinstance(operation, dict):
                found[(method.upper(), _PLACEHOLDER.sub("{}", str(path)))] = (method, str(path), operation, item)
    return found


def _parameters(
    side: _Side, operation: Mapping[str, Any], item: Mapping[str, Any], where: str
) -> dict[tuple[str, str], tuple[str, Any]]:
    """(location, name; a header's in lower case) -> (its pointer, the parameter): the operation's over its path
    item's. `where` is the operation's pointer."""
    found: dict[tuple[str, str], tuple[str, Any]] = {}
    item_where = where.rsplit("/", 1)[0]
    located = [(f"{item_where}/parameters/{i}", raw) for i, raw in enumerate(item.get("parameters") or ())]
    located += [(f"{where}/parameters/{i}", raw) for i, raw in enumerate(operation.get("parameters") or ())]
    for written_at, raw in located:
        parameter, at = side.locate(raw, written_at)
        if isinstance(parameter, dict) and "name" in parameter and "in" in parameter:
            name = str(parameter["name"])
            found[(str(parameter["in"]), name.lower() if parameter["in"] == "header" else name)] = (at, parameter)
    return found


def _security(side: _Side, operation: Mapping[str, Any]) -> list[frozenset[str]]:
    """The operation's alternatives of security schemes; an empty one means open."""
    raw = operation.get("security", side.document.get("security", []))
    if not isinstance(raw, list) or not raw:
        return [frozenset()]
    return [frozenset(r) for r in raw if isinstance(r, dict)]


def _json_schema(side: _Side, holder: Any, at: str) -> tuple[bool, Any, str]:
    """(whether it has a JSON content, its schema, where that is written) of a request body or response object."""
    holder, at = side.locate(holder, at)
    content = holder.get("content") if isinstance(holder, dict) else None
    if not isinstance(content, dict):
        return False, None, at
    for media, entry in content.items():
        if str(media).split(";")[0].strip().lower() == JSON and isinstance(entry, dict):
            return True, entry.get("schema", {}), at + pointer("content", str(media), "schema")
    return False, None, at


class _Operations(_Comparison):
    def run(self) -> list[SpecChange]:
        old_ops, new_ops = _operations(self.old), _operations(self.new)
        for key, (method, path, old_op, old_item) in old_ops.items():
            name = f"{key[0]} {path}"
            where_old = pointer("paths", path, method)
            if key not in new_ops:
                self.add(True, "operation removed", where_old, name, "operation")
                continue
            _, new_path, new_op, new_item = new_ops[key]
            where = pointer("paths", new_path, method)
            if new_path != path:
                self.add(
                    False,
                    f"path parameter renamed: {path} -> {new_path}",
                    pointer("paths", new_path),
                    name,
                    "operation",
                )
            self._parameters(old_op, old_item, new_op, new_item, where_old, where, name)
            self._body(old_op, new_op, where_old, where, name)
            self._responses(old_op, new_op, where_old, where, name)
            old_security, new_security = _security(self.old, old_op), _security(self.new, new_op)
            open_before = frozenset() in old_security
            if set(old_security) != set(new_security):
                lost = [alt for alt in old_security if alt not in new_security and frozenset() not in new_security]
                schemes = ", ".join(sorted({s for alt in new_security for s in alt})) or "none"
                what = ("security added: " if open_before else "security changed: ") + schemes
                declared = where + "/security" if "security" in new_op else "/security"
                self.add(bool(lost), what, declared, name, "security")
        for key, (method, path, _, _) in new_ops.items():
            if key not in old_ops:
                self.add(False, "operation added", pointer("paths", path, method), f"{key[0]} {path}", "operation")
        return self.changes

    def _parameters(
        self,
        old_op: Mapping[str, Any],
        old_item: Mapping[str, Any],
        new_op: Mapping[str, Any],
        new_item: Mapping[str, Any],
        old_where: str,
        where: str,
        name: str,
    ) -> None:
        old_params = _parameters(self.old, old_op, old_item, old_where)
        new_params = _parameters(self.new, new_op, new_item, where)
        gone = [k for k in old_params if k not in new_params and k[0] != "path"]
        fresh = [k for k in new_params if k not in old_params and k[0] != "path"]
        paired: set[tuple[str, str]] = set()
        for key in gone:
            location = key[0]
            old_at, old_param = old_params[key]
            param = old_param["name"]
            target = _target(*key)
            moved = next((k for k in fresh if k[1].lower() == key[1].lower() and k[0] != location), None)
            renamed = next((k for k in fresh if k[0] == location and k not in paired), None)
            if moved is not None:
                paired.add(moved)
                at = new_params[moved][0]
                what = f"{location} parameter {param} moved to {moved[0]}"
                self.add(True, what, at, name, "parameter", target=target, renamed_to=_target(*moved))
            elif renamed is not None:
                paired.add(renamed)
                at, now = new_params[renamed]
                what = f"{location} parameter {param} renamed to {now['name']}"
                self.add(True, what, at, name, "parameter", target=target, renamed_to=_target(*renamed))
            else:
                self.add(False, f"{location} parameter {param} removed", old_at, name, "parameter", target=target)
        for key in fresh:
            at, parameter = new_params[key]
            required = bool(parameter.get("required"))
            if key in paired:
                continue
            what = f"{key[0]} parameter {parameter['name']} added" + (" (required)" if required else "")
            self.add(required, what, at, name, "parameter", target=_target(*key))
        for key, (_, old_param) in old_params.items():
            if key not in new_params:
                continue
            at, new_param = new_params[key]
            target = _target(*key)
            label = f"{key[0]} parameter {new_param['name']}"
            if new_param.get("required") and not old_param.get("required"):
                self.add(True, f"{label} newly required", at, name, "parameter", target=target)
            before = len(self.changes)
            old_schema_at = old_params[key][0] + "/schema"
            self.schemas(
                old_param.get("schema", {}), old_schema_at, new_param.get("schema", {}), at + "/schema", name, False
            )
            for index in range(before, len(self.changes)):  # a parameter's value, not a body field
                change = self.changes[index]
                what = change.what.replace("request the body", label)
                self.changes[index] = SpecChange(change.breaking, what, change.where, name, "parameter", target=target)

    def _body(
        self, old_op: Mapping[str, Any], new_op: Mapping[str, Any], old_where: str, where: str, name: str
    ) -> None:
        old_body, _ = self.old.locate(old_op.get("requestBody"), old_where + "/requestBody")
        new_body, at = self.new.locate(new_op.get("requestBody"), where + "/requestBody")
        old_required = isinstance(old_body, dict) and bool(old_body.get("required"))
        new_required = isinstance(new_body, dict) and bool(new_body.get("required"))
        if new_required and not old_required:
            self.add(True, "request body newly required", at, name, "request", target="/body")
        elif old_required and not new_required:
            self.add(False, "request body now optional", at, name, "request", target="/body")
        old_json, old_schema, old_at = _json_schema(self.old, old_body, old_where + "/requestBody")
        new_json, new_schema, new_at = _json_schema(self.new, new_body, at)
        if old_json and not new_json:
            self.add(True, f"request body no longer takes {JSON}", at, name, "request", target="/body")
        elif old_json and new_json:
            self.schemas(old_schema, old_at, new_schema, new_at, name, False)

    def _responses(
        self, old_op: Mapping[str, Any], new_op: Mapping[str, Any], old_where: str, where: str, name: str
    ) -> None:
        old_responses = _mapping(old_op, "responses")
        new_responses = _mapping(new_op, "responses")
        for status, old_response in old_responses.items():
            status = str(status)
            at = where + pointer("responses", status)
            if status not in {str(s) for s in new_responses}:
                self.add(
                    True,
                    f"status {status} removed",
                    old_where + pointer("responses", status),
                    name,
                    "response",
                    status=status,
                )
                continue
            new_response = next(v for s, v in new_responses.items() if str(s) == status)
            old_json, old_schema, old_at = _json_schema(
                self.old, old_response, old_where + pointer("responses", status)
            )
            new_json, new_schema, new_at = _json_schema(self.new, new_response, at)
            if old_json and not new_json:
                self.add(
                    True,
                    f"status {status}: no {JSON} body any more",
                    at,
                    name,
                    "response",
                    status=status,
                    target="/body",
                )
            elif old_json and new_json:
                before = len(self.changes)
                self.schemas(old_schema, old_at, new_schema, new_at, name, True, status=status)
                for index in range(before, len(self.changes)):
                    change = self.changes[index]
                    self.changes[index] = SpecChange(
                        change.breaking,
                        f"status {status}: {change.what}",
                        change.where,
                        name,
                        "response",
                        status,
                        change.target,
                    )
        for status in new_responses:
            if str(status) not in {str(s) for s in old_responses}:
                self.add(
                    False,
                    f"status {status} added",
                    where + pointer("responses", str(status)),
                    name,
                    "response",
                    status=str(status),
                )


def _target(location: str, name: str) -> str:
    return pointer(
        {"query": "query", "header": "headers", "cookie": "cookies"}.get(location, location),
        name.lower() if location == "header" else name,
    )


def compare(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[SpecChange]:
    """Every change from `old` to `new` (two OpenAPI documents), breaking ones first, each group in the order
    of the old document's operations. SpecShapeError when a document cannot be read as OpenAPI."""
    changes = _Operations(_Side(old, "old"), _Side(new, "new")).run()
    return [c for c in changes if c.breaking] + [c for c in changes if not c.breaking]


def breaking(changes: Iterable[SpecChange]) -> Iterator[SpecChange]:
    return (c for c in changes if c.breaking)
