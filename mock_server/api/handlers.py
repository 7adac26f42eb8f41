"""The public API's handlers, one per operationId of openapi.yaml: parse, call the store, shape the answer."""

from __future__ import annotations

from mock_server.domain.conversions import limits_from_json, proposal_to_public, recipient_to_public
from mock_server.domain.errors import EventNotFoundPublic
from mock_server.http.handling import Call, Handler, Reply, encoded_reply


def get_extraordinary_event(call: Call) -> Reply:
    key = call.path["extraordinary_event_conciliation_key"]
    session = call.session
    session.count_lookup(key, call.now)  # a schedule the test asked for may apply first
    event = session.store.find_event(key)
    if event is None:
        # The interface's own code for this operation (4.1); the admin API says event_not_found.
        raise EventNotFoundPublic(f"No extraordinary amortization exists for key {key}.")
    # Encoded once per version of the event (state/encoded.py): most lookups ask for an event again.
    return encoded_reply(200, session.encoded_events.public_json(event))


def register_account_limit(call: Call) -> Reply:
    body = call.body
    account = call.session.store.register_account(
        body["account_id"], body["registration_date"], limits_from_json(body["limit"]["pix"]), call.now
    )
    return Reply(201, {"account_id": account.account_id, "event_date": account.event_date})


def create_limit_update_request(call: Call) -> Reply:
    session = call.session
    proposal = session.store.request_limit_update(
        call.path["account_id"], limits_from_json(call.body["pix"]), call.now, session.ids.new_uuid
    )
    return Reply(201, proposal_to_public(proposal))


def create_recipient_list(call: Call) -> Reply:
    recipient_list = call.session.store.create_recipient_list(
        call.path["account_id"], limits_from_json(call.body["limit"]["pix"]), call.now
    )
    return Reply(201, {"event_date": recipient_list.event_date})


def add_recipient(call: Call) -> Reply:
    session = call.session
    recipient = session.store.add_recipient(
        call.path["account_id"], call.body["document_number"], call.now, session.ids.new_uuid
    )
    return Reply(201, recipient_to_public(recipient))


def remove_recipient(call: Call) -> Reply:
    call.session.store.remove_recipient(call.path["account_id"], call.path["recipient_id"])
    return Reply(204)


def create_recipient_list_limit_update_request(call: Call) -> Reply:
    session = call.session
    proposal = session.store.request_recipient_list_limit_update(
        call.path["account_id"], limits_from_json(call.body["pix"]), call.now, session.ids.new_uuid
    )
    return Reply(201, proposal_to_public(proposal))


HANDLERS: dict[str, Handler] = {
    "getExtraordinaryEvent": get_extraordinary_event,
    "registerAccountLimit": register_account_limit,
    "createLimitUpdateRequest": create_limit_update_request,
    "createRecipientList": create_recipient_list,
    "addRecipient": add_recipient,
    "removeRecipient": remove_recipient,
    "createRecipientListLimitUpdateRequest": create_recipient_list_limit_update_request,
}
