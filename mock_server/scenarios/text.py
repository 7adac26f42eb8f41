"""A scenario file's text -> its JSON data, safely, or located problems: never a traceback, never a signal.

Bounds (issue 16), each a problem with its place rather than a crash or an exhausted machine:
- nesting deeper than MAX_DEPTH levels (libyaml's composer recurses in C: ~30,000 levels killed the process);
- aliases that repeat more than MAX_REPEATED_NODES nodes in all (a 450-byte "billion laughs" ran past 60 s
  and 4.8 GB);
- tags other than JSON's own values (`!!binary`, `!!set`, `!!python/...` are never constructed);
- a key twice in one mapping (YAML says keys are unique; PyYAML kept the last silently);
- a lone UTF-16 surrogate (`"\\ud800"`): JSON cannot carry it back, every answer naming it would fail.

The text is read one of three ways, all with the same verdicts:
- JSON syntax (the file starts with `{`): the json module;
- plain YAML (`read_fast_yaml`): rapidyaml parses it and writes it as JSON, which the json module reads with
  PyYAML's own number rules applied to each number as written; any text it cannot vouch for goes on to
- libyaml, screened event by event before anything is composed (`_screen`), then composed and constructed by
  PyYAML's safe loader with what JSON cannot hold kept as written: the reference every other way must equal.
Marks (line, column) come from libyaml's composer (or, for JSON syntax, a tokenizer that places every value
where it does), only when there is a problem to place.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, ClassVar

import jsonschema_rs

from mock_server.domain.errors import FieldPath
from mock_server.spec.openapi import fast_safe_loader
from mock_server.wire import decoding
from mock_server.wire.decoding import (
    SCENARIO_JSON,
    DuplicateKey,
    nested_too_deep,
    reject_constant,
    unique_keys,
)

if TYPE_CHECKING:
    import yaml

# A scenario needs 7 levels (accounts[].recipient_list.limit.pix.transaction[].amount): the bound of JSON bodies.
MAX_DEPTH = decoding.MAX_DEPTH
MAX_REPEATED_NODES = 1_000_000  # nodes that aliases may repeat, over the whole file
_YAML = "tag:yaml.org,2002:"
ALLOWED_TAGS = frozenset(
    [f"{_YAML}{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp")] + ["!"]
)
_TIMESTAMP_TAG = f"{_YAML}timestamp"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_WHOLE_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")

Marks = dict[FieldPath, tuple[int, int]]


@dataclass(frozen=True, slots=True)
class Located:
    """A problem found while reading, at a 1-based (line, column) and, where known, a path in the data."""

    line: int
    column: int
    path: FieldPath
    message: str


class Unreadable(Exception):
    """The text gives no data to validate; `problems` say where and why."""

    def __init__(self, problems: list[Located]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


@dataclass
class Document:
    """The data of a scenario file, what reading found wrong with it, and the marks of its nodes on demand."""

    text: str
    data: Any
    problems: list[Located] = field(default_factory=list)
    _marks: Marks | None = None
    json: bool = False  # read by the json module

    def marks(self) -> Marks:
        """path -> (line, column) of every node, built only when a problem needs placing: by a tokenizer for
        JSON syntax (composing a 20,000-event JSON file with libyaml took 9 s of the 16 s its problems cost),
        else by libyaml's composer."""
        if self._marks is None:
            if self.json:
                self._marks = _json_marks(self.text)
                return self._marks
            # libyaml refuses a surrogate escape: one of the same length keeps every mark where it is
            text = _WHOLE_SURROGATE_ESCAPE.sub(r"\\uFFFD", self.text) if "\\u" in self.text else self.text
            try:
                self._marks = _walk(_compose(text), [])
            except Unreadable:
                self._marks = {}
        return self._marks


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^\s{}\[\],:"]+')


def _json_marks(text: str) -> Marks:
    """path -> (line, column) of every value of a JSON text that the json module read: one pass over its tokens."""
    marks: Marks = {}
    lines = [0] + [m.end() for m in re.finditer("\n", text)]
    line = 0
    stack: list[list[Any]] = []  # per open container: [path, next index or pending key, is an object]
    expecting_key = False
    path: FieldPath = ()
    for token in _JSON_TOKEN.finditer(text):
        start = token.start()
        kind = token.group()
        if kind in ",:":
            if kind == "," and stack and stack[-1][2]:
                expecting_key = True
            continue
        if kind in "]}":
            stack.pop()
            expecting_key = False
            continue
        if expecting_key:  # an object's key: the value that follows is at path + key
            raw = kind[1:-1]
            stack[-1][1] = json.loads(kind) if "\\" in raw else raw
            expecting_key = False
            continue
        if stack:
            container = stack[-1]
            if container[2]:
                path = (*container[0], container[1])
            else:
                path = (*container[0], container[1])
                container[1] += 1
        else:
            path = ()
        while line + 1 < len(lines) and lines[line + 1] <= start:
            line += 1
        marks[path] = (line + 1, start - lines[line] + 1)
        if kind == "{":
            stack.append([path, None, True])
            expecting_key = True
        elif kind == "[":
            stack.append([path, 0, False])
    return marks


@functools.cache
def _scenario_yaml_loader() -> type[yaml.SafeLoader]:
    """The loader libyaml reads scenarios with, made on the first YAML read (PyYAML is imported then: a server
    whose scenarios come from their cache, scenarios/validated.py, never imports it)."""
    import yaml

    base = fast_safe_loader()

    class ScenarioYamlLoader(base):  # type: ignore[valid-type, misc]
        """The safe loader, keeping as written what JSON cannot hold, so the schema judges it where it stands:
        unquoted dates and times stay text (not datetimes that `2026-02-30` or a leap second would crash),
        `.nan` and `.inf` stay text, and a key that is not a string (`1:`, `yes:`, `~:`) is its text."""

        yaml_implicit_resolvers: ClassVar[dict[Any, list[tuple[str, re.Pattern[str]]]]] = {
            first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
            for first, resolvers in base.yaml_implicit_resolvers.items()
        }

        def construct_yaml_float(self, node: yaml.ScalarNode) -> float | str:
            value: float = super().construct_yaml_float(node)
            return value if math.isfinite(value) else str(node.value)

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            self.flatten_mapping(node)
            mapping: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str):
                    key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else yaml.safe_dump(key).strip()
                mapping[key] = self.construct_object(value_node, deep=deep)
            return mapping

    ScenarioYamlLoader.add_constructor(f"{_YAML}float", ScenarioYamlLoader.construct_yaml_float)
    ScenarioYamlLoader.add_constructor(f"{_YAML}map", ScenarioYamlLoader.construct_yaml_map)
    return ScenarioYamlLoader


def _at(mark: Any) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def _yaml_problem(exc: yaml.YAMLError, text: str) -> Located:
    """A syntax error in plain words, where the text needs mending (scenarios/yaml_errors.py)."""
    from mock_server.scenarios.yaml_errors import describe

    place, message = describe(exc, text)
    return Located(*place, (), message)


def _shown_tag(tag: str) -> str:
    return "!!" + tag[len(_YAML) :] if tag.startswith(_YAML) else tag


def _screen(text: str) -> None:
    """Walk libyaml's events (its parser is a loop, safe at any depth) before anything is composed: too deep,
    too many repeated nodes or a tag that is not JSON's stop here, at their place. Syntax errors are left to
    the composer, which reports them with their marks."""
    import yaml

    loader = fast_safe_loader()(text)
    sizes: dict[str, int] = {}  # anchor -> nodes it stands for, its own aliases expanded
    open_nodes: list[list[Any]] = []  # [anchor, nodes so far] of each collection being read
    repeated = 0
    try:
        while loader.check_event():
            event = loader.get_event()  # type: ignore[no-untyped-call]
            tag = getattr(event, "tag", None)
            if tag is not None and tag not in ALLOWED_TAGS:
                raise Unreadable(
                    [
                        Located(
                            *_at(event.start_mark),
                            (),
                            f"not a safe YAML document: the tag {_shown_tag(tag)} is not allowed (a scenario holds "
                            "JSON's values only: text, numbers, true/false, null, lists and mappings)",
                        )
                    ]
                )
            if isinstance(event, yaml.CollectionStartEvent):
                if len(open_nodes) >= MAX_DEPTH:
                    raise Unreadable([Located(*_at(event.start_mark), (), f"nested deeper than {MAX_DEPTH} levels")])
                open_nodes.append([event.anchor, 1])
                continue
            if isinstance(event, yaml.CollectionEndEvent):
                anchor, size = open_nodes.pop()
            elif isinstance(event, yaml.ScalarEvent):
                anchor, size = event.anchor, 1
            elif isinstance(event, yaml.AliasEvent):
                anchor, size = None, sizes.get(event.anchor or "", 1)
                repeated += size
                if repeated > MAX_REPEATED_NODES:
                    raise Unreadable(
                        [
                            Located(
                                *_at(event.start_mark),
                                (),
                                f"aliases repeat more than {MAX_REPEATED_NODES:,} nodes (an alias bomb?)",
                            )
                        ]
                    )
            else:
                continue
            if anchor is not None:
                sizes[anchor] = size
            if open_nodes:
                open_nodes[-1][1] += size
    except yaml.MarkedYAMLError as exc:
        if _LIBYAML_DEPTH in str(exc.problem) and exc.problem_mark is not None:
            _refuse_libyaml_depth(text, exc.problem_mark)
        return
    except yaml.YAMLError:
        return
    finally:
        loader.dispose()


# libyaml (bundled since PyYAML 6.0.4) refuses nesting past its own bound (1000) in the scanner, which reads
# ahead of the events while a flow collection may still turn out to be a key: `[[[[...` fails before the
# screen sees level MAX_DEPTH. Our bound speaks first all the same, at its own place.
_LIBYAML_DEPTH = "maximum nesting depth"


def _refuse_libyaml_depth(text: str, mark: Any) -> None:
    """Raise our own depth problem for a text libyaml found too deep at `mark`: the text before that mark
    holds the levels up to libyaml's bound, so screening it meets ours (which is lower) at the first level
    past it; should libyaml ever count lower than us, its own place is named with our message."""
    _screen(text[: mark.index])
    raise Unreadable([Located(*_at(mark), (), f"nested deeper than {MAX_DEPTH} levels")])


def _compose(text: str) -> yaml.Node | None:
    """The screened text composed by libyaml (with the scenario loader's own resolvers), or Unreadable."""
    import yaml

    _screen(text)
    loader = _scenario_yaml_loader()(text)
    try:
        root: yaml.Node | None = loader.get_single_node()
        return root
    except yaml.YAMLError as exc:
        raise Unreadable([_yaml_problem(exc, text)]) from None
    finally:
        loader.dispose()


def _walk(root: yaml.Node | None, duplicates: list[Located]) -> Marks:
    """path -> (line, column) of every node; a key met twice in one mapping goes to `duplicates`."""
    import yaml

    marks: Marks = {}
    pending: list[tuple[yaml.Node, FieldPath]] = [(root, ())] if root is not None else []
    while pending:
        node, path = pending.pop()
        marks.setdefault(path, _at(node.start_mark))
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                name = str(key.value) if isinstance(key, yaml.ScalarNode) else "?"  # a list as a key: rare enough
                if name == "<<" and key.tag == f"{_YAML}merge":
                    continue
                if name in seen:
                    duplicates.append(
                        Located(*_at(key.start_mark), (*path, name), f"key {name!r} appears twice in this mapping")
                    )
                seen.add(name)
                pending.append((value, (*path, name)))
        elif isinstance(node, yaml.SequenceNode):
            pending.extend((item, (*path, index)) for index, item in enumerate(node.value))
    return marks


def _plain(value: Any) -> Any:
    """YAML's own types -> JSON's: dates and times (an explicit `!!timestamp`) become the text the schema reads."""
    if isinstance(value, dict):
        return {str(k) if isinstance(k, (date, datetime)) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    return value


def _strings(data: Any) -> Iterator[tuple[FieldPath, str]]:
    """Every text of the data, keys included, with its path; iterative."""
    pending: list[tuple[FieldPath, Any]] = [((), data)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str):
            yield path, value
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str):
                    yield (*path, key), key
                pending.append(((*path, key), item))
        elif isinstance(value, list):
            pending.extend(((*path, index), item) for index, item in enumerate(value))


def _surrogates(document: Document) -> list[Located]:
    """A lone surrogate, wherever it stands: only looked for when the text has a `\\uD800`-`\\uDFFF` escape."""
    if not _SURROGATE_ESCAPE.search(document.text):
        return []
    found = []
    for path, text in _strings(document.data):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            found.append(path)
    if not found:
        return []
    marks = document.marks()
    problems = []
    for path in found:
        place = path
        while place not in marks and place:
            place = place[:-1]
        problems.append(
            Located(*marks.get(place, (1, 1)), path, "holds a lone UTF-16 surrogate, which no JSON answer can carry")
        )
    _replace_surrogates(document.data)  # the schema may judge the rest; no engine can read such text
    return problems


def _mended(text: str) -> str:
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _replace_surrogates(data: Any) -> None:
    """Every lone surrogate of `data`, keys included, replaced by U+FFFD, in place; iterative."""
    pending = [data]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            items = [(_mended(k) if isinstance(k, str) else k, v) for k, v in value.items()]
            value.clear()
            for key, item in items:
                value[key] = _mended(item) if isinstance(item, str) else item
                pending.append(item)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, str):
                    value[index] = _mended(item)
                else:
                    pending.append(item)


def _read_yaml(text: str) -> Document:
    """The exact reader: screened, composed and constructed by libyaml and PyYAML's safe loader."""
    import yaml

    root = _compose(text)
    duplicates: list[Located] = []
    marks = _walk(root, duplicates)
    loader = _scenario_yaml_loader()(text)
    try:
        data = loader.construct_document(root) if root is not None else None
    except yaml.YAMLError as exc:
        raise Unreadable([_yaml_problem(exc, text)]) from None
    except (ValueError, OverflowError) as exc:  # an explicit tag's bad value (`!!timestamp 2026-02-30`)
        raise Unreadable([Located(1, 1, (), f"cannot be read: {exc}")]) from None
    finally:
        loader.dispose()
    return Document(text, _plain(data), duplicates, marks)


# What rapidyaml and libyaml may read differently, or what only the reference reader handles (tags, anchors,
# aliases, merge keys, directives, documents, escapes, block scalars, complex keys, tabs, YAML 1.1's extra line
# breaks, a byte-order mark; `-.5`, which rapidyaml writes as -0.5 where PyYAML reads text): text holding any
# of it is read by libyaml. Each is a plain substring search.
_REFERENCE_ONLY = (
    "!", "&", "*", "%", "<<", "\\", "|", ">", "?", "\t", "\x85", "\u2028", "\u2029", "\ufeff", "-.", "+.",
    "\n:", " :", "{:", "[:", ",:",  # an empty key, which rapidyaml takes and libyaml refuses
    "#",  # a comment inside a flow collection, which libyaml refuses
    "@", "`",  # reserved indicators, which libyaml refuses
)  # fmt: skip
_SINGLES = tuple(mark for mark in _REFERENCE_ONLY if len(mark) == 1)
# The two-character marks (each 2-character search runs at 1 GB/s; nine were a sixth of a big file's load):
# "<<" after a memchr-fast look for "<"; the others ("\n:" " :" "{:" "[:" ",:" "-." "+.") in one pass over the
# bytes mapped to classes (a first character of one of them -> "a", a second one -> "b", anything else,
# multi-byte UTF-8 included -> "x"): "ab" is in the classes whenever one of them is in the text. A few more
# pairs map to "ab" too (" ." "-:" "\n." ...): such a text goes to libyaml, which only costs time.
_PAIR_CLASS = {**dict.fromkeys("\n {[,-+", "a"), **dict.fromkeys(":.", "b")}
_PAIRS_TABLE = bytes(ord(_PAIR_CLASS.get(chr(i), "x")) for i in range(256))


def needs_reference(text: str, encoded: bytes) -> bool:
    """True whenever the text holds one of _REFERENCE_ONLY (and for a few texts more; `encoded`: its UTF-8)."""
    if any(mark in text for mark in _SINGLES):
        return True
    if "<" in text and "<<" in text:
        return True
    return b"ab" in encoded.translate(_PAIRS_TABLE)


_DOCUMENT_MARKERS = ("---", "...")


@functools.cache
def _pyyaml_float() -> re.Pattern[str]:
    """PyYAML's own pattern of a float, taken from its resolver when first needed."""
    import yaml

    return re.compile(
        next(rx.pattern for tag, rx in yaml.resolver.Resolver.yaml_implicit_resolvers["."] if tag == f"{_YAML}float"),
        re.X,
    )


# Text that PyYAML would read as something else were it written plain (`yes` is true, `017` is 15, `~` null):
# rapidyaml writes those plain scalars as JSON strings, the same as quoted ones, so a string of this form may
# have been plain (rapidyaml also writes `.Inf` as ".inf"). Only the reference can tell: libyaml reads it.
_MAYBE_PLAIN = (
    r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|~|null|Null|NULL"
    r"|[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+"
    r"|[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|<<|=)$"
)
_UNAMBIGUOUS = jsonschema_rs.Draft202012Validator(
    {
        "not": {"type": "string", "pattern": _MAYBE_PLAIN},
        "items": {"$ref": "#"},
        "additionalProperties": {"$ref": "#"},
        "propertyNames": {"not": {"pattern": _MAYBE_PLAIN}},  # rapidyaml writes `.Inf:` as ".inf" too
    }
)


def _yaml_float(text: str) -> float | str:
    """A number rapidyaml wrote as it stood in the YAML, read by PyYAML's rule: `1.5e+3` is a float, `1.5e3`
    text; a float too big to be finite stays text, as the reference keeps it."""
    if len(text) < 300 and "e" not in text and "E" not in text:
        # A JSON fraction without an exponent (`-12.50`) is always one of PyYAML's floats, and finite under 309
        # digits: the regex below, for every amount of a big file, only for the rest.
        return float(text)
    if not _pyyaml_float().match(text):
        return text
    value = float(text.replace("_", ""))
    return value if math.isfinite(value) else text


_FROM_RYML = json.JSONDecoder(parse_constant=reject_constant, parse_float=_yaml_float, object_pairs_hook=unique_keys)


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """rapidyaml prints its own errors (`max depth exceeded`) to file descriptor 2 before raising."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


_REUSED = threading.local()  # per thread: a rapidyaml tree and an output buffer, kept for small texts
REUSE_BELOW = 1 << 23  # bytes: texts this small (a batch of events) reuse the thread's tree and buffer


def _ryml_json(text: bytes) -> str:
    """rapidyaml's JSON of a YAML text, written into a buffer of ours: `emit_json_malloc` never frees what it
    allocates (the JSON's size, lost at every call: 70 MB per 100k events), and a new Tree for every batch of
    a big file cost four times the parse. A big text gets a tree of its own, freed after, so the thread does
    not keep its size for good."""
    import ryml  # type: ignore[import-untyped]  # imported by the first plain YAML read, as PyYAML is

    small = len(text) < REUSE_BELOW
    tree = getattr(_REUSED, "tree", None) if small else None
    if tree is None:
        tree = ryml.Tree()
        if small:
            _REUSED.tree = tree
    else:
        tree.clear()
        tree.clear_arena()
    ryml.parse_in_arena(text, tree)
    root = tree.root_id()
    buffer: bytearray | None = getattr(_REUSED, "buffer", None) if small else None
    if buffer is None:
        buffer = bytearray(2 * len(text) + 64)  # JSON quotes every text: longer than the YAML, rarely twice
    failed, length = ryml.emit_json_to_substr(tree, root, buffer)
    if failed:  # too small: now the length is known (measuring it first cost as much as writing)
        buffer = bytearray(length)
        failed, length = ryml.emit_json_to_substr(tree, root, buffer)
    if small:
        _REUSED.buffer = buffer
    return str(memoryview(buffer)[:length], "utf-8")


def read_fast_yaml(text: str) -> Document | None:
    """The data rapidyaml reads, when it is surely what the reference reader would give; else None."""
    import ryml

    encoded = text.encode("utf-8")
    if needs_reference(text, encoded):
        return None
    if (
        text.lstrip().startswith(("]", "}"))
        or text.startswith((*_DOCUMENT_MARKERS, ":"))
        or any(f"\n{mark}" in text for mark in _DOCUMENT_MARKERS)
    ):
        return None
    try:
        with _quiet_stderr():
            written = _ryml_json(encoded)
        data = _FROM_RYML.decode(written)
    except (ValueError, RecursionError, DuplicateKey, RuntimeError, ryml.ExceptionBasic):
        return None
    if nested_too_deep(data) or not _UNAMBIGUOUS.is_valid(data):
        return None  # too deep: the screen says where (and the schema engine stops at 255 levels)
    return Document(text, data)


def read(text: str) -> Document:
    """The document's data and what reading found wrong with it, or Unreadable."""
    document = None
    if text.lstrip().startswith("{"):
        # not JSON as the API reads it (flow-style YAML, NaN, a key twice, deep): the YAML reader says where
        with contextlib.suppress(ValueError, RecursionError, DuplicateKey):
            data = SCENARIO_JSON.decode(text)
            if not nested_too_deep(data):  # else the YAML reader's screen says where
                document = Document(text, data, json=True)
    if document is None:
        document = read_fast_yaml(text) or _read_yaml(text)
    document.problems += _surrogates(document)
    return document
