"""A labelled corpus of changes to openapi.yaml, each breaking or not for a client of the shipped spec: what
`gate spec` must tell apart (tests/gate/test_spec_gate.py) and what `make gate-compare` runs through Specmatic's
`compare` too (scripts/gate_compare.py, its verdicts in docs/gate.md).

Each mutation changes a copy of the shipped document into the new version; `base` (when given) changes both the
old and the new first (an optional query parameter, say, that the new version renames)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mock_server.spec.openapi import read_document
from mock_server.spec.resources import data_path

Document = dict[str, Any]
EVENT = "/event_conciliation/extraordinary_event/{extraordinary_event_conciliation_key}"
ACCOUNTS = "/limits/account"
LIMIT_CHANGE = "/limits/account/{account_id}/limit_update_request"


@dataclass(frozen=True)
class Mutation:
    name: str
    breaking: bool
    why: str  # for a client of the old spec
    change: Callable[[Document], object]  # changes the document in place (what it returns is not used)
    base: Callable[[Document], object] | None = None

    def versions(self) -> tuple[Document, Document]:
        old = shipped()
        if self.base is not None:
            self.base(old)
        new = copy.deepcopy(old)
        self.change(new)
        return old, new


def shipped() -> Document:
    _, document = read_document(data_path("openapi.yaml"))
    return copy.deepcopy(document)


def schema(doc: Document, name: str) -> dict[str, Any]:
    found: dict[str, Any] = doc["components"]["schemas"][name]
    return found


def op(doc: Document, path: str, method: str = "post") -> dict[str, Any]:
    found: dict[str, Any] = doc["paths"][path][method]
    return found


def _set(target: dict[str, Any], **values: Any) -> None:
    target.update(values)


def _query(name: str, required: bool = False, where: str = "query") -> dict[str, Any]:
    return {"name": name, "in": where, "required": required, "schema": {"type": "string"}}


def _with_query(doc: Document) -> None:
    op(doc, EVENT, "get").setdefault("parameters", []).append(_query("fields"))


def _renamed_property(doc: Document, schema_name: str, old: str, new: str) -> None:
    target = schema(doc, schema_name)
    target["properties"] = {(new if k == old else k): v for k, v in target["properties"].items()}
    target["required"] = [new if r == old else r for r in target.get("required", [])]


def _security(doc: Document) -> None:
    doc["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    doc["security"] = [{"bearer": []}]


def _no_json_body(doc: Document) -> None:
    body = op(doc, ACCOUNTS)["requestBody"]
    body["content"] = {"application/xml": body["content"]["application/json"]}


def _path_parameter_renamed(doc: Document) -> None:
    item = doc["paths"].pop(LIMIT_CHANGE)
    doc["paths"]["/limits/account/{account}/limit_update_request"] = item
    for parameter in item["post"]["parameters"]:
        if parameter.get("in") == "path":
            parameter["name"] = "account"


def _header_renamed(doc: Document) -> None:
    for name in ("MockSession", "MockSessionWithBody"):
        doc["components"]["parameters"][name]["name"] = "X-Mock-Session-Name"


BREAKING: tuple[Mutation, ...] = (
    Mutation("operation-removed", True, "its calls get 404/405", lambda d: d["paths"][ACCOUNTS].pop("post")),
    Mutation(
        "status-removed",
        True,
        "a documented answer it handles is gone",
        lambda d: op(d, EVENT, "get")["responses"].pop("404"),
    ),
    Mutation(
        "response-field-removed",
        True,
        "it reads paid_at",
        lambda d: (
            schema(d, "ExtraordinaryEvent")["properties"].pop("paid_at"),
            schema(d, "ExtraordinaryEvent")["required"].remove("paid_at"),
        ),
    ),
    Mutation(
        "response-field-optional",
        True,
        "security_key may be missing",
        lambda d: schema(d, "ExtraordinaryEvent")["required"].remove("security_key"),
    ),
    Mutation(
        "response-enum-value-added",
        True,
        "a status it has no branch for",
        lambda d: schema(d, "ConciliationStatus")["enum"].append("reversed"),
    ),
    Mutation(
        "response-type-changed",
        True,
        "total_paid_amount arrives as text",
        lambda d: schema(d, "ExtraordinaryEvent")["properties"].__setitem__("total_paid_amount", {"type": "string"}),
    ),
    Mutation(
        "response-format-changed",
        True,
        "event_date is no date-time any more",
        lambda d: _set(schema(d, "EventDate"), format="date"),
    ),
    Mutation(
        "request-field-added-required",
        True,
        "its registrations lack branch_code",
        lambda d: (
            schema(d, "AccountRegistration")["properties"].__setitem__("branch_code", {"type": "string"}),
            schema(d, "AccountRegistration")["required"].append("branch_code"),
        ),
    ),
    Mutation(
        "request-field-newly-required",
        True,
        "its limits may not name withdraw",
        lambda d: schema(d, "PixLimits").__setitem__("required", ["withdraw"]),
    ),
    Mutation(
        "request-field-renamed",
        True,
        "it sends registration_date",
        lambda d: _renamed_property(d, "AccountRegistration", "registration_date", "registered_at"),
    ),
    Mutation(
        "request-field-removed-closed-object",
        True,
        "transaction_legal_person it sends is now unknown",
        lambda d: schema(d, "PixLimits")["properties"].pop("transaction_legal_person"),
    ),
    Mutation(
        "request-type-narrowed",
        True,
        "amounts may no longer be numbers",
        lambda d: _set(schema(d, "LimitWindow")["properties"]["amount"], type="string"),
    ),
    Mutation(
        "request-format-added",
        True,
        "its account ids are no UUIDs",
        lambda d: _set(schema(d, "AccountId"), format="uuid"),
    ),
    Mutation(
        "request-enum-added",
        True,
        "any document number was allowed",
        lambda d: _set(schema(d, "DocumentNumber"), enum=["12345678909"]),
    ),
    Mutation(
        "request-pattern-narrowed",
        True,
        "only -03:00 windows",
        lambda d: _set(schema(d, "StartTime"), pattern="^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]-03:00$"),
    ),
    Mutation(
        "request-maximum-lowered",
        True,
        "larger caps refused",
        lambda d: _set(schema(d, "LimitWindow")["properties"]["amount"], maximum=1_000_000),
    ),
    Mutation(
        "request-minimum-raised",
        True,
        "a zero cap refused",
        lambda d: _set(schema(d, "LimitWindow")["properties"]["amount"], minimum=1),
    ),
    Mutation(
        "request-max-items-lowered",
        True,
        "a night window refused",
        lambda d: _set(schema(d, "LimitWindows"), maxItems=1),
    ),
    Mutation(
        "request-max-length-lowered",
        True,
        "long account ids refused",
        lambda d: _set(schema(d, "AccountId"), maxLength=16),
    ),
    Mutation(
        "path-parameter-narrowed",
        True,
        "short account ids in paths refused",
        lambda d: _set(schema(d, "AccountIdParameter"), minLength=12),
    ),
    Mutation("header-parameter-renamed", True, "it sends X-Mock-Session", _header_renamed),
    Mutation(
        "query-parameter-renamed",
        True,
        "it sends ?fields=",
        lambda d: _set(op(d, EVENT, "get")["parameters"][-1], name="field_list"),
        base=_with_query,
    ),
    Mutation(
        "query-parameter-moved",
        True,
        "it sends fields in the query",
        lambda d: _set(op(d, EVENT, "get")["parameters"][-1], **{"in": "header"}),
        base=_with_query,
    ),
    Mutation(
        "query-parameter-added-required",
        True,
        "its lookups lack ?version=",
        lambda d: op(d, EVENT, "get").setdefault("parameters", []).append(_query("version", required=True)),
    ),
    Mutation(
        "query-parameter-newly-required",
        True,
        "it leaves ?fields= out",
        lambda d: _set(op(d, EVENT, "get")["parameters"][-1], required=True),
        base=_with_query,
    ),
    Mutation("security-added", True, "it sends no credentials", _security),
    Mutation("request-media-type-removed", True, "it sends JSON", _no_json_body),
    Mutation(
        "request-body-newly-required",
        True,
        "it sends no body",
        lambda d: _set(
            op(d, EVENT, "get"),
            requestBody={"required": True, "content": {"application/json": {"schema": {"type": "object"}}}},
        ),
    ),
)

NOT_BREAKING: tuple[Mutation, ...] = (
    Mutation(
        "operation-added",
        False,
        "it never calls it",
        lambda d: d["paths"][ACCOUNTS].__setitem__(
            "get", {"operationId": "listAccounts", "responses": {"200": {"description": "the accounts"}}}
        ),
    ),
    Mutation(
        "status-added",
        False,
        "an answer it never provoked",
        lambda d: op(d, EVENT, "get")["responses"].__setitem__("503", {"description": "down for maintenance"}),
    ),
    Mutation(
        "request-optional-field-added",
        False,
        "it need not send nickname",
        lambda d: schema(d, "AccountRegistration")["properties"].__setitem__("nickname", {"type": "string"}),
    ),
    Mutation(
        "response-field-added",
        False,
        "a field it ignores",
        lambda d: schema(d, "AccountRegistered")["properties"].__setitem__("branch_code", {"type": "string"}),
    ),
    Mutation(
        "request-field-made-optional",
        False,
        "it still sends it",
        lambda d: schema(d, "AccountRegistration")["required"].remove("registration_date"),
    ),
    Mutation("request-max-items-raised", False, "more allowed", lambda d: _set(schema(d, "LimitWindows"), maxItems=3)),
    Mutation(
        "request-minimum-lowered",
        False,
        "more allowed",
        lambda d: _set(schema(d, "LimitWindow")["properties"]["amount"], minimum=-100),
    ),
    Mutation("request-pattern-removed", False, "more allowed", lambda d: schema(d, "StartTime").pop("pattern")),
    Mutation("request-max-length-raised", False, "more allowed", lambda d: _set(schema(d, "AccountId"), maxLength=128)),
    Mutation("path-parameter-renamed", False, "the wire is the same", _path_parameter_renamed),
    Mutation(
        "description-edited",
        False,
        "words only",
        lambda d: _set(schema(d, "ExtraordinaryEvent"), description="An event, described anew."),
    ),
    Mutation(
        "example-edited",
        False,
        "examples are no contract",
        lambda d: _set(schema(d, "StartTime"), examples=["22:00:00-03:00"]),
    ),
    Mutation(
        "response-enum-value-removed",
        False,
        "it never sees canceled again",
        lambda d: schema(d, "ConciliationStatus")["enum"].remove("canceled"),
    ),
    Mutation(
        "query-parameter-added-optional",
        False,
        "it need not send it",
        lambda d: op(d, EVENT, "get").setdefault("parameters", []).append(_query("verbose")),
    ),
    Mutation(
        "header-parameter-added-optional",
        False,
        "it need not send it",
        lambda d: op(d, EVENT, "get").setdefault("parameters", []).append(_query("X-Trace", where="header")),
    ),
    Mutation(
        "request-format-removed",
        False,
        "more allowed",
        lambda d: schema(d, "AccountRegistration")["properties"]["registration_date"].pop("format"),
    ),
    Mutation(
        "request-type-widened",
        False,
        "an integer is a number",
        lambda d: _set(schema(d, "LimitWindow")["properties"]["amount"], type="number"),
    ),
    Mutation(
        "response-type-narrowed",
        False,
        "paid_at is never null now",
        lambda d: _set(schema(d, "ExtraordinaryEvent")["properties"]["paid_at"], type="string"),
    ),
    Mutation(
        "request-body-made-optional",
        False,
        "it still sends one",
        lambda d: _set(op(d, ACCOUNTS)["requestBody"], required=False),
    ),
    Mutation(
        "query-parameter-removed",
        False,
        "an extra query parameter is ignored",
        lambda d: op(d, EVENT, "get")["parameters"].pop(),
        base=_with_query,
    ),
)

CORPUS: tuple[Mutation, ...] = BREAKING + NOT_BREAKING
