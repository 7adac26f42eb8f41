"""The server's bounds: what one session may hold (the caps that keep a long or hostile run's memory bounded),
how long and how big a connection's request may be, and byte sizes as the command line writes them
(`4MiB`, `512k`, `off`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from mock_server.domain.errors import CapacityExceeded
from mock_server.state.journal import DEFAULT_JOURNAL_BYTES, DEFAULT_JOURNAL_TOTAL_BYTES

MAX_FAULTS = 100
MAX_SESSION_BYTES = 64 * 1024**2


@dataclass(frozen=True)
class Bounds:
    """Per session, except `journal_total_bytes`. The seed of a scenario does not count: only what a session
    adds (accounts registered, events created, recipients added, faults armed, schedules made), and every byte of
    what it holds beyond its seed (`max_session_bytes`: its own records, a state loaded into it, its schedules
    and snapshots; the journal and the faults have bounds of their own)."""

    max_accounts: int = 10_000
    max_events: int = 10_000
    max_recipients: int = 10_000  # per recipient list
    max_faults: int = MAX_FAULTS  # armed at once
    max_schedules: int = 1_000  # held (applied and failed ones stay listed): every lookup walks them
    max_session_bytes: int = MAX_SESSION_BYTES  # estimated memory (state/footprint.py)
    journal_bytes: int = DEFAULT_JOURNAL_BYTES  # 0: no journal
    journal_total_bytes: int = DEFAULT_JOURNAL_TOTAL_BYTES


@dataclass(frozen=True)
class ConnectionLimits:
    """Per connection (http/connection.py): seconds, and the bytes of a request line and headers."""

    idle_timeout: float = 5.0  # nothing sent: on a new connection, or after an answer (keep-alive)
    header_timeout: float = 10.0  # from a request's first byte to the end of its headers
    body_timeout: float = 30.0  # from the end of the headers to the end of the body
    max_header_bytes: int = 64 * 1024


def check_room(count: int, cap: int, what: str, option: str) -> None:
    """409 `capacity_exceeded` when `count` of `what` already reach `cap`."""
    if count >= cap:
        raise CapacityExceeded(
            f"The session holds {cap} {what} already, the most it may (mock-server {option}); reset it or clear some."
        )


class ByteMeter:
    """One session's bytes against its bound (`--max-session-bytes`): the parts that hold them (its store,
    schedules and snapshots) report what they hold, and every write that adds asks for room first, so that a
    refused write changes nothing."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[Callable[[], int]] = []

    def count(self, held: Callable[[], int]) -> None:
        """Count what `held()` reports, from now on."""
        self._parts.append(held)

    @property
    def used(self) -> int:
        total = 0
        for held in self._parts:  # a loop, not sum() over a generator: asked on every write
            total += held()
        return total

    def check(self, more: int, what: str) -> None:
        """409 `capacity_exceeded` when `more` bytes (of `what`) would take the session past its bound."""
        if more <= 0:
            return
        used = self.used
        if used + more <= self.limit:
            return
        if more > self.limit:
            raise CapacityExceeded(
                f"{what} needs {more:,} bytes, more than a session may hold: {self.limit:,} "
                "(mock-server --max-session-bytes)."
            )
        raise CapacityExceeded(
            f"{what} needs {more:,} bytes; the session holds {used:,} of its {self.limit:,} (mock-server "
            "--max-session-bytes): reset it, delete snapshots or clear schedules."
        )


_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]?)(i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(text: str) -> int:
    """`off` or `0` -> 0; `4096`, `64k`, `64KiB`, `4M`, `4MB`, `1GiB` -> bytes (the units are binary: k = 1024)."""
    if text.strip().lower() == "off":
        return 0
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size (e.g. 4096, 64k, 4MiB, 1G, or off)")
    return int(match[1]) * _UNITS[match[2].lower()]
