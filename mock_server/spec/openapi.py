"""The OpenAPI documents, loaded once, and the request validators compiled from their own schemas.

Nothing here restates a rule: every check is the spec's JSON Schema (2020-12, as OpenAPI 3.1 says),
so what the spec allows the server accepts and what it forbids the server rejects.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urljoin

import jsonschema_rs
import orjson

from mock_server.domain.documents import is_valid_document
from mock_server.domain.errors import Detail, FieldPath
from mock_server.domain.words import counted
from mock_server.spec.resources import data_path

if TYPE_CHECKING:
    import yaml
    from referencing import Registry

# Base URIs under which the two documents are registered: the admin document refers to the public one
# as `../openapi.yaml`, which resolves the same way on disk and over HTTP (/__mock/openapi.yaml -> /openapi.yaml).
PUBLIC_URI = "http://mock-server/openapi.yaml"
ADMIN_URI = "http://mock-server/__mock/openapi.yaml"
HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


# A rejected request lists at most this many fields in `details` (the message says how many more problems
# there were, in a last entry): a 1 MiB body of bad items would otherwise answer with a 10 MB error. Scenario files pass
# `limit=None`: `mock-server check` prints every problem.
MAX_DETAILS = 100
# A value is named in a message only when its JSON is this short; a long one is described, never echoed.
SHORT_VALUE = 40
_UNKNOWN = "is not a known field"

_TYPE_NAMES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "object": "an object",
    "array": "an array",
    "boolean": "a boolean",
    "null": "null",
}
_FORMAT_NAMES = {
    "date-time": "an RFC 3339 date-time with an offset, like 2026-11-21T10:00:00-03:00",
    "date": "an RFC 3339 date, like 2026-11-21",
    "time": "an RFC 3339 time with an offset, like 10:00:00-03:00",
    "uuid": "a UUID",
    "br-document": "a valid CPF or CNPJ: wrong check digits, or one repeated digit",
}


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError):
        return repr(value)


def _short(value: Any) -> str | None:
    """The value as JSON when that is short enough to name in a message, else None."""
    if isinstance(value, (dict, list)) and len(value) > SHORT_VALUE // 2:
        return None  # never encode a big container just to find it is too long
    text = _json(value)
    return text if len(text) <= SHORT_VALUE else None


def _got(value: Any) -> str:
    shown = _short(value)
    return f" (got {shown})" if shown is not None else ""


def _plural(count: Any, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _reason(schema: Any, schema_path: Iterable[str | int]) -> str | None:
    """The `description` of the innermost subschema along `schema_path` that has one: why a rule the schema can
    only state as `false` or `not` holds (the admin spec's FaultRequest: "kind reset answers nothing")."""
    reason = None
    node = schema
    for part in schema_path:
        if isinstance(node, dict) and isinstance(node.get("description"), str):
            reason = node["description"]
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
    return reason


def _explain(
    error: jsonschema_rs.ValidationError, prefix: FieldPath, instance: Any, schema: Any = None
) -> list[tuple[FieldPath, str, bool]]:
    """(field, message, is an unevaluated key) for one jsonschema-rs error, in JSON terms (issue 12):
    `must be an integer`, `must have at most 2 items`, naming the value only when it is short.
    `instance` is the whole value as received (the error's own may be a shortened copy's); `schema` the one
    validated against, where a `false` or `not` finds its reason."""
    path = prefix + tuple(error.instance_path)
    kind = error.kind
    name = kind.name
    info = kind.as_dict()
    value = error.instance
    if name == "required":
        return [((*path, info["property"]), "is required", False)]
    if name in ("additionalProperties", "unevaluatedProperties"):
        unevaluated = name == "unevaluatedProperties"
        return [((*path, key), _UNKNOWN, unevaluated) for key in info["unexpected"]]
    if name == "enum":  # CONTRACT 1's layout: 'payed' is not one of pending_conciliation, paid, canceled
        allowed = ", ".join(str(v) if isinstance(v, str) else _json(v) for v in info["options"])
        shown = repr(value) if isinstance(value, str) and _short(value) else _short(value)
        return [(path, f"{shown} is not one of {allowed}" if shown else f"must be one of {allowed}", False)]
    if name == "type":
        types = " or ".join(_TYPE_NAMES.get(t, t) for t in sorted(info["types"], key=lambda t: t == "null"))
        message = f"must be {types}"
    elif name == "const":
        message = f"must be {_json(info['expected_value'])}"
    elif name == "format":
        message = f"must be {_FORMAT_NAMES.get(info['format'], 'in the format ' + repr(info['format']))}"
    elif name == "pattern":
        message = f"must match the pattern {info['pattern']}"
    elif name == "minimum":
        message = f"must be at least {info['limit']}"
    elif name == "maximum":
        message = f"must be at most {info['limit']}"
    elif name == "exclusiveMinimum":
        message = f"must be more than {info['limit']}"
    elif name == "exclusiveMaximum":
        message = f"must be less than {info['limit']}"
    elif name == "minLength":
        limit = info["limit"]
        message = "must not be empty" if limit == 1 else f"must be at least {_plural(limit, 'character')} long"
    elif name == "maxLength":
        size = len(str(value))
        return [(path, f"must be at most {_plural(info['limit'], 'character')} long (it has {size})", False)]
    elif name in ("minItems", "maxItems", "minProperties", "maxProperties"):
        word = "item" if name.endswith("Items") else "field"
        bound = "at least" if name.startswith("min") else "at most"
        size = len(_at(instance, error.instance_path))
        return [(path, f"must have {bound} {_plural(info['limit'], word)} (it has {size})", False)]
    elif name in ("falseSchema", "not"):  # a combination the schema forbids: its description says why
        reason = _reason(schema, error.schema_path)
        message = f"is not allowed: {reason}" if reason else "is not allowed here"
    else:  # a keyword our specs do not use today: its own words, without the value
        message = f"does not satisfy `{name}`"
    return [(path, message + _got(value), False)]


def _within(paths: Iterable[FieldPath]) -> set[FieldPath]:
    """Every path and every path that holds one: linear in their total length."""
    return {path[:n] for path in paths for n in range(len(path) + 1)}


def _compiled(schema: Any) -> jsonschema_rs.Validator:
    return jsonschema_rs.Draft202012Validator(schema, validate_formats=True, formats={"br-document": is_valid_document})


class _Pending:
    """A check's validator before its first use: compiles it, then answers through it."""

    __slots__ = ("check",)

    def __init__(self, check: SchemaCheck) -> None:
        self.check = check

    def is_valid(self, instance: Any) -> bool:
        return bool(self.check.compiled().is_valid(instance))

    def iter_errors(self, instance: Any) -> Any:
        return self.check.compiled().iter_errors(instance)


class SchemaCheck:
    """One schema of the spec, compiled by jsonschema-rs (the engine schemathesis itself judges requests with).

    It gives the verdict in about a microsecond and every problem with its place and its kind, from which
    the messages are written here. Problems are collected in one pass, linear in their number (issue 16:
    comparing each with every other took 19 s for 10,000 bad items), and at most `limit` fields are listed.
    ECMA-262 patterns: `"06:00:00Z\n"` does not match `^...$`, where Python's `re.search` would let it through.

    A spec's checks are made when first used (`later`): most of them (the admin API's, every response's) wait
    for a call that may never come, and inlined and compiled at start-up they were a sixth of a new server's
    memory and a third of its start.
    """

    __slots__ = ("_longest", "_make", "_schema", "fast")

    fast: jsonschema_rs.Validator | _Pending  # a _Pending until first used, then the engine's validator

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make: Callable[[], Any] | None = make
        self._schema: Any = None
        self._longest = 0
        self.fast = _Pending(self)

    @classmethod
    def of(cls, schema: Any) -> SchemaCheck:
        return cls(lambda: schema)

    @classmethod
    def later(cls, make: Callable[[], Any]) -> SchemaCheck:
        """The check of the schema `make()` gives, called when the check is first used."""
        return cls(make)

    def _made(self) -> None:
        if self._make is not None:
            self._schema = self._make()
            self._longest = _largest_max_items(self._schema)
            self._make = None

    @property
    def schema(self) -> Any:
        """The inlined schema (for the messages, Pact's matching rules, tests that compare engines)."""
        self._made()
        return self._schema

    @property
    def longest_list(self) -> int:
        """The largest `maxItems` in the schema: lists are examined at least this far."""
        self._made()
        return self._longest

    def compiled(self) -> jsonschema_rs.Validator:
        """The engine's validator, compiled now if it was not yet (then `fast` is it, with no indirection)."""
        fast = self.fast
        if isinstance(fast, _Pending):
            fast = self.fast = _compiled(self.schema)
        return fast

    def of_lists(self) -> SchemaCheck:
        """The check of a list of such values, in one call (a big scenario's events a batch at a time: a quarter
        less time than one call an event)."""
        return SchemaCheck.of({"type": "array", "items": self.schema})

    def problems(self, instance: Any, prefix: FieldPath = (), limit: int | None = MAX_DETAILS) -> list[Detail]:
        """CONTRACT 2: one entry per invalid field, several problems of one field joined in its message;
        sorted by field. Beyond `limit` fields, one last entry at `prefix` says how many problems were left out."""
        try:
            if self.fast.is_valid(instance):
                return []
        except ValueError as exc:  # the engine stops at 255 levels: bodies never get here (wire/decoding.py)
            if "Recursion limit" not in str(exc):
                raise
            return [Detail(prefix, "nests lists and objects too deeply to be judged")]
        # A list is examined past its `maxItems` (an event's 1000 instalments): a longer one must fail on the copy.
        keep = max(limit, self.longest_list) + 1 if limit is not None else 0
        examined, cut = (instance, False) if limit is None else _preview(instance, keep)
        messages: dict[FieldPath, list[str]] = {}
        unevaluated: list[FieldPath] = []
        left_out = 0
        errors = self.compiled().iter_errors(examined)
        for error in errors:
            if limit is not None and len(messages) >= limit:
                left_out += 1 + sum(1 for _ in errors)  # counted, not explained
                break
            for path, message, is_unevaluated in _explain(error, prefix, instance, self.schema):
                found = messages.get(path)
                if found is None:
                    if limit is not None and len(messages) >= limit:
                        left_out += 1
                        continue
                    found = messages[path] = []
                if message not in found:
                    found.append(message)
                if is_unevaluated:
                    unevaluated.append(path)
        if unevaluated:
            # A key whose value failed its own schema is "unevaluated" too (a failed subschema evaluates
            # nothing, JSON Schema 2020-12): its real problem is said already, "not a known field" would mislead.
            others = _within(p for p, found in messages.items() if found != [_UNKNOWN])
            for path in unevaluated:
                found = messages.get(path, [])
                if path in others and _UNKNOWN in found:
                    found.remove(_UNKNOWN)
                    if not found:
                        del messages[path]
        details = sorted((Detail(path, "; ".join(found)) for path, found in messages.items()), key=lambda d: d.field)
        if cut and limit is not None:
            more = (
                "more problems may follow"
                if not left_out
                else f"at least {counted(left_out, 'more problem')} not listed"
            )
            details.append(
                Detail(
                    prefix,
                    f"{more} (details stop at {limit} fields; lists are examined up to their first {keep} items)",
                )
            )
        elif left_out:
            details.append(
                Detail(prefix, f"{counted(left_out, 'more problem')} not listed (details stop at {limit} fields)")
            )
        return details


def _largest_max_items(schema: Any) -> int:
    """The largest `maxItems` anywhere in an (inlined) schema, 0 if none."""
    largest = 0
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            bound = node.get("maxItems")
            if isinstance(bound, int) and not isinstance(bound, bool):
                largest = max(largest, bound)
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return largest


def _preview(instance: Any, keep: int) -> tuple[Any, bool]:
    """A copy of `instance` whose lists hold their first `keep` items only, and whether any was cut.

    What `limit` details can show lies in those items: a list's own bounds (`maxItems` 2) still fail on
    the copy, and the engine's work no longer grows with the body (a 1 MiB body of 350,000 empty windows
    gave 700,000 errors, seconds of work). Iterative: a body may nest as deep as the JSON parser goes."""
    if not isinstance(instance, (list, dict)):
        return instance, False
    cut = False
    root: list[Any] = [None]
    pending: list[tuple[Any, Any, Any]] = [(root, 0, instance)]  # (container, key, value to copy into it)
    while pending:
        container, key, value = pending.pop()
        if isinstance(value, list):
            if len(value) > keep:
                cut = True
            copy: Any = [None] * min(len(value), keep)
            pending.extend((copy, i, item) for i, item in enumerate(value[:keep]))
        elif isinstance(value, dict):
            copy = dict.fromkeys(value)
            pending.extend((copy, k, item) for k, item in value.items())
        else:
            copy = value
        container[key] = copy
    return root[0], cut


def _at(instance: Any, path: Iterable[str | int]) -> Any:
    for part in path:
        instance = instance[part]
    return instance


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
    body_media_types: tuple[str, ...] = ()  # the request body's media types, as the spec lists them

    def response_problems(self, status: int, body: Any, has_body: bool = True) -> list[Detail] | None:
        """How an answer of `status` with `body` (decoded JSON; `has_body` False: none was sent) contradicts the
        operation's responses: None when the status is not documented (not as itself, `4XX` or `default`)."""
        key = str(status)
        if key not in self.responses:
            key = f"{key[0]}XX" if f"{key[0]}XX" in self.responses else "default"
        if key not in self.responses:
            return None
        check = self.responses[key]
        if check is None:
            return [Detail((), f"status {status} documents no body")] if has_body else []
        if not has_body:
            return [Detail((), f"status {status} documents a body, none was sent")]
        return check.problems(body)


class _Documents:
    """The loaded documents by URI, where a `$ref` (a URI, relative to the one it is written in) is looked up:
    a JSON pointer into one of them. The specs use no `$id` or anchor, so this is all their references need,
    without importing a JSON Schema registry at start-up."""

    def __init__(self, documents: dict[str, dict[str, Any]]) -> None:
        self.by_uri = documents
        self._registry: Registry[Any] | None = None

    def lookup(self, ref: str, base: str) -> tuple[Any, str]:
        """What `ref`, written in the document at `base`, points at, and its URI (the base of its own refs)."""
        uri = _joined(base, ref)
        where, _, pointer = uri.partition("#")
        node: Any = self.by_uri[where]
        for part in pointer.split("/")[1:] if pointer else ():
            key = unquote(part).replace("~1", "/").replace("~0", "~")
            node = node[int(key)] if isinstance(node, list) else node[key]
        return node, uri

    @property
    def registry(self) -> Registry[Any]:
        """The same documents as a `referencing` registry (for tools and tests that resolve with it)."""
        if self._registry is None:
            from referencing import Registry, Resource
            from referencing.jsonschema import DRAFT202012

            self._registry = Registry().with_resources(
                (uri, Resource.from_contents(document, default_specification=DRAFT202012))
                for uri, document in self.by_uri.items()
            )
        return self._registry


@dataclass
class Spec:
    """One OpenAPI document with its operations compiled."""

    uri: str
    text: str  # the file as written (served as is, comments and order kept)
    document: dict[str, Any]
    documents: _Documents  # every loaded document, where its `$ref`s are looked up
    operations: dict[str, Operation] = field(default_factory=dict)

    @property
    def registry(self) -> Registry[Any]:
        return self.documents.registry

    def check(self, ref: str) -> SchemaCheck:
        """A validator for the schema at `ref`: a pointer such as `#/components/schemas/Error`, or a full URI."""
        return SchemaCheck.later(lambda: _inlined({"$ref": ref}, self.documents, self.uri))

    def paths(self) -> dict[str, list[Operation]]:
        by_path: dict[str, list[Operation]] = {}
        for operation in self.operations.values():
            by_path.setdefault(operation.path, []).append(operation)
        return by_path


def _inlined(schema: Any, documents: _Documents, base: str, depth: int = 0) -> Any:
    """`schema` with every `$ref` replaced by what it points at, resolved once at start-up.

    Validation then never resolves a reference per request (that was most of its cost), and the rules
    are still exactly the spec's. Our schemas are not recursive; the depth guard says so loudly if one becomes so.
    """
    if depth > 64:
        raise ValueError("the spec's schemas nest too deeply (a recursive $ref?)")
    if isinstance(schema, list):
        return [_inlined(item, documents, base, depth + 1) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        contents, where = documents.lookup(schema["$ref"], base)
        target = _inlined(contents, documents, where, depth + 1)
        siblings = {k: _inlined(v, documents, base, depth + 1) for k, v in schema.items() if k != "$ref"}
        # In 2020-12 a $ref applies beside its siblings, exactly as an allOf member does.
        return {"allOf": [target], **siblings} if siblings else target
    return {key: _inlined(value, documents, base, depth + 1) for key, value in schema.items()}


@functools.lru_cache(maxsize=1024)
def _referred(base: str, ref: str) -> str:
    return urljoin(base, ref)


def _joined(base: str, ref: str) -> str:
    """urljoin(base, ref): a reference within the same document (`#/...`, six in seven of the specs' `$ref`s) is
    the base without its fragment, and that fragment, as urljoin makes it, without parsing either URI (urljoin
    was two thirds of compiling the specs' operations); any other reference is joined by urljoin."""
    if len(ref) > 1 and ref[0] == "#":
        return base.partition("#")[0] + ref
    return _referred(base, ref)


def _pointer(*parts: str) -> str:
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def _resolve(spec: Spec, node: dict[str, Any], uri: str) -> tuple[dict[str, Any], str]:
    """Follow the `$ref`s of a parameter, request body or response object to the object and its URI."""
    while "$ref" in node:
        node, uri = spec.documents.lookup(node["$ref"], uri)
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
            media_types: tuple[str, ...] = ()
            if "requestBody" in op:
                request_body, where = _resolve(spec, op["requestBody"], base + "/requestBody")
                body_required = bool(request_body.get("required", False))
                media_types = tuple(request_body.get("content", {}))
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
                body_media_types=media_types,
            )


@functools.cache
def fast_safe_loader() -> type[yaml.SafeLoader]:
    """libyaml's safe loader when present: the same safe semantics, many times faster (the pure-Python reader was
    a large share of the start-up, reading the two specs). PyYAML is imported by the first YAML read: a start
    whose specs and scenarios come from their caches never imports it."""
    import yaml

    loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return loader


def file_stamp(path: str) -> str:
    """What tells a file of code from another: its path, size and modification time (which an upgrade or a
    reinstall changes) and, up to 1 MiB (a module's source, a package's `__init__` holding its version), the
    SHA-256 of its bytes (for an installer that keeps the modification times its archive holds)."""
    status = os.stat(path)
    stamp = f"{path}:{status.st_size}:{status.st_mtime_ns}"
    if status.st_size > 1 << 20:
        return stamp
    with open(path, "rb") as source:
        return f"{stamp}:{hashlib.sha256(source.read()).hexdigest()}"


@functools.cache
def library_stamp(name: str) -> str:
    """What tells an installed library's release from another without importing it (its version would): the
    stamp of its top module's file (`file_stamp`)."""
    found = importlib.util.find_spec(name)
    if found is None or found.origin is None:
        return "absent"
    return file_stamp(found.origin)


def read_document(path: Path) -> tuple[str, dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    loaded = _parsed(path, text)
    assert isinstance(loaded, dict), f"{path} is not an OpenAPI document"
    return text, loaded


# What the YAML parser made of a spec file, as JSON, beside it in `__pycache__/` as Python keeps byte code: reading
# the two specs' YAML (even with libyaml) was a seventh of a server's start, their JSON takes a fortieth of that.
# The cache holds the SHA-256 of the text it was parsed from and PyYAML's release (`library_stamp`), and is used only
# when both match.
_PARSED_FORMAT = 2


def _parsed_cache(path: Path) -> Path:
    return path.parent / "__pycache__" / f"{path.name}.parsed.json"


def _parsed(path: Path, text: str) -> Any:
    """`text` (the file at `path`) as the safe YAML loader reads it: from the cache when it is that text's, else
    parsed now and the cache written (when Python would write byte code: not under PYTHONDONTWRITEBYTECODE)."""
    key = {"format": _PARSED_FORMAT, "yaml": library_stamp("yaml"), "sha256": hashlib.sha256(text.encode()).hexdigest()}
    cache = _parsed_cache(path)
    try:
        held = orjson.loads(cache.read_bytes())  # what json.loads gives for JSON json.dumps wrote, twice as fast
        if isinstance(held, dict) and held.get("key") == key:
            return held["document"]
    except (OSError, ValueError):
        pass  # none yet, or unreadable: parsed as if there were none
    import yaml

    document = yaml.load(text, Loader=fast_safe_loader())
    if not sys.dont_write_bytecode:
        write_cache(cache, key, document, path)
    return document


def write_cache(cache: Path, key: dict[str, Any], document: Any, source: Path) -> None:
    """The cache of `source` (a spec's parse, a shipped scenario's: scenarios/validated.py) written whole or not at
    all; not at all when JSON would not give `document` back exactly (a date, a key that is no string, a NaN) or
    the directory is not writable."""
    try:
        encoded = json.dumps({"key": key, "document": document}, ensure_ascii=False, allow_nan=False)
        if json.loads(encoded)["document"] != document:
            return
        cache.parent.mkdir(exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=cache.parent, prefix=f".{cache.name}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(encoded)
            os.chmod(temporary, source.stat().st_mode & 0o666)  # readable by whoever reads the spec, as byte code is
            os.replace(temporary, cache)
        except BaseException:
            os.unlink(temporary)
            raise
    except (OSError, TypeError, ValueError):
        return  # a read-only install, a full disk, a value JSON cannot hold: the next start parses the YAML again


@dataclass(frozen=True)
class Specs:
    public: Spec
    admin: Spec


def compile_document(document: dict[str, Any], text: str = "", uri: str = PUBLIC_URI) -> Spec:
    """One OpenAPI document on its own (not the shipped pair) with its operations compiled: a spec version a gate
    compares or checks a pact against. Its schemas are inlined when first used: a `$ref` outside the document
    raises KeyError there."""
    spec = Spec(uri, text, document, _Documents({uri: document}))
    _compile(spec)
    return spec


def load_specs(public_path: Path | None = None, admin_path: Path | None = None) -> Specs:
    """Load both documents into one registry and compile their operations. Done once per process."""
    public_text, public_doc = read_document(public_path or data_path("openapi.yaml"))
    admin_text, admin_doc = read_document(admin_path or data_path("admin/openapi.yaml"))
    documents = _Documents({PUBLIC_URI: public_doc, ADMIN_URI: admin_doc})
    public = Spec(PUBLIC_URI, public_text, public_doc, documents)
    admin = Spec(ADMIN_URI, admin_text, admin_doc, documents)
    _compile(public)
    _compile(admin)
    return Specs(public, admin)
