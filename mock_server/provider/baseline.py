"""`verify-provider --baseline FILE` / `--write-baseline FILE`: divergences a team already knows of. A known one is
reported and does not fail the run, a new one fails it, a known one that no longer occurs is reported fixed. The
file is written byte-stable (sorted by check, no timestamps, no ids of the run), so it is committed and seen to
shrink in review.

    {"divergences": [{"check": "getExtraordinaryEvent: lookup-paid 1/1: look the paid event up",
                      "reason": "..."}]}
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mock_server.provider.report import check_key
from mock_server.provider.runner import Check
from mock_server.wire.files import UnreadableFile, read_bounded

MAX_BASELINE_BYTES = 4 * 1024 * 1024
# What differs from run to run in a difference's words: the accounts a run registers carry its run id.
_RUN_ACCOUNT = re.compile(r"\b\d{4}-\d{6}\b")


class BaselineFileError(Exception):
    """The baseline cannot be read or is not a baseline; the message names the file."""


def reason(check: Check) -> str:
    """Why the check diverges, in words the next run repeats: its first difference (run-made ids hidden)."""
    text = check.not_run if check.not_run is not None else (check.differences[0] if check.differences else "")
    return _RUN_ACCOUNT.sub("NNNN-NNNNNN", text.splitlines()[0] if text else "")


def read_baseline(path: Path) -> dict[str, str]:
    """check -> reason, as the file lists them."""
    try:
        data = read_bounded(path, MAX_BASELINE_BYTES)
    except UnreadableFile as exc:
        raise BaselineFileError(str(exc)) from None
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise BaselineFileError(f"{path}: is not JSON: {exc}") from None
    entries = document.get("divergences") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("check"), str) and isinstance(e.get("reason", ""), str)
        for e in entries
    ):
        raise BaselineFileError(f'{path}: is not a baseline: {{"divergences": [{{"check": ..., "reason": ...}}]}}')
    return {e["check"]: e.get("reason", "") for e in entries}


def baseline_bytes(checks: Iterable[Check]) -> bytes:
    """The baseline of these divergences: the same divergences make the same bytes."""
    entries = sorted({check_key(c): reason(c) for c in checks}.items())
    document = {"divergences": [{"check": key, "reason": text} for key, text in entries]}
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


@dataclass
class Judged:
    """A run's divergences against a baseline."""

    known: list[Check] = field(default_factory=list)
    new: list[Check] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)  # checks the baseline lists that now agree

    @property
    def holds(self) -> bool:
        return not self.new

    def lines(self, path: Path) -> list[str]:
        lines = [f"baseline {path}: {len(self.known)} known, {len(self.new)} new, {len(self.fixed)} fixed"]
        lines += [f"known: {check_key(c)}" for c in self.known]
        lines += [f"new:   {check_key(c)} ({reason(c)})" for c in self.new]
        lines += [f"fixed: {key}" for key in self.fixed]
        return lines


def judge(divergences: Iterable[Check], baseline: Mapping[str, str]) -> Judged:
    judged = Judged()
    seen = set()
    for check in divergences:
        key = check_key(check)
        seen.add(key)
        (judged.known if key in baseline else judged.new).append(check)
    judged.fixed = sorted(key for key in baseline if key not in seen)
    return judged
