"""A small client of the PIX limits interface, written as an integrator would: the code under test.

It knows nothing of the mock: it takes a base URL, like the client pointed at the real backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx


class PixError(Exception):
    """The backend refused the call: `code` and `message` are the contract's error body."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


class PixUnavailable(PixError):
    """A 5xx: worth a retry later."""


@dataclass(frozen=True)
class Event:
    key: str
    status: str
    expected: float
    paid: float

    @property
    def open_balance(self) -> float:
        return self.expected - self.paid


class PixClient:
    def __init__(self, base_url: str, timeout: float = 5.0) -> None:
        self._http = httpx.Client(base_url=base_url, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        response = self._http.request(method, path, json=body)
        if response.status_code >= 400:
            error = response.json() if response.content else {}
            kind = PixUnavailable if response.status_code >= 500 else PixError
            raise kind(response.status_code, error.get("code", "?"), error.get("message", response.text))
        return response.json() if response.content else None

    def event(self, key: str) -> Event | None:
        """The extraordinary event, or None when the backend knows no such key."""
        try:
            data = self._call("GET", f"/event_conciliation/extraordinary_event/{key}")
        except PixError as error:
            if error.code == "EVC100011":
                return None
            raise
        return Event(
            data["extraordinary_event_conciliation_key"],
            data["status"],
            data["total_expected_amount"],
            data["total_paid_amount"],
        )

    def register(self, account_id: str, registered_at: str, withdraw: list[tuple[str, int]]) -> str:
        """Registers the account's withdraw windows ((start_time, cents), ...); answers the event date."""
        body = {
            "account_id": account_id,
            "registration_date": registered_at,
            "limit": {"pix": {"withdraw": [{"start_time": t, "amount": a} for t, a in withdraw]}},
        }
        return str(self._call("POST", "/limits/account", body)["event_date"])

    def propose_withdraw(self, account_id: str, withdraw: list[tuple[str, int]]) -> dict[str, Any]:
        """Asks for new withdraw windows; answers the proposal (id and statuses)."""
        body = {"pix": {"withdraw": [{"start_time": t, "amount": a} for t, a in withdraw]}}
        result: dict[str, Any] = self._call("POST", f"/limits/account/{account_id}/limit_update_request", body)
        return result
