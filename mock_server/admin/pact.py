"""A Pact Specification V4 document of what a client really did: GET /__mock/pact, and the pytest plugin's files.

`export_pact` reads journal entries (the admin spec's JournalEntry shape) and the scenario the session started
from, replays the calls through the public API's handlers on a session of its own, and writes the document; it
changes nothing the server holds. `merge_pacts` joins several into one (a test run's sessions).

- One interaction per distinct call: calls are the same when they have the operation, the status and error code,
  the request body's shape and the provider states they relied on (by name, values aside); of those the least
  (`_order`) is kept, and the interactions are sorted by description, so the same calls make the same bytes in
  any order and any number of sessions (`merge_pacts` keeps the same). What the provider made up is replaced by
  stable examples (`_Stable`): the ids it issued, its instants, the dates of its clock.
- Matching rules from the spec's schemas (`rules_for`, admin/pact_matching.py), drawn for the interactions kept
  only: what the provider makes up (ids, instants, amounts unless `Options.amounts` is `exact`) is matched by
  format, pattern or type; what the client sent and the answer echoes, status words and codes stay literal; a rule
  the value breaks is none.
- Answers openapi.yaml marks `x-mock-defined` carry a comment saying so, or are left out (`Options.mock_defined`).
- Provider states (admin/provider_states.py) as the session stood before each call: the scenario's records and the
  journaled calls before it, replayed on a session of its own (`Replay`, admin/pact_replay.py); an event's state
  is the event as answered. Which facts a call relies on, and its description, are its operation's declaration
  (domain/operations.py).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, timedelta, timezone
from typing import Any

from mock_server.admin import provider_states as states
from mock_server.admin.pact_matching import DATE_TIME_REGEX, JSON_MEDIA_TYPE_REGEX, _matcher, _strings, rules_for
from mock_server.admin.pact_replay import JournaledCall, Replay, _call, _left_out, describe, provider_states
from mock_server.domain.clock import parse_instant
from mock_server.domain.models import Scenario
from mock_server.domain.operations import facts_of
from mock_server.http.handling import ServerContext
from mock_server.http.session_url import split_session_path
from mock_server.spec.openapi import Operation, Spec

PACT_VERSION = "4.0"
JSON = "application/json"


# --- interactions ---------------------------------------------------------------------------------------------------


def _shape(value: Any) -> Any:
    """A JSON value's shape: its keys and the JSON types of its values (numbers one type), arrays item by item."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return [_shape(item) for item in value]
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else "string"


def _state_template(name: str) -> str:
    found = states.kind_of(name)
    return found[0].template if found is not None else name


def identity(call: JournaledCall, provider_states: Sequence[Mapping[str, Any]]) -> str:
    """What makes two calls the same interaction, as a short hex key (the interaction's `key`)."""
    same = {
        "operation": call.operation_id,
        "status": call.status,
        "code": call.code,
        "request": _shape(call.body),
        "states": [_state_template(s["name"]) for s in provider_states],
    }
    return hashlib.sha256(json.dumps(same, sort_keys=True).encode()).hexdigest()[:16]


def _json_body(content: Any) -> dict[str, Any]:
    return {"content": content, "contentType": JSON, "encoded": False}


@dataclass(frozen=True)
class Options:
    """What a pact's reader asked for: amounts matched by type (`type`) or literally (`exact`), and the answers
    openapi.yaml marks `x-mock-defined` flagged in a comment (`flag`) or left out (`omit`)."""

    amounts: str = "type"
    mock_defined: str = "flag"


def mock_defined(spec: Spec, operation: Operation, status: int) -> bool:
    """Whether openapi.yaml marks the operation's answer of `status` `x-mock-defined` (the interface leaves it
    open: the mock decided its status, code and body)."""
    responses = spec.document["paths"][operation.path][operation.method.lower()].get("responses", {})
    found = responses.get(str(status), {})
    while isinstance(found, dict) and "$ref" in found:
        target: Any = spec.document
        for part in found["$ref"].removeprefix("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        found = target
    return isinstance(found, dict) and found.get("x-mock-defined") is True


def _mock_defined_comment(call: JournaledCall) -> dict[str, Any]:
    answered = f"status {call.status} and code {call.code} are" if call.code else f"status {call.status} is"
    return {
        "text": [
            f"mock-defined: openapi.yaml marks this answer of {call.operation_id} x-mock-defined: the interface "
            f"leaves it open, and {answered} the mock's choice, not an agreed part of the interface"
        ]
    }


def interaction(
    call: JournaledCall, operation: Operation, provider_states: list[dict[str, Any]], options: Options, flagged: bool
) -> dict[str, Any]:
    request: dict[str, Any] = {"method": call.method, "path": call.path_text}
    if call.body is not None:
        request["headers"] = {"Content-Type": [JSON]}
        request["body"] = _json_body(call.body)
        if operation.body is not None:
            body_rules = rules_for(call.body, operation.body.schema)
            if body_rules:
                request["matchingRules"] = {"body": body_rules}
    response: dict[str, Any] = {"status": call.status}
    if call.answer is not None:
        response["headers"] = {"Content-Type": [JSON]}
        response["body"] = _json_body(call.answer)
        check = operation.responses.get(str(call.status))
        echoes = [*call.path.values(), *_strings(call.body)]
        schema = check.schema if check is not None else {}
        body_rules = rules_for(call.answer, schema, echoes, numbers=options.amounts != "exact")
        matching: dict[str, Any] = {"header": {"Content-Type": _matcher(match="regex", regex=JSON_MEDIA_TYPE_REGEX)}}
        if body_rules:
            matching = {"body": body_rules, **matching}
        response["matchingRules"] = matching
    found: dict[str, Any] = {
        "type": "Synchronous/HTTP",
        "key": identity(call, provider_states),
        "description": describe(call),
        "pending": False,
    }
    if flagged:
        found["comments"] = _mock_defined_comment(call)
    if provider_states:
        found["providerStates"] = provider_states
    return {**found, "request": request, "response": response}


# --- one document, the same for the same calls ----------------------------------------------------------------------

# The examples of values the provider takes from its clock (matched by format in the pact): fixed, so a pact does
# not change with the day it was drawn on.
CLOCK_DATE = "2026-01-01"
CLOCK_INSTANT = "2026-01-01T00:00:00.000-03:00"
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_NUMBERED = re.compile(r" \((\d+)\)$")
_GIVEN = re.compile(r" \(given [^()]*\)(?=, answered |$)")


class _Stable:
    """A session's calls with what the provider made up replaced by stable examples: each id it issued by an id
    drawn from the call that issued it (the same call, the same id, wherever it reappears: a later path, a provider
    state, a description), each instant it generated and each date of its clock by a fixed example."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        self.issued: dict[str, int] = {}  # how often the same call issued an id so far

    def issue(self, call: JournaledCall) -> None:
        facts = facts_of(call.operation_id)
        if facts is None or facts.issued_id is None or not isinstance(call.answer, dict) or call.status // 100 != 2:
            return
        original = call.answer.get(facts.issued_id)
        if not isinstance(original, str) or original in self.ids:
            return
        basis = json.dumps([call.operation_id, self.text(call.path_text), call.body], sort_keys=True, default=str)
        count = self.issued[basis] = self.issued.get(basis, 0) + 1
        bits = int(hashlib.sha256(f"{basis}#{count}".encode()).hexdigest()[:32], 16)
        digits = "%032x" % ((bits & ~((0xF000 << 64) | (0xC000 << 48))) | (0x4000 << 64) | (0x8000 << 48))
        self.ids[original] = f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"

    def text(self, value: str) -> str:
        if not self.ids or _UUID.search(value) is None:
            return value
        return _UUID.sub(lambda found: self.ids.get(found.group(0), found.group(0)), value)

    def value(self, value: Any, clock: frozenset[str] = frozenset()) -> Any:
        """`value` with issued ids replaced, and (in what the provider answered) the dates in `clock` too."""
        if isinstance(value, str):
            return CLOCK_DATE if value in clock else self.text(value)
        if isinstance(value, dict):
            return {key: self.value(item, clock) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item, clock) for item in value]
        return value

    def order(self, call: JournaledCall, states: list[dict[str, Any]]) -> str:
        """`_order` of the call as `call()` would make it, worked out on its text: cheaper than making it, for
        every call of a journal (only the ones kept are made)."""
        answer = _instants_fixed(call, call.answer)
        text = self.text(
            _order(
                {"method": call.method, "path": call.path_text, "body": {"content": call.body}},
                {"status": call.status, "body": {"content": answer}},
                states,
            )
        )
        for date in _clock_dates(call.received_at):
            text = text.replace(f'"{date}"', f'"{CLOCK_DATE}"')
        return text

    def call(self, call: JournaledCall, states: list[dict[str, Any]]) -> tuple[JournaledCall, list[dict[str, Any]]]:
        clock = _clock_dates(call.received_at)
        answer = _instants_fixed(call, self.value(call.answer, clock))
        stable = replace(
            call,
            path_text=self.text(call.path_text),
            path={name: self.text(value) for name, value in call.path.items()},
            body=self.value(call.body),
            answer=answer,
        )
        held = [{**state, "name": self.text(state["name"]), **_params(self.value(state, clock))} for state in states]
        return stable, held


def _instants_fixed(call: JournaledCall, answer: Any) -> Any:
    """The answer with the instants its operation generates (`event_date`) replaced by a fixed example."""
    facts = facts_of(call.operation_id)
    if not isinstance(answer, dict) or facts is None:
        return answer
    fixed = dict(answer)
    for pointer in facts.generated:
        name = pointer[1:]
        if isinstance(fixed.get(name), str) and re.match(DATE_TIME_REGEX, fixed[name]):
            fixed[name] = CLOCK_INSTANT
    return fixed


def _params(state: Mapping[str, Any]) -> dict[str, Any]:
    return {"params": state["params"]} if "params" in state else {}


def _clock_dates(received_at: str) -> frozenset[str]:
    """The dates a clock reading at `received_at` may have written (at its own offset, at -03:00, in UTC)."""
    try:
        instant = parse_instant(received_at)
    except (TypeError, ValueError):
        return frozenset()
    zones = (instant.tzinfo, timezone(timedelta(hours=-3)), UTC)
    return frozenset(instant.astimezone(zone).date().isoformat() for zone in zones)


def _order(request: Mapping[str, Any], response: Mapping[str, Any], states: Any) -> str:
    """Which of two interactions of one key a pact keeps (the least): a total order on what they hold."""
    return json.dumps(
        [
            request.get("method"),
            request.get("path"),
            request.get("body", {}).get("content"),
            response.get("status"),
            response.get("body", {}).get("content"),
            states or [],
        ],
        sort_keys=True,
        default=str,
    )


def _order_of(found: Mapping[str, Any]) -> str:
    return _order(found["request"], found["response"], found.get("providerStates"))


def _finished(interactions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The interactions sorted by description, each description unique: two alike say the states each was given,
    and only when that still leaves two alike are they numbered (in their order)."""
    items = [dict(found) for found in interactions]
    for found in items:
        found["description"] = _GIVEN.sub("", _NUMBERED.sub("", found["description"]))
    for group in _alike(items):
        given = [_given(found) for found in group]
        if len(set(given)) > 1:  # the states tell them apart (else only a number does)
            for found, description in zip(group, given, strict=True):
                found["description"] = description
    for group in _alike(items):
        for number, found in enumerate(sorted(group, key=_order_of)[1:], start=2):
            found["description"] += f" ({number})"
    return sorted(items, key=lambda found: (found["description"], _order_of(found)))


def _given(found: Mapping[str, Any]) -> str:
    given = "; ".join(state["name"] for state in found.get("providerStates", [])) or "no state"
    what, answered, rest = found["description"].rpartition(", answered ")
    return f"{what} (given {given}){answered}{rest}" if answered else f"{rest} (given {given})"


def _alike(items: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for found in items:
        groups.setdefault(found["description"], []).append(found)
    return [group for group in groups.values() if len(group) > 1]


def _document(
    consumer: str, provider: str, interactions: Iterable[dict[str, Any]], calls: int, left_out: Iterable[dict[str, Any]]
) -> dict[str, Any]:
    unique = {json.dumps(item, sort_keys=True): item for item in left_out}
    return {
        "consumer": {"name": consumer},
        "provider": {"name": provider},
        "interactions": _finished(interactions),
        "metadata": {
            "pactSpecification": {"version": PACT_VERSION},
            "mockServer": {"calls": calls, "leftOut": [unique[key] for key in sorted(unique)]},
        },
    }


@dataclass
class _Candidate:
    order: str
    call: JournaledCall
    operation: Operation
    states: list[dict[str, Any]]
    flagged: bool


def _without_session(path: str) -> str:
    in_session = split_session_path(path)
    return in_session[1] if in_session is not None else path


def export_pact(
    entries: Sequence[Mapping[str, Any]],
    base: Scenario,
    server: ServerContext,
    consumer: str,
    provider: str,
    options: Options | None = None,
) -> dict[str, Any]:
    """The Pact V4 document of `entries` (a session's journal, oldest first) on a session that started from
    `base`, for the operations of the server's public spec, replayed through its public handlers. The same calls
    make the same bytes: interactions sorted by description, one kept per key (the least), what the provider
    made up replaced by stable examples, no session named. Rules are drawn for the interactions kept only."""
    options = options or Options()
    spec = server.specs.public
    replay = Replay(base, server)
    stable = _Stable()
    best: dict[str, _Candidate] = {}
    left_out: list[dict[str, Any]] = []

    def leave_out(entry: Mapping[str, Any], reason: str) -> None:
        path = _without_session(entry["path"])
        left_out.append(
            {"method": entry["method"], "path": stable.text(path), "status": entry["status"]} | {"reason": reason}
        )

    for entry in entries:
        operation = spec.operations.get(entry["operation_id"])
        reason = _left_out(entry, operation)
        call = _call(entry, operation) if operation is not None and reason is None else None
        if call is None or operation is None:
            leave_out(entry, reason or "a path the operation does not have")
            continue
        found = provider_states(call, replay)
        replay.apply(call)
        stable.issue(call)
        flagged = mock_defined(spec, operation, call.status)
        if flagged and options.mock_defined == "omit":
            leave_out(entry, "an answer openapi.yaml marks x-mock-defined (mock_defined=omit)")
            continue
        key = identity(call, found)  # the provider's own values aside: the same before and after `stable`
        order = stable.order(call, found)
        if key not in best or order < best[key].order:
            best[key] = _Candidate(order, call, operation, found, flagged)
    kept = []
    for candidate in best.values():  # rules, and the stable examples, for the interactions kept only
        call, found = stable.call(candidate.call, candidate.states)
        kept.append(interaction(call, candidate.operation, found, options, candidate.flagged))
    return _document(consumer, provider, kept, len(entries), left_out)


def merge_pacts(documents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One document of several of one consumer and provider (a run's sessions, in any order: the result is the
    same): each distinct interaction once (by `key`, the least kept), descriptions unique and sorted; the calls
    read add up, the left-out ones are listed once each."""
    if not documents:
        raise ValueError("no pact to merge")
    best: dict[str, tuple[str, Mapping[str, Any]]] = {}
    left_out: list[dict[str, Any]] = []
    calls = 0
    for document in documents:
        for found in document["interactions"]:
            order = _order_of(found)
            if found["key"] not in best or order < best[found["key"]][0]:
                best[found["key"]] = (order, found)
        server = document.get("metadata", {}).get("mockServer", {})
        calls += server.get("calls", 0)
        left_out += server.get("leftOut", [])
    first = documents[0]
    kept = [dict(found) for _, found in best.values()]
    return _document(first["consumer"]["name"], first["provider"]["name"], kept, calls, left_out)


def pact_file_name(consumer: str, provider: str) -> str:
    """`ci-consumer-pix-limits.json`, as Pact's own tools name the file (path separators replaced)."""
    return f"{_file_safe(consumer)}-{_file_safe(provider)}.json"


def _file_safe(name: str) -> str:
    return re.sub(r"[/\\\x00]", "_", name)
