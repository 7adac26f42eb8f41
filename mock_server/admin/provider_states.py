"""Provider states: the words an exported pact (GET /__mock/pact) names the provider's state in, and how the
provider-state handler (POST /__mock/pact/states) puts a session in each.

Every state is a fact about one record, named in words with its values ("account 0001-123456 is registered") and
carrying them as `params` too, with whatever else the fact needs (the account's limits, the event as it was
answered). A real provider's handler reads the params; this mock's does what `STATES` says for each.

Pact's verifier sets up each state of an interaction in turn, replays the interaction, and goes on to the next
one: the mock starts each interaction's states from a clean session. A setup that comes after the session
answered a public call (or the first setup it ever gets) puts the session back to its scenario first; the setups
of one interaction then add up. Teardown changes nothing: the next interaction's first setup starts afresh.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mock_server.domain.conversions import account_from_scenario, event_from_scenario, limits_from_json, uuid_text
from mock_server.domain.documents import canonical_document
from mock_server.domain.errors import Detail, InvalidRequest, ProviderStateUnreachable
from mock_server.domain.events import cross_check_event
from mock_server.spec.openapi import Specs
from mock_server.state.sessions import Session
from mock_server.state.store import Store

Params = dict[str, Any]


@dataclass(frozen=True)
class Context:
    """What a state's setup works with: the session's store, its ids, the specs (to check an event), the time."""

    session: Session
    specs: Specs
    now: datetime

    @property
    def store(self) -> Store:
        return self.session.store


# The params of a state (already checked against the admin spec's schema of that fact), applied to the session.
Setup = Callable[[Context, Params], None]


@dataclass(frozen=True)
class StateKind:
    """One provider state: its name with `{placeholders}`, the schema its params meet (a pointer into the admin
    spec), and what a provider does to be in it."""

    template: str
    schema: str  # its params' schema in the admin spec
    setup: Setup
    provider_does: str  # for the docs: what a real provider's handler must do

    @property
    def placeholders(self) -> tuple[str, ...]:
        return tuple(re.findall(r"{(\w+)}", self.template))

    def name(self, **values: str) -> str:
        return self.template.format(**values)

    def state(self, params: Params, **name_values: str) -> dict[str, Any]:
        """The state as a pact writes it: `{"name", "params"}`, the name's values taken from the params unless
        given."""
        values = {p: str(params[p]) for p in self.placeholders if p not in name_values}
        return {"name": self.name(**values, **name_values), "params": params}

    @property
    def pattern(self) -> re.Pattern[str]:
        parts = re.split(r"{(\w+)}", self.template)
        regex = "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+)" for i, part in enumerate(parts))
        return re.compile(regex)


# --- what each state does to a session's store ---------------------------------------------------------------


def _account_must_exist(store: Store, account_id: str) -> None:
    if not store.has_account(account_id):
        raise ProviderStateUnreachable(
            f"Account {account_id} is not registered: set up the state 'account {account_id} is registered' first."
        )


def _event_is(status: str) -> Setup:
    def setup(context: Context, params: Params) -> None:
        store = context.store
        key = params["key"]
        data = {k: v for k, v in params.items() if k != "key"}
        if not data:  # the key alone: the event must be so already
            found = store.find_event(key)
            if found is None or found.status != status:
                raise ProviderStateUnreachable(
                    f"Event {key} is not {status} in the session: the state needs the event in its params.",
                    [Detail(("params",), f"give the event (its public shape) to set up event {key}")],
                )
            return
        problems = context.specs.admin.check("#/components/schemas/ScenarioEvent").problems(data, ("params",))
        problems += [d.within("params") for d in cross_check_event(data)] if not problems else []
        if data.get("status", status) != status:
            problems.append(Detail(("params", "status"), f"is {data.get('status')!r}, the state says {status!r}"))
        given = str(data.get("extraordinary_event_conciliation_key") or key)
        if uuid_text(given) != uuid_text(key):
            problems.append(Detail(("params", "extraordinary_event_conciliation_key"), f"is not the state's {key}"))
        if problems:
            raise ProviderStateUnreachable("The provider state's event is incomplete or inconsistent.", problems)
        event = event_from_scenario({**data, "status": status}, key)
        held = store.find_event(key)
        if held is not None and [i.event_conciliation_key for i in held.installments] != [
            i.event_conciliation_key for i in event.installments
        ]:
            store.remove_event(key)  # other instalments: made afresh (a scenario's event cannot be: 409)
        store.put_event(event)

    return setup


def _event_absent(context: Context, params: Params) -> None:
    context.store.remove_event(params["key"])


def _account_registered(context: Context, params: Params) -> None:
    store = context.store
    account_id = params["account_id"]
    if "limit" not in params:  # the name alone: the account must be there already
        _account_must_exist(store, account_id)
        return
    if "registration_date" not in params:
        raise ProviderStateUnreachable(
            f"Account {account_id} needs its registration_date to be registered.",
            [Detail(("params", "registration_date"), "is required with limit")],
        )
    account = account_from_scenario(params)
    store.put_account(account_id, account.registration_date, account.limits, account.outcomes, context.now)


def _account_absent(context: Context, params: Params) -> None:
    context.store.remove_account(params["account_id"])


def _list_exists(context: Context, params: Params) -> None:
    store = context.store
    account_id = params["account_id"]
    _account_must_exist(store, account_id)
    if "limit" in params:
        store.put_recipient_list(account_id, limits_from_json(params["limit"]["pix"]), context.now)
    elif store.account(account_id).recipient_list is None:
        raise ProviderStateUnreachable(
            f"Account {account_id} has no recipient list: the state needs the list's limit in its params.",
            [Detail(("params", "limit"), "is required when the account has no recipient list")],
        )


def _list_absent(context: Context, params: Params) -> None:
    if context.store.has_account(params["account_id"]):
        context.store.remove_recipient_list(params["account_id"])


def _list_of(store: Store, account_id: str) -> bool:
    """Whether the account (which must exist) has a recipient list."""
    _account_must_exist(store, account_id)
    return store.account(account_id).recipient_list is not None


def _recipient_held(context: Context, params: Params) -> None:
    store = context.store
    account_id = params["account_id"]
    if not _list_of(store, account_id):
        raise ProviderStateUnreachable(
            f"Account {account_id} has no recipient list: set up the state "
            f"'account {account_id} has a recipient list' first."
        )
    if "document_number" not in params:
        raise ProviderStateUnreachable(
            "The recipient's document is not known: the state needs it in its params.",
            [Detail(("params", "document_number"), "is required")],
        )
    # A pact exported from a session names the id its recipient had; a hand-written one may leave it to the mock.
    recipient_id = params.get("recipient_id") or context.session.ids.new_uuid()
    store.put_recipient(account_id, recipient_id, params["document_number"], context.now)


def _document_absent(context: Context, params: Params) -> None:
    if _list_of(context.store, params["account_id"]):
        key = canonical_document(params["document_number"])
        context.store.remove_recipients(params["account_id"], document_key=key)


def _recipient_absent(context: Context, params: Params) -> None:
    if _list_of(context.store, params["account_id"]):
        context.store.remove_recipients(params["account_id"], recipient_id=params["recipient_id"])


_EVENT = "#/components/schemas/ProviderStateEvent"
_EVENT_KEY = "#/components/schemas/ProviderStateEventKey"
_ACCOUNT = "#/components/schemas/ProviderStateAccount"
_LIST = "#/components/schemas/ProviderStateRecipientList"
_RECIPIENT = "#/components/schemas/ProviderStateRecipient"

EVENT_PENDING = StateKind(
    "event {key} is pending conciliation",
    _EVENT,
    _event_is("pending_conciliation"),
    "hold the event of that key as `params` shows it (amounts, dates, instalments), pending conciliation",
)
EVENT_PAID = StateKind(
    "event {key} is paid",
    _EVENT,
    _event_is("paid"),
    "hold the event of that key as `params` shows it, paid (total_paid_amount and paid_at as given)",
)
EVENT_CANCELED = StateKind(
    "event {key} is canceled",
    _EVENT,
    _event_is("canceled"),
    "hold the event of that key as `params` shows it, canceled with its instalments",
)
EVENT_ABSENT = StateKind(
    "event {key} does not exist",
    _EVENT_KEY,
    _event_absent,
    "hold no extraordinary amortization event of that key (the lookup answers 404 EVC100011)",
)
ACCOUNT_REGISTERED = StateKind(
    "account {account_id} is registered",
    _ACCOUNT,
    _account_registered,
    "have the account registered with `registration_date` and the windows of `limit.pix` (and, when `outcomes` "
    "is given, answer its proposals and recipients with those status words)",
)
ACCOUNT_ABSENT = StateKind(
    "account {account_id} is not registered",
    _ACCOUNT,
    _account_absent,
    "have no account of that id",
)
LIST_EXISTS = StateKind(
    "account {account_id} has a recipient list",
    _LIST,
    _list_exists,
    "give the account a recipient list with the windows of `limit.pix.transaction` (its recipients are other states)",
)
LIST_ABSENT = StateKind(
    "account {account_id} has no recipient list",
    _LIST,
    _list_absent,
    "give the account no recipient list",
)
DOCUMENT_HELD = StateKind(
    "document {document_number} is in the recipient list of account {account_id}",
    _RECIPIENT,
    _recipient_held,
    "hold a recipient of that document (in any layout) in the account's list, with the id `recipient_id`",
)
DOCUMENT_ABSENT = StateKind(
    "document {document_number} is not in the recipient list of account {account_id}",
    _RECIPIENT,
    _document_absent,
    "hold no recipient of that document, in any layout, in the account's list",
)
RECIPIENT_HELD = StateKind(
    "recipient {recipient_id} is in the recipient list of account {account_id}",
    _RECIPIENT,
    _recipient_held,
    "hold the recipient of that id, of the document `document_number`, in the account's list",
)
RECIPIENT_ABSENT = StateKind(
    "recipient {recipient_id} is not in the recipient list of account {account_id}",
    _RECIPIENT,
    _recipient_absent,
    "hold no recipient of that id in the account's list",
)

# In the order they are tried against a name: the "not"/"no" wording of a fact is a different name, never a
# prefix of the other, so the order only has to be fixed, not clever.
STATES: tuple[StateKind, ...] = (
    EVENT_PENDING,
    EVENT_PAID,
    EVENT_CANCELED,
    EVENT_ABSENT,
    ACCOUNT_REGISTERED,
    ACCOUNT_ABSENT,
    LIST_EXISTS,
    LIST_ABSENT,
    DOCUMENT_HELD,
    DOCUMENT_ABSENT,
    RECIPIENT_HELD,
    RECIPIENT_ABSENT,
)
EVENT_BY_STATUS = {"pending_conciliation": EVENT_PENDING, "paid": EVENT_PAID, "canceled": EVENT_CANCELED}


def kind_of(name: str) -> tuple[StateKind, dict[str, str]] | None:
    """The state a name is, with the values its placeholders hold; None for a name no state has."""
    for kind in STATES:
        found = kind.pattern.fullmatch(name)
        if found is not None:
            return kind, found.groupdict()
    return None


@dataclass(frozen=True)
class Change:
    """What the handler did: the session went back to its scenario first (`reset`), then the state was set up."""

    reset: bool


def change_state(session: Session, specs: Specs, name: str, params: Mapping[str, Any], action: str) -> Change:
    """Put the session in the state `name` (setup), or leave it as it is (teardown). The empty name is Pact's
    "no state": it only starts the interaction afresh. Raises InvalidRequest for a name no state has or params
    (the request's own validation refuses those first), ProviderStateUnreachable for a state the session cannot be
    put in."""
    found = kind_of(name) if name else None
    if name and found is None:
        raise InvalidRequest(
            "The provider state is unknown.",
            [Detail(("state",), f"{name!r} is none of: {'; '.join(k.template for k in STATES)}")],
        )
    if action == "teardown":
        return Change(reset=False)
    reset = session.calls_at_last_state != session.calls_answered
    if reset:
        session.reset()
    session.calls_at_last_state = session.calls_answered
    if found is None:
        return Change(reset)
    kind, values = found
    # The params win: a name's text is for people. The request's params met the state's schema already (the
    # admin spec says which, by name); a value taken from the name is held to it here.
    merged = {**values, **params}
    problems = specs.admin.check(kind.schema).problems(merged, ("params",))
    if problems:
        raise ProviderStateUnreachable(f"The state {name!r} names a value its fact cannot hold.", problems)
    kind.setup(Context(session, specs, session.clock.now()), merged)
    return Change(reset)
