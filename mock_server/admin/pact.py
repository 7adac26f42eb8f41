"""A Pact Specification V4 document of what a client really did: GET /__mock/pact, and the pytest plugin's files.

`export_pact` reads journal entries (the admin spec's JournalEntry shape) and the scenario the session started
from, replays the calls through the public API's handlers on a session of its own, and writes the document; it
changes nothing the server holds. `merge_pacts` joins several into one (a test run's sessions).

- One interaction per distinct call: calls are the same when they have the operation, the status and error code,
  the request body's shape and the provider states they relied on (by name, values aside); of those the least
  (`_order`) is kept, and the interactions are sorted by description, so the same calls make the same bytes in
  any order and any number of sessions (`merge_pacts` keeps the same). What the provider made up is replaced by
  stable examples (`_Stable`): the ids it issued, its instants, the dates of its clock.
- Matching rules from the spec's schemas (`rules_for`), drawn for the interactions kept only: what the provider
  makes up (ids, instants, amounts unless `Options.amounts` is `exact`) is matched by format, pattern or type; what
  the client sent and the answer echoes, status words and codes stay literal; a rule the value breaks is none.
- Answers openapi.yaml marks `x-mock-defined` carry a comment saying so, or are left out (`Options.mock_defined`).
- Provider states (admin/provider_states.py) as the session stood before each call: the scenario's records and the
  journaled calls before it, replayed on a session of its own (`Replay`); an event's state is the event as
  answered. Which facts a call relies on, and its description, are its operation's declaration
  (domain/operations.py).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, timedelta, timezone
from typing import Any
from urllib.parse import unquote

from mock_server.admin import provider_states as states
from mock_server.domain.clock import parse_instant
from mock_server.domain.conversions import account_to_scenario, limits_to_json
from mock_server.domain.documents import canonical_document
from mock_server.domain.errors import ApiError
from mock_server.domain.models import Scenario
from mock_server.domain.operations import Fact, facts_of
from mock_server.http.handling import Call as HandlerCall
from mock_server.http.handling import ServerContext
from mock_server.http.session_url import split_session_path
from mock_server.spec.openapi import Operation, Spec
from mock_server.state.ids import IdSource
from mock_server.state.sessions import Session
from mock_server.state.store import Store

PACT_VERSION = "4.0"
JSON = "application/json"
# Answers no contract should be drawn from: the server's own bounds and refusals of the transport, not the API's.
BOUND_STATUSES = frozenset({408, 413, 415, 429, 431})
BOUND_CODES = frozenset({"capacity_exceeded"})
# Plain strings the provider words or makes up itself: matched by type. Every other plain string (error codes,
# status words, amortization types) is matched literally: a client branches on them.
PROVIDER_WORDED = frozenset({"message"})
PROVIDER_ASSIGNED_SUFFIX = "_id"
UUID_REGEX = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
DATE_REGEX = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
DATE_TIME_REGEX = "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$"
FORMAT_REGEX = {"uuid": UUID_REGEX, "date": DATE_REGEX, "date-time": DATE_TIME_REGEX}
JSON_MEDIA_TYPE_REGEX = "^application/json(;.*)?$"
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Rule = dict[str, Any]  # {"combine": "AND", "matchers": [...]}


# --- matching rules from the spec ---------------------------------------------------------------------------------


def _flat(schema: Any) -> dict[str, Any]:
    """The schema with its `allOf` members folded in (the inlined spec writes a `$ref` with siblings as one)."""
    if not isinstance(schema, dict):
        return {}
    if "allOf" not in schema:
        return schema
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for member in schema["allOf"]:
        for key, value in _flat(member).items():
            if key == "properties":
                merged["properties"] = {**merged.get("properties", {}), **value}
            else:
                merged.setdefault(key, value)
    return merged


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    return {kind} if isinstance(kind, str) else set(kind or ())


def _child_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if IDENTIFIER.match(key) else f"{path}['{key}']"


def _matcher(**fields: Any) -> Rule:
    return {"combine": "AND", "matchers": [fields]}


def _scalar_rule(
    name: str | None, value: Any, schema: dict[str, Any], echoes: frozenset[str], numbers: bool = True
) -> Rule | None:
    """The rule of one value, or None to compare it literally."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        if not numbers:
            return None
        return _matcher(match="integer") if "integer" in _types(schema) else _matcher(match="number")
    if not isinstance(value, str) or value in echoes:
        return None
    regex = FORMAT_REGEX.get(schema.get("format", ""))
    if regex is not None:
        return _matcher(match="regex", regex=regex)
    if "pattern" in schema:
        return _matcher(match="regex", regex=schema["pattern"])
    if name is not None and (name in PROVIDER_WORDED or name.endswith(PROVIDER_ASSIGNED_SUFFIX)):
        return _matcher(match="type")
    return None


def _satisfies(value: Any, rule: Rule) -> bool:
    """Whether `value` meets its own rule (Pact's regex must match the whole value; an integer is no fraction)."""
    matcher = rule["matchers"][0]
    if matcher["match"] == "regex":
        return isinstance(value, str) and re.fullmatch(matcher["regex"], value) is not None
    if matcher["match"] == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    return True


def rules_for(value: Any, schema: Any, echoes: Iterable[str] = (), numbers: bool = True) -> dict[str, Rule]:
    """The body matching rules of `value` under `schema` (an inlined spec schema), by JSONPath: strings in
    `echoes` (what the client sent) are left literal wherever they appear, and so are numbers unless `numbers`.
    A rule the value itself breaks (a refused request's date where a date-time belongs) is no rule of it."""
    rules: dict[str, Rule] = {}
    echoed = frozenset(echoes)

    def walk(value: Any, schema: Any, path: str, name: str | None) -> None:
        flat = _flat(schema)
        if isinstance(value, dict):
            properties = flat.get("properties", {})
            extra = flat.get("additionalProperties")
            for key, item in value.items():
                child = properties.get(key, extra if isinstance(extra, dict) else {})
                if key == "details" and isinstance(item, list) and "code" in value:
                    # An error's details are the provider's own wording of each problem: a list of that shape.
                    rules[_child_path(path, key)] = _matcher(match="type", min=0)
                    continue
                walk(item, child, _child_path(path, key), key)
        elif isinstance(value, list):
            items = flat.get("items", {})
            for index, item in enumerate(value):
                walk(item, items, _child_path(path, index), name)
        else:
            rule = _scalar_rule(name, value, flat, echoed, numbers)
            if rule is not None and _satisfies(value, rule):
                rules[path] = rule

    walk(value, schema, "$", None)
    return rules


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


# --- the session's records before each call -----------------------------------------------------------------------


class _AnsweredIds(IdSource):
    """The session's ids in a replay: the id the journaled answer showed, so the replayed store holds the same."""

    def __init__(self) -> None:
        super().__init__(None, "")
        self.answered: list[str] = []

    def _handing_out(self, drawn: Callable[[], str]) -> Callable[[], str]:
        def answered_or_drawn() -> str:
            return self.answered.pop() if self.answered else drawn()

        return answered_or_drawn


class Replay:
    """The provider's accounts as they stood before each call: the session's base (its scenario, or the state it
    loaded), with every successful journaled call answered again in turn, by the public API's own handlers, on a
    session of its own, with the ids and instants the journal shows. Changes made through the admin API (a payment,
    a loaded state) are not calls: an event's state is taken from the answer itself, and an account the replay
    lost is named without its facts."""

    def __init__(self, base: Scenario, server: ServerContext) -> None:
        self.server = server
        self.session = Session("pact-replay", base, seed=None, clock_start=None)
        self.ids = self.session.ids = _AnsweredIds()

    @property
    def store(self) -> Store:
        return self.session.store

    def account(self, account_id: str) -> dict[str, Any]:
        """The params of 'account X is registered': its registration date, limits and outcomes, as they are."""
        try:
            account = self.store.account(account_id)
        except ApiError:
            return {"account_id": account_id}
        facts = account_to_scenario(account)
        params = {"account_id": account_id, "registration_date": facts["registration_date"], "limit": facts["limit"]}
        if "outcomes" in facts:
            params["outcomes"] = facts["outcomes"]
        return params

    def recipient_list(self, account_id: str) -> dict[str, Any]:
        try:
            recipient_list = self.store.account(account_id).recipient_list
        except ApiError:
            recipient_list = None
        if recipient_list is None:
            return {"account_id": account_id}
        return {"account_id": account_id, "limit": {"pix": limits_to_json(recipient_list.limits)}}

    def recipient(self, account_id: str, recipient_id: str | None, document_number: str | None) -> dict[str, Any]:
        """The params of a recipient held in the list (found by id, or by document in any layout)."""
        params: dict[str, Any] = {"account_id": account_id}
        try:
            recipient_list = self.store.account(account_id).recipient_list
        except ApiError:
            recipient_list = None
        key = canonical_document(document_number) if document_number else None
        for held in recipient_list.recipients.values() if recipient_list is not None else ():
            if held.recipient_id == recipient_id or (key is not None and held.document_key == key):
                return {**params, "recipient_id": held.recipient_id, "document_number": held.document_number}
        if recipient_id is not None:
            params["recipient_id"] = recipient_id
        if document_number is not None:
            params["document_number"] = document_number
        return params

    def apply(self, call: Call) -> None:
        """Answer a successful call again as the mock did (its handler, its instant, the id it issued); a call the
        replay cannot follow (the session changed through the admin API meanwhile) is skipped."""
        handler = self.server.public_handlers.get(call.operation_id)
        facts = facts_of(call.operation_id)
        if call.status // 100 != 2 or handler is None or facts is None:
            return
        issued = call.answer.get(facts.issued_id) if facts.issued_id and isinstance(call.answer, dict) else None
        self.ids.answered = [issued] if isinstance(issued, str) else []
        now = parse_instant(call.received_at)
        replayed = HandlerCall(self.server, self.session, dict(call.path), {}, call.body, now)
        try:
            reply = handler(replayed)
        except (ApiError, KeyError, TypeError, ValueError):
            return
        if inspect.iscoroutine(reply):  # no public handler awaits; one that did would not be replayed
            reply.close()


# --- the calls -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """A journaled call the export reads: the entry with its path's parameters and its answer's code."""

    operation_id: str
    method: str
    path_text: str
    path: dict[str, str]
    status: int
    body: Any
    answer: Any
    received_at: str

    @property
    def code(self) -> str | None:
        return self.answer.get("code") if isinstance(self.answer, dict) and self.status >= 400 else None


def _path_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"{(\w+)}", template)
    return re.compile("".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^/]+)" for i, p in enumerate(parts)))


def _left_out(entry: Mapping[str, Any], operation: Operation | None) -> str | None:
    """Why a journal entry makes no interaction, or None when it does."""
    status = entry["status"]
    if operation is None:
        return "not an operation of the public spec"
    if entry.get("injected"):
        return "an injected fault answered"
    if status is None:
        return "no answer (an injected reset)"
    if entry["method"] == "HEAD":
        return "HEAD (the GET is the contract)"
    if status >= 500:
        return "a server error"
    if status in BOUND_STATUSES:
        return "a refusal of the server's bounds or of the transport"
    answer = entry["response_body"]
    if isinstance(answer, dict) and answer.get("code") in BOUND_CODES:
        return "a refusal of the server's bounds"
    if entry.get("truncated"):
        return "a body over 64 KiB"
    if entry["request_body"] is not None and operation.body is None:
        return "a body the operation takes none of"
    if isinstance(entry["request_body"], str) or (answer is not None and not isinstance(answer, (dict, list))):
        return "a body that is not JSON"
    return None


def _call(entry: Mapping[str, Any], operation: Operation) -> Call | None:
    # The journal keeps the path as sent: a session named in the URL is no part of the provider's path.
    in_session = split_session_path(entry["path"])
    path = in_session[1] if in_session is not None else entry["path"]
    found = _path_pattern(operation.path).fullmatch(path)
    if found is None:
        return None
    return Call(
        operation.operation_id,
        entry["method"],
        path,
        {name: unquote(value) for name, value in found.groupdict().items()},
        entry["status"],
        entry["request_body"],
        entry["response_body"],
        entry["received_at"],
    )


# --- provider states and descriptions of each call ----------------------------------------------------------------


@dataclass(frozen=True)
class _FactStates:
    """How one fact (domain/operations.Fact) is a provider state: the kinds it is when held and when absent, and
    the error codes that say which (the absent one ends the facts: nothing further was looked at)."""

    held: Callable[[Call, Replay, dict[str, str]], dict[str, Any] | None]  # None: the answer shows nothing
    absent: states.StateKind
    absent_code: str | None  # None: no answer says it is absent
    held_code: str | None = None  # a creation refused because the fact holds already


def _subject(call: Call, fact: Fact) -> dict[str, str] | None:
    """The values that name the record of `fact` in `call` (path first, then the body); None when it names none."""
    body = call.body if isinstance(call.body, dict) else {}
    values = {**{k: v for k, v in body.items() if isinstance(v, str)}, **call.path}
    names = {
        Fact.EVENT: ("extraordinary_event_conciliation_key",),
        Fact.ACCOUNT: ("account_id",),
        Fact.RECIPIENT_LIST: ("account_id",),
        Fact.DOCUMENT: ("account_id", "document_number"),
        Fact.RECIPIENT: ("account_id", "recipient_id"),
    }[fact]
    if any(name not in values for name in names):
        return None
    found = {name: values[name] for name in names}
    if fact is Fact.EVENT:
        return {"key": found.pop("extraordinary_event_conciliation_key")}
    return found


def _event_held(call: Call, replay: Replay, subject: dict[str, str]) -> dict[str, Any] | None:
    if not isinstance(call.answer, dict):
        return None
    kind = states.EVENT_BY_STATUS.get(call.answer.get("status", ""))
    return kind.state({**subject, **call.answer}) if kind is not None else None


def _document_held(call: Call, replay: Replay, subject: dict[str, str]) -> dict[str, Any]:
    # Named by the document as sent, which may be another layout of the one held (in the params).
    document = subject["document_number"]
    held = replay.recipient(subject["account_id"], None, document)
    return states.DOCUMENT_HELD.state(held, document_number=document)


FACT_STATES: Mapping[Fact, _FactStates] = {
    Fact.EVENT: _FactStates(_event_held, states.EVENT_ABSENT, "EVC100011"),
    Fact.ACCOUNT: _FactStates(
        lambda call, replay, subject: states.ACCOUNT_REGISTERED.state(replay.account(subject["account_id"])),
        states.ACCOUNT_ABSENT,
        "account_not_found",
        "account_already_registered",
    ),
    Fact.RECIPIENT_LIST: _FactStates(
        lambda call, replay, subject: states.LIST_EXISTS.state(replay.recipient_list(subject["account_id"])),
        states.LIST_ABSENT,
        "recipient_list_not_found",
        "recipient_list_already_exists",
    ),
    Fact.DOCUMENT: _FactStates(_document_held, states.DOCUMENT_ABSENT, None, "recipient_already_in_list"),
    Fact.RECIPIENT: _FactStates(
        lambda call, replay, subject: states.RECIPIENT_HELD.state(
            replay.recipient(subject["account_id"], subject["recipient_id"], None)
        ),
        states.RECIPIENT_ABSENT,
        "recipient_not_found",
    ),
}


def provider_states(call: Call, replay: Replay) -> list[dict[str, Any]]:
    """The provider states `call` relied on, as the session stood before it: the facts its operation declares
    (domain/operations.py), outermost first, each held unless the answer says otherwise. A call refused before
    any lookup (400) relied on none; a fact found absent, or one the answer says nothing of, ends the list."""
    facts = facts_of(call.operation_id)
    if facts is None or call.status == 400:
        return []
    found: list[dict[str, Any]] = []
    succeeded = 200 <= call.status < 300
    for fact in facts.relies_on:
        rules, subject = FACT_STATES[fact], _subject(call, fact)
        if subject is None:
            break
        if rules.absent_code is not None and call.code == rules.absent_code:
            found.append(rules.absent.state(subject))
            break
        if fact is facts.creates:  # absent when it succeeded, held when refused for that
            if succeeded:
                found.append(rules.absent.state(subject))
            elif rules.held_code is not None and call.code == rules.held_code:
                found += [held for held in [rules.held(call, replay, subject)] if held is not None]
            break
        if fact is facts.removes and not succeeded:  # held only as far as a removal that succeeded shows
            break
        held = rules.held(call, replay, subject)
        if held is None:  # the answer shows nothing of it (a lookup's answer that is not the event)
            break
        found.append(held)
    return found


def describe(call: Call) -> str:
    """`a registration of account 0001-123456, answered 409 account_already_registered`: the words the
    operation's declaration (domain/operations.py) gives, filled from the path and the body."""
    values = dict(call.path)
    if isinstance(call.body, dict):
        values.update({k: v for k, v in call.body.items() if isinstance(v, str)})
    facts = facts_of(call.operation_id)
    try:
        what = facts.description.format(**values) if facts is not None else f"a call of {call.operation_id}"
    except KeyError:  # a body without the field the words name (a refused call)
        what = f"a call of {call.operation_id}"
    word = facts.described_by if facts is not None else None
    if word is not None and isinstance(call.answer, dict) and isinstance(call.answer.get(word), str):
        what = f"{what} ({call.answer[word]})"  # `a lookup of event K (canceled)`
    answered = f"{call.status} {call.code}" if call.code else str(call.status)
    return f"{what}, answered {answered}"


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


def identity(call: Call, provider_states: Sequence[Mapping[str, Any]]) -> str:
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


def _mock_defined_comment(call: Call) -> dict[str, Any]:
    answered = f"status {call.status} and code {call.code} are" if call.code else f"status {call.status} is"
    return {
        "text": [
            f"mock-defined: openapi.yaml marks this answer of {call.operation_id} x-mock-defined: the interface "
            f"leaves it open, and {answered} the mock's choice, not an agreed part of the interface"
        ]
    }


def interaction(
    call: Call, operation: Operation, provider_states: list[dict[str, Any]], options: Options, flagged: bool
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

    def issue(self, call: Call) -> None:
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

    def order(self, call: Call, states: list[dict[str, Any]]) -> str:
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

    def call(self, call: Call, states: list[dict[str, Any]]) -> tuple[Call, list[dict[str, Any]]]:
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


def _instants_fixed(call: Call, answer: Any) -> Any:
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
    call: Call
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
