"""What a provider's answer shows of its state (domain/recording.py), call by call."""

from __future__ import annotations

from typing import Any

from mock_server.domain.models import Account, LimitWindow, RecipientList
from mock_server.domain.recording import Shown, account_after, account_id_of

SEEN = "2026-11-21T10:00:00.000-03:00"
WINDOW = {"start_time": "06:00:00-03:00", "amount": 100}


def account(**changes: Any) -> Account:
    made = Account("0001-000001", "2026-01-01T00:00:00-03:00", {"withdraw": (LimitWindow("06:00:00-03:00", 5),)})
    for name, value in changes.items():
        setattr(made, name, value)
    return made


def test_a_registration_the_provider_took_is_the_account_as_sent() -> None:
    body = {
        "account_id": "0001-000001",
        "registration_date": "2026-01-01T00:00:00-03:00",
        "limit": {"pix": {"change": [WINDOW]}},
    }
    change = account_after("registerAccountLimit", {}, body, None, Shown(201, {"event_date": SEEN}), SEEN)
    assert change.registered
    assert change.account is not None
    assert change.account.limits == {"change": (LimitWindow("06:00:00-03:00", 100),)}
    assert change.account.event_date == SEEN


def test_a_refused_call_changes_nothing() -> None:
    before = account()
    body = {"pix": {"withdraw": [WINDOW]}}
    path = {"account_id": "0001-000001"}
    change = account_after(
        "createLimitUpdateRequest", path, body, before, Shown(400, {"code": "invalid_request"}), SEEN
    )
    assert change.account is before and not change.registered


def test_account_not_found_means_the_provider_holds_no_such_account() -> None:
    answer = Shown(404, {"code": "account_not_found", "message": "..."})
    path = {"account_id": "0001-000001"}
    assert account_after("createRecipientList", path, {}, account(), answer, SEEN).account is None


def test_an_applied_limit_change_replaces_the_modes_it_names_and_keeps_the_others() -> None:
    before = account(
        limits={"withdraw": (LimitWindow("06:00:00-03:00", 5),), "change": (LimitWindow("06:00:00-03:00", 7),)}
    )
    answer = Shown(201, {"limit_update_request_status": "applied", "event_date": SEEN})
    change = account_after(
        "createLimitUpdateRequest", {"account_id": "0001-000001"}, {"pix": {"withdraw": [WINDOW]}}, before, answer, SEEN
    )
    assert change.account is not None
    assert change.account.limits == {
        "withdraw": (LimitWindow("06:00:00-03:00", 100),),
        "change": (LimitWindow("06:00:00-03:00", 7),),
    }
    assert before.limits["withdraw"][0].amount == 5  # the account known before is not changed in place


def test_a_pending_limit_change_changes_no_window() -> None:
    answer = Shown(201, {"limit_update_request_status": "pending", "event_date": SEEN})
    path = {"account_id": "0001-000001"}
    change = account_after("createLimitUpdateRequest", path, {"pix": {"withdraw": [WINDOW]}}, account(), answer, SEEN)
    assert change.account is not None and change.account.limits["withdraw"][0].amount == 5


def test_an_account_first_met_in_a_limit_change_is_made_from_what_it_shows() -> None:
    answer = Shown(201, {"limit_update_request_status": "applied", "event_date": SEEN})
    path = {"account_id": "0009-000009"}
    change = account_after("createLimitUpdateRequest", path, {"pix": {"withdraw": [WINDOW]}}, None, answer, SEEN)
    assert change.account is not None and not change.registered
    assert (change.account.account_id, change.account.registration_date) == ("0009-000009", SEEN)
    assert change.account.limits == {"withdraw": (LimitWindow("06:00:00-03:00", 100),)}


def test_recipients_added_under_the_providers_id_and_removed_by_it() -> None:
    before = account(recipient_list=RecipientList({"transaction": (LimitWindow("06:00:00-03:00", 1),)}, SEEN))
    path = {"account_id": "0001-000001"}
    shown = {"recipient_id": "r-1", "recipient_status": "pending_analysis", "event_date": SEEN}
    added = account_after("addRecipient", path, {"document_number": "529.982.247-25"}, before, Shown(201, shown), SEEN)
    assert added.account is not None and added.account.recipient_list is not None
    recipient = added.account.recipient_list.recipients["r-1"]
    assert (recipient.document_key, recipient.recipient_status) == ("52998224725", "pending_analysis")
    # The same number in the other layout replaces it: the provider holds one recipient per number.
    shown2 = {"recipient_id": "r-2", "event_date": SEEN}
    again = account_after(
        "addRecipient", path, {"document_number": "52998224725"}, added.account, Shown(201, shown2), SEEN
    )
    assert again.account is not None and again.account.recipient_list is not None
    assert list(again.account.recipient_list.recipients) == ["r-2"]
    removed = account_after(
        "removeRecipient", {**path, "recipient_id": "r-2"}, None, again.account, Shown(204, None), SEEN
    )
    assert removed.account is not None and removed.account.recipient_list is not None
    assert removed.account.recipient_list.recipients == {}


def test_the_registration_names_its_account_in_the_body_the_others_in_the_path() -> None:
    assert account_id_of("registerAccountLimit", {}, {"account_id": "a"}) == "a"
    assert account_id_of("registerAccountLimit", {}, ["not", "an", "object"]) is None
    assert account_id_of("addRecipient", {"account_id": "b"}, None) == "b"
