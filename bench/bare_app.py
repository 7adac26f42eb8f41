"""The baseline: a bare Starlette app answering the benchmark's three routes with fixed JSON bytes.

Same framework, same server (mock_server/server.py's, as the mock is served: its HTTP protocol, no access log, no
Server or Date header, lifespan off) and the same bytes as the mock's
answers, but no session, validation, state, journal or encoding: what is left is the cost of HTTP, routing
and Starlette itself. The POST routes read the body (as any server must) but do not parse it.

    python -m bench.bare_app --port 8001
"""

from __future__ import annotations

import argparse
import sys

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mock_server.server import Server
from mock_server.settings import Settings

# The mock's own answers for the default scenario (the ids and times of the POSTs are of the same length).
EVENT = (
    b'{"extraordinary_event_conciliation_key":"9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11",'
    b'"security_key":"3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90","investment_key":"6a2f8c14-5b3d-4e7a-8f9c-1d0e2b4a6c83",'
    b'"amortization_type":"early_amortization","total_expected_amount":1500,"total_discount_amount":0,'
    b'"total_paid_amount":0,"status":"pending_conciliation","reference_date":"2026-11-01","due_date":"2026-11-30",'
    b'"paid_at":null,"event_conciliation_list":[{"event_conciliation_key":"0b7e4d2a-9c1f-4a3b-8e5d-6f2a1c9b7d40",'
    b'"installment_key":"4c8a2e6f-1b3d-4f5a-9c7e-0d2b4f6a8c11","event_conciliation_status":"pending_conciliation",'
    b'"event_conciliation_type":"extraordinary_event"},{"event_conciliation_key":"1c8f5e3b-0d2a-4b4c-9f6e-7a3b2d0c8e51",'
    b'"installment_key":"5d9b3f7a-2c4e-4a6b-8d8f-1e3c5a7b9d22","event_conciliation_status":"pending_conciliation",'
    b'"event_conciliation_type":"extraordinary_event"}]}'
)
LIMIT_CHANGE = (
    b'{"limit_update_request_id":"ff6798ef-a3d7-4608-aafc-d2d98af8c24f","analysis_status":"automatically_approved",'
    b'"client_notification_status":"awaiting_notification_period","limit_update_request_status":"applied",'
    b'"event_date":"2026-11-21T10:55:48.130-03:00"}'
)
RECIPIENT = (
    b'{"recipient_id":"5656353d-e7f2-483f-9f6f-918223c8c914","analysis_status":"automatically_approved",'
    b'"client_notification_status":"not_applicable","recipient_status":"created",'
    b'"event_date":"2026-11-21T10:55:48.153-03:00"}'
)
HEALTH = b'{"status":"ok","scenario":"bare"}'


async def event(request: Request) -> Response:
    return Response(EVENT, media_type="application/json")


async def limit_change(request: Request) -> Response:
    await request.body()
    return Response(LIMIT_CHANGE, status_code=201, media_type="application/json")


async def recipient(request: Request) -> Response:
    await request.body()
    return Response(RECIPIENT, status_code=201, media_type="application/json")


async def health(request: Request) -> Response:
    return Response(HEALTH, media_type="application/json")


app = Starlette(
    routes=[
        Route("/event_conciliation/extraordinary_event/{extraordinary_event_conciliation_key}", event),
        Route("/limits/account/{account_id}/limit_update_request", limit_change, methods=["POST"]),
        Route("/limits/account/{account_id}/recipient_list/recipient", recipient, methods=["POST"]),
        Route("/__mock/health", health),
    ]
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="bare Starlette baseline for python -m bench.run")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args(argv)
    Server(app, Settings(host=args.host, port=args.port)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
