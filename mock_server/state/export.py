"""The state export (`GET /__mock/state`), made off the event loop.

Writing a big session's state as YAML takes tens of seconds (30k accounts: 27 s with libyaml's emitter,
65 s without): on the event loop it stalled every other session. The store's snapshot is taken on the loop
(cheap, and no write can interleave with it), then turned into a scenario document and written in one worker
thread, one export at a time, so the loop keeps at least half the interpreter. The text is written one event
or account at a time: libyaml's emitter keeps the interpreter for the whole of what it is given (a whole
document of 3000 accounts: 0.4 s in which the loop could not run). A cancelled export (the client went away,
the server shuts down) stops at its next write.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from mock_server.domain.conversions import account_to_scenario, event_to_scenario
from mock_server.domain.models import Account, Event
from mock_server.state.schedules import plan_to_json
from mock_server.state.sessions import Session

if TYPE_CHECKING:
    import yaml

# One worker: exports queue behind each other instead of taking the interpreter from the event loop.
_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="state-export")


@functools.cache
def _dumper() -> type[yaml.SafeDumper]:
    """libyaml's safe dumper (same text as PyYAML's own, 2.4x faster), made on the first export: PyYAML is not
    imported by a start that never writes YAML."""
    import yaml

    base: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class Dumper(base):  # type: ignore[misc,valid-type]
        """Never anchors and aliases: written item by item they could not span items, and a scenario file is
        plain data (a record shared by two places is written twice)."""

        def ignore_aliases(self, data: Any) -> bool:
            return True

    return Dumper


class ExportCancelled(Exception):
    pass


class _Text:
    """Where the emitter writes: the text so far, or ExportCancelled once nobody waits for it."""

    def __init__(self, cancelled: threading.Event) -> None:
        self._parts: list[str] = []
        self._cancelled = cancelled

    def write(self, text: str) -> None:
        if self._cancelled.is_set():
            raise ExportCancelled
        self._parts.append(text)

    def getvalue(self) -> str:
        return "".join(self._parts)


def state_document(
    description: str, events: Iterable[Event], accounts: list[Account], schedules: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A session's state as a scenario file: description, events, accounts (with the proposals made), and the
    schedules still pending, when there are any."""
    document: dict[str, Any] = {
        "description": description,
        "events": [event_to_scenario(e) for e in events],
        "accounts": [account_to_scenario(a) for a in accounts],
    }
    if schedules:
        document["schedules"] = schedules
    return document


def pending_schedules(session: Session) -> list[dict[str, Any]]:
    """The pending schedules as a scenario file writes them, with the lookups still to come."""
    return [plan_to_json(s.remaining()) for s in session.schedules.pending()]


def yaml_text(document: dict[str, Any], cancelled: threading.Event | None = None) -> str:
    """The document as a scenario file. ASCII with escapes: PyYAML writes NEL (U+0085) and U+2028/9 raw, and
    reads them back as line breaks."""
    import yaml

    dumper = _dumper()
    out = _Text(cancelled or threading.Event())
    for key, value in document.items():
        if isinstance(value, list) and value:
            # What dumping the whole document writes (a block sequence under a key is not indented), in pieces.
            out.write(f"{key}:\n")
            for item in value:
                yaml.dump([item], out, Dumper=dumper, sort_keys=False, allow_unicode=False)
        else:
            yaml.dump({key: value}, out, Dumper=dumper, sort_keys=False, allow_unicode=False)
    return out.getvalue()


async def off_the_loop(work: Callable[[threading.Event], Any]) -> Any:
    """`work(cancelled)` in the export's worker; `cancelled` is set if the caller goes away meanwhile."""
    cancelled = threading.Event()
    try:
        return await asyncio.get_running_loop().run_in_executor(_WORKER, work, cancelled)
    except asyncio.CancelledError:
        cancelled.set()
        raise


async def export_state(session: Session, as_yaml: bool) -> Any:
    """The session's state (a document, or its YAML text), made and written off the event loop: even the walk
    over the seed's events (a million packed events take seconds to unpack)."""
    description = session.scenario.description
    events, accounts = session.store.snapshot()
    schedules = pending_schedules(session)

    def work(cancelled: threading.Event) -> Any:
        document = state_document(description, events, accounts, schedules)
        return yaml_text(document, cancelled) if as_yaml else document

    return await off_the_loop(work)
