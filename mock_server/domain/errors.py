"""One exception per contract error code: what went wrong, not how it is sent (that is `wire/encoding.py`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from mock_server.domain.words import counted

# An error echoes what the client sent (a value, an unknown key): each text is cut at this many characters, so
# an error body stays small however big the request (0.9 MB of unknown keys once gave a 3.4 MB error body).
MAX_ECHO_CHARS = 300
# ... and the details stop once their texts pass this many characters, with one last detail saying how many
# more there were: an error body stays under about 40 kB.
MAX_DETAILS_CHARS = 32 * 1024
# The message is the server's own sentence (it may still quote a value, such as an unknown scenario's name):
# it gets more room, as it can list what a response validation found.
MAX_MESSAGE_CHARS = 4000


def bounded_text(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """`text`, or its first `limit` characters and how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


# Where a problem is: the keys and list indexes from the top of the value, `()` for the value itself.
FieldPath = tuple[str | int, ...]


def field_path(parts: Iterable[str | int]) -> str:
    """`("limit", "pix", "withdraw", 1, "amount")` -> `limit.pix.withdraw[1].amount` (CONTRACT 2's `field`)."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass(frozen=True, slots=True)
class Detail:
    """One problem of a request or scenario: where it is and what is wrong."""

    path: FieldPath
    message: str

    @property
    def field(self) -> str:
        return field_path(self.path)

    def within(self, *prefix: str | int) -> Detail:
        """The same problem, seen from a value that holds this one at `prefix`."""
        return Detail((*prefix, *self.path), self.message)


class ApiError(Exception):
    """An error answered as `{"code", "message", "details"}` with `status`."""

    status: ClassVar[int] = 400
    code: ClassVar[str] = "invalid_request"

    def __init__(
        self,
        message: str,
        details: Sequence[Detail] = (),
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = tuple(details)
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": bounded_text(self.message, MAX_MESSAGE_CHARS)}
        if self.details:
            details: list[dict[str, str]] = []
            used = 0
            for index, detail in enumerate(self.details):
                field, message = bounded_text(detail.field), bounded_text(detail.message)
                used += len(field) + len(message)
                if used > MAX_DETAILS_CHARS:
                    left = len(self.details) - index
                    details.append(
                        {"field": "", "message": f"{counted(left, 'more problem')} not listed (the body is cut)"}
                    )
                    break
                details.append({"field": field, "message": message})
            body["details"] = details
        return body


class InvalidRequest(ApiError):
    status, code = 400, "invalid_request"


class MalformedJson(ApiError):
    status, code = 400, "malformed_json"


class MalformedYaml(ApiError):
    """A YAML body (the state document) the scenario files' safe reader cannot read."""

    status, code = 400, "malformed_yaml"


class Unauthorized(ApiError):
    status, code = 401, "unauthorized"


class UnsupportedMediaType(ApiError):
    status, code = 415, "unsupported_media_type"


class PayloadTooLarge(ApiError):
    status, code = 413, "payload_too_large"


class NotFound(ApiError):
    status, code = 404, "not_found"


class MethodNotAllowed(ApiError):
    status, code = 405, "method_not_allowed"


class EventNotFoundPublic(ApiError):
    """The interface's one documented error (EVC100011)."""

    status, code = 404, "EVC100011"


class EventNotFound(ApiError):
    """The admin API's name for an unknown event key."""

    status, code = 404, "event_not_found"


class EventAlreadyExists(ApiError):
    status, code = 409, "event_already_exists"


class InvalidTransition(ApiError):
    status, code = 409, "invalid_transition"


class AccountNotFound(ApiError):
    status, code = 404, "account_not_found"


class AccountAlreadyRegistered(ApiError):
    status, code = 409, "account_already_registered"


class RecipientListNotFound(ApiError):
    status, code = 404, "recipient_list_not_found"


class RecipientListAlreadyExists(ApiError):
    status, code = 409, "recipient_list_already_exists"


class RecipientAlreadyInList(ApiError):
    status, code = 409, "recipient_already_in_list"


class RecipientNotFound(ApiError):
    status, code = 404, "recipient_not_found"


class LimitNotFound(ApiError):
    status, code = 404, "limit_not_found"


class ScenarioNotFound(ApiError):
    """No scenario of that name: the message names the ones there are, so the next try can be right."""

    status, code = 404, "scenario_not_found"

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name = name
        self.known = sorted(known)
        there = f"the scenarios are {', '.join(self.known)}" if self.known else "there is no scenario at all"
        super().__init__(bounded_text(f"No scenario named {name!r}; {there}.", MAX_MESSAGE_CHARS))


class FaultNotFound(ApiError):
    status, code = 404, "fault_not_found"


class ResponseValidationFailed(ApiError):
    status, code = 500, "response_validation_failed"


class ExpectationNotMet(ApiError):
    status, code = 409, "verification_failed"


class SessionEvicted(ApiError):
    status, code = 410, "session_evicted"


class SessionNotFound(ApiError):
    status, code = 404, "session_not_found"


class SessionAlreadyExists(ApiError):
    status, code = 409, "session_already_exists"


class TooManySessions(ApiError):
    # 429, not 503: CONTRACT 2 promises no 5xx unless a fault was injected; the client can back off or clean up.
    status, code = 429, "too_many_sessions"


class QuotaExceeded(ApiError):
    """A quota fault's window is spent: the client is told when the next one opens (`Retry-After`, seconds)."""

    status, code = 429, "quota_exceeded"


# --- refused by the connection or the server's bounds (http/connection.py, state/bounds.py) -----------------


class MalformedHttp(ApiError):
    status, code = 400, "malformed_http"


class HttpsRequired(ApiError):
    """Plain HTTP sent to a port that speaks TLS (answered in plain HTTP, as nginx does)."""

    status, code = 400, "https_required"


class RequestTimeout(ApiError):
    status, code = 408, "request_timeout"


class HeadersTooLarge(ApiError):
    status, code = 431, "headers_too_large"


class CapacityExceeded(ApiError):
    status, code = 409, "capacity_exceeded"


class JournalOff(ApiError):
    status, code = 409, "journal_off"


class ClockNotFrozen(ApiError):
    status, code = 409, "clock_not_frozen"


class SnapshotNotFound(ApiError):
    status, code = 404, "snapshot_not_found"


class SnapshotLimitReached(ApiError):
    status, code = 409, "snapshot_limit_reached"


class BackendUnreachable(ApiError):
    """Shadow mode: the backend gave no answer (the mock's own answer is journaled beside the failure)."""

    status, code = 502, "backend_unreachable"


class NotRecording(ApiError):
    """POST /__mock/record/stop on a server that is not recording (`mock-server record` is)."""

    status, code = 409, "not_recording"


class RecordingNotWritten(ApiError):
    """Record mode: the scenario file (or the pseudonym map) could not be written; the recording goes on."""

    status, code = 409, "recording_not_written"


class ProviderStateUnreachable(ApiError):
    """A provider state the session cannot be put in (POST /__mock/pact/states): a record its scenario holds cannot
    be taken away, only the session's own changes can."""

    status, code = 409, "provider_state_unreachable"


# --- refused to protect the developer's machine from web pages (http/hosts.py, http/cross_origin.py) -------------


class HostNotAllowed(ApiError):
    status, code = 403, "host_not_allowed"


class CrossOriginRequest(ApiError):
    status, code = 403, "cross_origin_request"


class AdminHeaderRequired(ApiError):
    status, code = 403, "admin_header_required"
