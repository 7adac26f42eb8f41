"""The public API's handlers, one per operationId of openapi.yaml: parse, call the store, shape the answer."""

from __future__ import annotations

from .errors import EventNotFoundPublic
from .models import Proposal
from .pipeline import Call, Handler, Reply
from .shapes import event_to_public, limits_from_json


def _proposal_reply(proposal: Proposal, status_field: str) -> Reply:
    return Reply(
        201,
        {
            "limit_update_request_id": proposal.limit_update_request_id,
            "analysis_status": proposal.analysis_status,
            "client_notification_status": proposal.client_notification_status,
            status_field: proposal.status,
            "event_date": proposal.event_date,
        },
    )


def get_extraordinary_event(call: Call) -> Reply:
    key = call.path["extraordinary_event_conciliation_key"]
    event = call.session.store.find_event(key.lower())
    if event is None:
        raise EventNotFoundPublic(f"No extraordinary amortization exists for key {key}.")
    return Reply(200, event_to_public(event))


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
    return _proposal_reply(proposal, "limit_update_request_status")


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
    return Reply(
        201,
        {
            "recipient_id": recipient.recipient_id,
            "analysis_status": recipient.analysis_status,
            "client_notification_status": recipient.client_notification_status,
            "recipient_status": recipient.recipient_status,
            "event_date": recipient.event_date,
        },
    )


def remove_recipient(call: Call) -> Reply:
    call.session.store.remove_recipient(call.path["account_id"], call.path["recipient_id"])
    return Reply(204)


def create_recipient_list_limit_update_request(call: Call) -> Reply:
    session = call.session
    proposal = session.store.request_recipient_list_limit_update(
        call.path["account_id"], limits_from_json(call.body["pix"]), call.now, session.ids.new_uuid
    )
    # The interface's example names the status recipient_status here (2.5), not limit_update_request_status.
    return _proposal_reply(proposal, "recipient_status")


HANDLERS: dict[str, Handler] = {
    "getExtraordinaryEvent": get_extraordinary_event,
    "registerAccountLimit": register_account_limit,
    "createLimitUpdateRequest": create_limit_update_request,
    "createRecipientList": create_recipient_list,
    "addRecipient": add_recipient,
    "removeRecipient": remove_recipient,
    "createRecipientListLimitUpdateRequest": create_recipient_list_limit_update_request,
}
