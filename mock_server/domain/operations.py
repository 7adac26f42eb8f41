"""What each public operation carries beyond its handler, declared once per operationId of openapi.yaml: the
fields its answer makes up, the id it issues for later calls to name, the facts about the provider it relies on
(a Pact's provider states; none, for an operation that reads no record), what its answer shows of the provider's
records (record mode), and how a Pact describes a call of it.

Every table that once repeated one of these reads them here: two answers compared (`answers`: verify-provider and
shadow mode), shadow mode's ids mapped in later paths, the Pact export's descriptions, states and replay, record
mode's rules (`recording`). A test (tests/contract/test_operations.py) holds this table to the spec: an operation
of openapi.yaml without its declaration, or a declaration of an operation the spec lacks, fails it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field


class Fact(enum.Enum):
    """A fact about one record of the provider that a call relies on: held, or absent (a Pact provider state)."""

    EVENT = "event"  # the event of the path's key
    ACCOUNT = "account"  # the account of the path (or of the body, for a registration)
    RECIPIENT_LIST = "recipient list"  # the account's recipient list
    DOCUMENT = "document"  # a recipient of the body's document in the list
    RECIPIENT = "recipient"  # the recipient of the path's id in the list


class Shows(enum.Enum):
    """What a provider's answer to a call shows of the records it holds: what record mode puts in its session."""

    NOTHING = "nothing"  # no record: the answer is the same whatever the provider holds
    EVENT = "event"  # the event of the path's key, as it is
    ACCOUNT = "account"  # the account of the path (or of the body, for a registration) after the call


@dataclass(frozen=True)
class OperationFacts:
    """One public operation's declaration (see the module's docstring)."""

    operation_id: str
    # How a Pact names a call of it: words with `{placeholders}` filled from the path's parameters and the
    # body's string fields.
    description: str
    # A field of a successful answer whose word the description adds in parentheses (an event's status).
    described_by: str | None = None
    # JSON pointers of the answer's fields the server makes up (ids, instants): compared by type only.
    generated: frozenset[str] = frozenset()
    # The answer's field holding an id the server drew from the session's id sequence (a Pact's replay gives the
    # same id back); when some operation's path names it (`names_issued`), the two sides' ids are mapped.
    issued_id: str | None = None
    # Path parameters naming an id an earlier call issued (a recipient removed by the id its addition answered).
    names_issued: tuple[str, ...] = ()
    # The facts a call relies on, outermost first: each holds unless the answer says it does not. Said by every
    # declaration, `()` for an operation that relies on no record (its Pact interactions name no provider state).
    relies_on: tuple[Fact, ...] = field(kw_only=True)
    # What its answer shows of the provider's records (record mode keeps its session in step with it); an
    # operation that shows an account has its rule in domain/recording.py (a test names the one missing).
    shows: Shows = field(kw_only=True)
    creates: Fact | None = None  # a success means the fact was absent before the call
    removes: Fact | None = None  # a success means the fact held before the call

    @property
    def placeholders(self) -> tuple[str, ...]:
        return tuple(re.findall(r"{(\w+)}", self.description))


_PROPOSAL = frozenset({"/limit_update_request_id", "/event_date"})

OPERATIONS: Mapping[str, OperationFacts] = {
    facts.operation_id: facts
    for facts in (
        OperationFacts(
            "getExtraordinaryEvent",
            "a lookup of event {extraordinary_event_conciliation_key}",
            described_by="status",
            relies_on=(Fact.EVENT,),
            shows=Shows.EVENT,
        ),
        OperationFacts(
            "registerAccountLimit",
            "a registration of account {account_id}",
            generated=frozenset({"/event_date"}),
            relies_on=(Fact.ACCOUNT,),
            creates=Fact.ACCOUNT,
            shows=Shows.ACCOUNT,
        ),
        OperationFacts(
            "createLimitUpdateRequest",
            "a limit change for account {account_id}",
            generated=_PROPOSAL,
            issued_id="limit_update_request_id",
            relies_on=(Fact.ACCOUNT,),
            shows=Shows.ACCOUNT,
        ),
        OperationFacts(
            "createRecipientList",
            "a recipient list for account {account_id}",
            generated=frozenset({"/event_date"}),
            relies_on=(Fact.ACCOUNT, Fact.RECIPIENT_LIST),
            creates=Fact.RECIPIENT_LIST,
            shows=Shows.ACCOUNT,
        ),
        OperationFacts(
            "addRecipient",
            "an addition of document {document_number} to the recipient list of account {account_id}",
            generated=frozenset({"/recipient_id", "/event_date"}),
            issued_id="recipient_id",
            relies_on=(Fact.ACCOUNT, Fact.RECIPIENT_LIST, Fact.DOCUMENT),
            creates=Fact.DOCUMENT,
            shows=Shows.ACCOUNT,
        ),
        OperationFacts(
            "removeRecipient",
            "a removal of recipient {recipient_id} from the recipient list of account {account_id}",
            names_issued=("recipient_id",),
            relies_on=(Fact.ACCOUNT, Fact.RECIPIENT_LIST, Fact.RECIPIENT),
            removes=Fact.RECIPIENT,
            shows=Shows.ACCOUNT,
        ),
        OperationFacts(
            "createRecipientListLimitUpdateRequest",
            "a limit change for the recipient list of account {account_id}",
            generated=_PROPOSAL,
            issued_id="limit_update_request_id",
            relies_on=(Fact.ACCOUNT, Fact.RECIPIENT_LIST),
            shows=Shows.ACCOUNT,
        ),
    )
}

# Ids a later call names in its path: what either side of a comparison issued is mapped to the other's.
NAMED_LATER: frozenset[str] = frozenset(name for facts in OPERATIONS.values() for name in facts.names_issued)


def facts_of(operation_id: str) -> OperationFacts | None:
    """The declaration of a public operation; None for any other (an admin operation, a typo)."""
    return OPERATIONS.get(operation_id)
