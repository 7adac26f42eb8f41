"""The flows verify-provider runs: calls of every public operation, in the order a client makes them, each
sent to the provider and to the mock alike.

A flow never assumes a fresh provider: it reads only the events the scenario names, and every call that could
change data goes to accounts the flow registers itself, under ids unique to the run (`{account}` in a step is
replaced by such an id; `{recipient}` by the id the provider, or the mock, answered an earlier step with).
No flow pays or cancels an event: no operation of the interface does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mock_server.domain.models import Event

# Valid documents (check digits verified): a CPF punctuated and bare, another CPF, a CNPJ.
CPF = "529.982.247-25"
CPF_BARE = "52998224725"
OTHER_CPF = "123.456.789-09"
CNPJ = "11.222.333/0001-81"
WRONG_CHECK_DIGITS = "123.456.789-00"
MAX_EVENTS_READ = 50  # of a big scenario's events, the first ones are looked up
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Request:
    """One call, as sent to one side."""

    method: str
    path: str
    body: bytes | None = None
    content_type: str | None = None

    def shown(self) -> str:
        """`POST /limits/account {"account_id": ...}`, as a difference shows what was sent."""
        text = f"{self.method} {self.path}"
        if self.body is not None:
            text += " " + self.body.decode("utf-8", "replace")
            if self.content_type not in (None, "application/json"):
                text += f"  (Content-Type: {self.content_type})"
        return text


@dataclass(frozen=True)
class Step:
    """One call of a flow: which operation, what it sends, and what it keeps for later steps."""

    name: str  # what it does, in words
    operation_id: str
    method: str
    path: str  # with `{account}`, `{account2}`, `{recipient}` ... placeholders
    body: Any = None  # a JSON value (strings may be placeholders), sent as application/json
    raw: str | None = None  # a body sent as written instead, with `content_type`
    content_type: str | None = None
    keeps: str | None = None  # the name under which this step's generated id is kept (`recipient`)

    @property
    def needs(self) -> frozenset[str]:
        """The kept ids this step names."""
        names = set(_PLACEHOLDER.findall(self.path))
        return frozenset(name for name in names if not name.startswith("account"))

    def request(self, values: Mapping[str, str]) -> Request:
        path = _PLACEHOLDER.sub(lambda m: values[m[1]], self.path)
        if self.raw is not None:
            return Request(self.method, path, _filled(self.raw, values).encode(), self.content_type)
        if self.body is None:
            return Request(self.method, path)
        body = json.dumps(_filled(self.body, values), separators=(", ", ": ")).encode()
        return Request(self.method, path, body, "application/json")


def _filled(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: values[m[1]], value)
    if isinstance(value, list):
        return [_filled(item, values) for item in value]
    if isinstance(value, dict):
        return {key: _filled(item, values) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class Flow:
    """Steps that run in order against one provider; `accounts` names the accounts it registers itself."""

    name: str
    steps: tuple[Step, ...]
    accounts: tuple[str, ...] = ()  # placeholder names: account, account2, ...

    def without(self, index: int) -> Flow:
        return Flow(self.name, self.steps[:index] + self.steps[index + 1 :], self.accounts)

    def until(self, index: int) -> Flow:
        return Flow(self.name, self.steps[: index + 1], self.accounts)


@dataclass(frozen=True)
class Catalogue:
    flows: tuple[Flow, ...]


# --- the bodies ----------------------------------------------------------------------------------------


def _windows(day: int, night: int | None = None) -> list[dict[str, Any]]:
    windows: list[dict[str, Any]] = [{"start_time": "06:00:00-03:00", "amount": day}]
    if night is not None:
        windows.append({"start_time": "20:00:00-03:00", "amount": night})
    return windows


REGISTRATION_DATE = "2026-11-21T10:00:00-03:00"


def registration(account: str = "{account}", withdraw: int = 100000) -> dict[str, Any]:
    return {
        "account_id": account,
        "registration_date": REGISTRATION_DATE,
        "limit": {"pix": {"withdraw": _windows(withdraw, 50000), "transaction_natural_person": _windows(400000)}},
    }


def _register(name: str = "register the account", account: str = "{account}") -> Step:
    return Step(name, "registerAccountLimit", "POST", "/limits/account", registration(account))


def _propose(name: str, withdraw: int, account: str = "{account}", mode: str = "withdraw") -> Step:
    pix = {mode: _windows(withdraw, 50000)}
    return Step(
        name, "createLimitUpdateRequest", "POST", f"/limits/account/{account}/limit_update_request", {"pix": pix}
    )


def _create_list(name: str = "create the recipient list", amount: int = 1000000) -> Step:
    body = {"limit": {"pix": {"transaction": _windows(amount, 200000)}}}
    return Step(name, "createRecipientList", "POST", "/limits/account/{account}/recipient_list", body)


def _add(name: str, document: str, keeps: str | None = None) -> Step:
    path = "/limits/account/{account}/recipient_list/recipient"
    return Step(name, "addRecipient", "POST", path, {"document_number": document}, keeps=keeps)


def _remove(name: str, recipient: str = "{recipient}") -> Step:
    path = f"/limits/account/{{account}}/recipient_list/recipient/{recipient}"
    return Step(name, "removeRecipient", "DELETE", path)


def _change_list(name: str, amount: int) -> Step:
    path = "/limits/account/{account}/recipient_list/limit_update_request"
    return Step(name, "createRecipientListLimitUpdateRequest", "POST", path, {"pix": {"transaction": _windows(amount)}})


# --- the catalogue -------------------------------------------------------------------------------------


def _event_flows(events: Iterable[Event], unknown_key: str) -> list[Flow]:
    lookup = "/event_conciliation/extraordinary_event/"
    flows = [
        Flow(
            f"event {event.key}",
            (Step(f"look up the {event.status} event", "getExtraordinaryEvent", "GET", lookup + event.key),),
        )
        for event in events
    ]
    flows.append(
        Flow(
            "event-unknown",
            (Step("look up a key no event has (EVC100011)", "getExtraordinaryEvent", "GET", lookup + unknown_key),),
        )
    )
    flows.append(
        Flow(
            "event-key-not-a-uuid",
            (Step("look up a key that is not a UUID", "getExtraordinaryEvent", "GET", lookup + "not-a-uuid"),),
        )
    )
    return flows


def _account_flows() -> list[Flow]:
    one = ("account",)
    return [
        Flow("register", (_register(),), one),
        Flow("register-twice", (_register(), _register("register the same account_id again")), one),
        Flow(
            "register-invalid",
            (
                Step(
                    "register with a date without a time and a negative amount",
                    "registerAccountLimit",
                    "POST",
                    "/limits/account",
                    {
                        "account_id": "{account}",
                        "registration_date": "2026-11-21",
                        "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": -1}]}},
                    },
                ),
            ),
            one,
        ),
        Flow(
            "register-malformed-json",
            (
                Step(
                    "register with a body that is not JSON",
                    "registerAccountLimit",
                    "POST",
                    "/limits/account",
                    raw='{"account_id": "{account}", ',
                    content_type="application/json",
                ),
            ),
            one,
        ),
        Flow(
            "register-not-json-media-type",
            (
                Step(
                    "register with Content-Type text/plain",
                    "registerAccountLimit",
                    "POST",
                    "/limits/account",
                    raw=json.dumps(registration()),
                    content_type="text/plain",
                ),
            ),
            one,
        ),
        Flow(
            "limit-change-applied",
            (
                _register(),
                _propose("raise the withdraw limit (awaits the notification period)", 200000),
                _propose("propose the same limit again (nothing goes up: the first was applied)", 200000),
                _propose("lower the withdraw limit", 150000),
                _propose("add a mode the account has not (counts as going up)", 300000, mode="change"),
            ),
            one,
        ),
        Flow("limit-change-lower", (_register(), _propose("lower the registered withdraw limit", 90000)), one),
        Flow(
            "limit-change-unknown-account", (_propose("propose a limit for an account never registered", 200000),), one
        ),
        Flow(
            "limit-change-invalid",
            (
                _register(),
                Step(
                    "propose an hour past 23 and a mode the interface does not have",
                    "createLimitUpdateRequest",
                    "POST",
                    "/limits/account/{account}/limit_update_request",
                    {"pix": {"withdraw": [{"start_time": "25:00:00-03:00", "amount": 1}], "pay": _windows(1)}},
                ),
            ),
            one,
        ),
        Flow(
            "recipient-list-twice", (_register(), _create_list(), _create_list("create a second recipient list")), one
        ),
        Flow("recipient-list-unknown-account", (_create_list("create a list for an account never registered"),), one),
        Flow(
            "recipient-list-invalid",
            (
                _register(),
                Step(
                    "create a list with the withdraw mode",
                    "createRecipientList",
                    "POST",
                    "/limits/account/{account}/recipient_list",
                    {"limit": {"pix": {"withdraw": _windows(100000)}}},
                ),
            ),
            one,
        ),
        Flow(
            "recipient-before-list",
            (
                _register(),
                _add("add a recipient before the list exists", CPF),
                _change_list("change the list's limit before it exists", 100000),
                _remove("remove a recipient before the list exists", "00000000-0000-4000-8000-000000000000"),
            ),
            one,
        ),
        Flow(
            "recipient-unknown-account",
            (
                _add("add a recipient to an account never registered", CPF),
                _change_list("change the list's limit of an account never registered", 100000),
                _remove("remove a recipient of an account never registered", "00000000-0000-4000-8000-000000000000"),
            ),
            one,
        ),
        Flow(
            "recipient-duplicate",
            (
                _register(),
                _create_list(),
                _add("add a CPF", CPF),
                _add("add the same CPF again", CPF),
                _add("add the same CPF written bare", CPF_BARE),
            ),
            one,
        ),
        Flow(
            "recipient-invalid-document",
            (_register(), _create_list(), _add("add a CPF with wrong check digits", WRONG_CHECK_DIGITS)),
            one,
        ),
        Flow(
            "recipient-remove-unknown",
            (
                _register(),
                _create_list(),
                _remove("remove an id no recipient has", "00000000-0000-4000-8000-000000000000"),
            ),
            one,
        ),
        Flow(
            "recipient-remove-twice",
            (
                _register(),
                _create_list(),
                _add("add a CPF", CPF, keeps="recipient"),
                _remove("remove it"),
                _remove("remove it again"),
            ),
            one,
        ),
        Flow(
            "list-limit-change-applied",
            (
                _register(),
                _create_list(amount=1000000),
                _change_list("raise the list's limit", 2000000),
                _change_list("propose the same list limit again (the first was applied)", 2000000),
                _change_list("lower the list's limit", 500000),
            ),
            one,
        ),
        Flow(
            "list-limit-change-invalid",
            (
                _register(),
                _create_list(),
                Step(
                    "change the list's limit with the withdraw mode",
                    "createRecipientListLimitUpdateRequest",
                    "POST",
                    "/limits/account/{account}/recipient_list/limit_update_request",
                    {"pix": {"withdraw": _windows(100000)}},
                ),
            ),
            one,
        ),
        Flow(
            "lifecycle",
            (
                _register(),
                _propose("propose a higher withdraw limit", 250000),
                _create_list(),
                _add("add a CPF", CPF, keeps="recipient"),
                _add("add a CNPJ", CNPJ, keeps="company"),
                _change_list("lower the list's limit", 800000),
                _remove("remove the CPF"),
                _add("add the CPF again", CPF, keeps="recipient"),
                _add("add another CPF", OTHER_CPF),
                _remove("remove the CNPJ", "{company}"),
            ),
            one,
        ),
    ]


def catalogue(events: Iterable[Event], unknown_key: str) -> Catalogue:
    """Every flow, once: the scenario's events looked up (the first MAX_EVENTS_READ), then the account flows."""
    chosen = [event for _, event in zip(range(MAX_EVENTS_READ), events, strict=False)]
    return Catalogue(tuple(_event_flows(chosen, unknown_key) + _account_flows()))


def account_namer(run_id: str) -> Callable[[], str]:
    """Account ids unique to the run: `vp-RUN-1`, `vp-RUN-2`, ... (at most 64 characters, no `/`)."""
    counter = iter(range(1, 1 << 62))
    return lambda: f"vp-{run_id}-{next(counter)}"
