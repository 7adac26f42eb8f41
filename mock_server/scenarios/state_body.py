"""A request body that is a scenario document (`PUT /__mock/state`), read and judged as a scenario file is.

The spec lists the media types the operation takes: JSON, read as every JSON body of the API is (malformed_json
otherwise), and YAML, read by the scenario files' own safe reader (scenarios/text.py: no tags but JSON's values,
bounded aliases and depth, a key given twice is a problem). Its problems are the scenario loader's own
(`ScenarioLoader.problems`: the schema, then every cross-check, in one run), so a document gets here the verdicts
`mock-server check` gives the same document as a file; what reading the text found comes first, placed by its line
and column. One difference, on purpose: an empty YAML document is an empty scenario file but not an empty state
(it is `null`, which must be an object, as a JSON `null` body is): a test that sends nothing must not wipe a session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from mock_server.domain.errors import Detail, MalformedYaml, PayloadTooLarge, UnsupportedMediaType
from mock_server.scenarios.loader import ScenarioLoader
from mock_server.scenarios.text import Located, Unreadable, read
from mock_server.spec.openapi import MAX_DETAILS
from mock_server.wire.decoding import MAX_BODY_BYTES, SCENARIO_JSON, DuplicateKey, is_json_media_type, parse_json

JSON = "application/json"
# What a YAML body may stand for, as compact JSON: twice its own size (or twice the body limit of other routes, if
# more), which YAML without aliases never reaches (its quoting-free scalars save at most half of JSON's bytes;
# real documents about nothing).
MIN_EXPANDED_BYTES = 2 * MAX_BODY_BYTES


def expanded_limit(raw: bytes) -> int:
    return max(MIN_EXPANDED_BYTES, 2 * len(raw))


# One worker: documents are judged one at a time, so the event loop keeps at least half the interpreter.
_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="state-document")


@dataclass(frozen=True, slots=True)
class ScenarioBody:
    """The document's data and what reading its text found wrong (a key twice, a lone surrogate)."""

    data: Any
    reading: list[Detail] = field(default_factory=list)


def located(problem: Located) -> Detail:
    """A problem of the text: its path when it has one, and its line and column in the message."""
    return Detail(problem.path, f"line {problem.line}, column {problem.column}: {problem.message}")


def _media_type(content_type: str) -> tuple[str, bool]:
    """The bare media type (lower case) and whether its charset, if named, is UTF-8."""
    media_type, _, params = content_type.partition(";")
    utf8 = True
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            utf8 = value.strip().strip('"').lower() in ("utf-8", "utf8")
    return media_type.strip().lower(), utf8


def _unreadable(problems: list[Located]) -> MalformedYaml:
    details = [located(p) for p in problems]
    return MalformedYaml(f"The body cannot be read as YAML: {details[0].message}.", details)


def _read_yaml(raw: bytes) -> ScenarioBody:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise _unreadable([Located(line, column, (), f"byte {raw[exc.start]:#04x} is not UTF-8")]) from None
    try:
        document = read(text)
    except Unreadable as exc:
        raise _unreadable(exc.problems) from None
    limit = expanded_limit(raw)
    if _json_size_over(document.data, limit):
        raise PayloadTooLarge(
            f"The YAML body expands, through its aliases, to more than {limit} bytes of JSON (twice its own size, "
            f"or twice {MAX_BODY_BYTES} bytes)."
        )
    return ScenarioBody(document.data, [located(p) for p in document.problems])


def _json_size_over(data: Any, limit: int) -> bool:
    """Whether `data` written as compact JSON takes more than `limit` bytes (escapes not counted), found without
    writing it and stopping at the limit. Aliases let 160 kB of YAML stand for 13.7 MB of JSON (40,000 copies of
    one proposal, which a session then held: 37 MB; the reading rules allow it, under 1,000,000 nodes)."""
    size = 0
    pending = [data]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            size += 1 + sum(len(key) + 4 for key in value)  # {"key":...,}
            pending.extend(value.values())
        elif isinstance(value, list):
            size += 1 + len(value)
            pending.extend(value)
        elif isinstance(value, str):
            size += len(value.encode("utf-8", "surrogatepass")) + 2
        else:
            size += len(str(value))  # numbers, true, false, null: about their length
        if size > limit:
            return True
    return False


def _read_json(raw: bytes, content_type: str) -> ScenarioBody:
    data = parse_json(raw, content_type)  # the API's JSON rules: malformed_json, with its place, if not JSON
    try:
        SCENARIO_JSON.decode(raw.decode("utf-8"))
    except DuplicateKey:  # a scenario file says where; JSON alone would keep the last silently
        try:
            return ScenarioBody(data, [located(p) for p in read(raw.decode("utf-8")).problems])
        except Unreadable:
            return ScenarioBody(data, [Detail((), "an object gives one key twice")])
    return ScenarioBody(data)


def read_scenario_body(raw: bytes, content_type: str | None, accepted: Sequence[str]) -> ScenarioBody:
    """The body as a scenario document, or the contract's error: 415 for a media type the operation does not
    take (`accepted`, as the spec lists them), 400 malformed_json or malformed_yaml for text that is none."""
    media_type, utf8 = _media_type(content_type or "")
    if content_type is not None and is_json_media_type(content_type):
        return _read_json(raw, content_type)
    if utf8 and media_type in accepted and media_type != JSON:
        return _read_yaml(raw)
    got = content_type or "no Content-Type"
    named = f"{', '.join(accepted[:-1])} or {accepted[-1]}" if len(accepted) > 1 else accepted[0]
    raise UnsupportedMediaType(f"Content-Type must be {named} (UTF-8), got {got}.")


def scenario_body_problems(loader: ScenarioLoader, body: ScenarioBody) -> list[Detail]:
    """Every problem a scenario file with this text would have, in one run: reading's, then the loader's. The
    schema's are bounded as any request body's are (the answer lists 100 fields of them and says more may
    follow): listing all of them for 1 MiB of bad events took seconds (20,000 aliased events: 3.5 s)."""
    return [*body.reading, *loader.problems(body.data, schema_limit=MAX_DETAILS)]


def judge_scenario_body(
    loader: ScenarioLoader, raw: bytes, content_type: str | None, accepted: Sequence[str]
) -> tuple[ScenarioBody, list[Detail]]:
    body = read_scenario_body(raw, content_type, accepted)
    return body, scenario_body_problems(loader, body)


async def judge_off_the_loop(
    loader: ScenarioLoader, raw: bytes, content_type: str | None, accepted: Sequence[str]
) -> tuple[ScenarioBody, list[Detail]]:
    """`judge_scenario_body` in the worker thread: 1 MiB of hostile YAML (190,000 aliased events, each a
    problem) takes about 2 s to read and judge, which on the event loop would stall every other session."""
    return await asyncio.get_running_loop().run_in_executor(
        _WORKER, judge_scenario_body, loader, raw, content_type, accepted
    )
