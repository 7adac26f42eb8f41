"""The end of a recording (`mock-server record`): the `default` session's state written as a scenario file that
`mock-server check` accepts, identifiers replaced, on POST /__mock/record/stop or when the server stops."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from mock_server.domain.errors import NotRecording, RecordingNotWritten
from mock_server.domain.recording_notes import problem_words
from mock_server.domain.words import counted
from mock_server.http.handling import Call, Handler, Reply, ServerContext
from mock_server.http.record import WRITTEN_SESSION as WRITTEN
from mock_server.http.record import Recorder
from mock_server.scenarios.loader import ScenarioLoader
from mock_server.state.export import yaml_text
from mock_server.state.recording import RecordedDocument, SessionRecord, recorded_document, write_atomically


def finish(server: ServerContext) -> dict[str, Any]:
    """Write the recording's file (once; later calls answer what was written) and say what it holds. Raises
    NotRecording without record mode, RecordingNotWritten when a file cannot be written (nothing is lost: the
    recording goes on, and a later stop writes it again)."""
    recorder = _recorder(server)
    if recorder.stopped is not None:
        return recorder.stopped
    summary, files = _rendered(server, recorder)
    for path, text, private in files:
        try:
            write_atomically(path, text, private)
        except OSError as exc:
            raise RecordingNotWritten(
                f"The recording could not be written to {path}: {os_error_words(exc)}; nothing is lost, the "
                "recording goes on: make the file writable and stop again."
            ) from None
    recorder.stopped = summary
    return summary


def finish_at_exit(server: ServerContext) -> tuple[list[str], list[str]]:
    """The end of a recording as the server stops: the file written (unless a stop wrote it), and the lines for
    stdout and for stderr. A file that cannot be written where asked (a directory in its place, its folder gone,
    a full disk) is written into a new folder of the temporary directory, under its own name, and stderr says so:
    the session is not lost. Lines for stderr mean the command exits 1."""
    recorder = _recorder(server)
    if recorder.stopped is not None:
        return said(recorder.stopped), []
    summary, files = _rendered(server, recorder)
    errors: list[str] = []
    elsewhere: Path | None = None
    for path, text, private in files:
        try:
            write_atomically(path, text, private)
            continue
        except OSError as exc:
            errors.append(f"mock-server record: cannot write {path}: {os_error_words(exc)}")
        try:
            elsewhere = elsewhere or Path(tempfile.mkdtemp(prefix="mock-server-record-"))
            kept = elsewhere / path.name
            write_atomically(kept, text, private)
        except OSError as exc:
            errors.append(f"mock-server record: nor in the temporary directory ({os_error_words(exc)}): it is lost")
            continue
        errors.append(f"mock-server record: kept in {kept} instead: move it to {path}")
        key = "file" if path == recorder.options.out else "pseudonym_map"
        summary[key] = str(kept)
    recorder.stopped = summary
    return said(summary), errors


def os_error_words(exc: OSError) -> str:
    """Why a file could not be written, as the system says it (`read-only file system`, not a bare errno)."""
    words = exc.strerror or str(exc)
    return words[:1].lower() + words[1:]


def _recorder(server: ServerContext) -> Recorder:
    recorder = server.recorder
    if recorder is None:
        raise NotRecording("This server is not recording: start it with mock-server record --target URL --out FILE.")
    return recorder


def _rendered(server: ServerContext, recorder: Recorder) -> tuple[dict[str, Any], list[tuple[Path, str, bool]]]:
    """What the stop answers, and the files to write (path, text, private), from the session as it is."""
    options = recorder.options
    session = server.sessions.peek(WRITTEN)
    events, accounts = session.store.snapshot() if session is not None else ([], [])
    record = recorder.records.get(WRITTEN) or SessionRecord()
    pseudonyms = recorder.pseudonyms
    description = session.scenario.description if session is not None else f"recorded from {options.target}"
    recorded = recorded_document(description, list(events), accounts, record.registered, pseudonyms)
    loader = recorder.loader or ScenarioLoader.from_specs(server.specs)
    notes = recorded.notes + _checked(recorded, loader) + record.skipped
    files = [(options.out, yaml_text(recorded.document), False)]
    if options.pseudonym_map is not None and pseudonyms is not None:
        files.append((options.pseudonym_map, json.dumps(pseudonyms.mapping, indent=2, ensure_ascii=False) + "\n", True))
    written = {e["extraordinary_event_conciliation_key"] for e in recorded.document["events"]}
    summary = {
        "file": str(options.out),
        "scenario": options.name,
        "events": len(recorded.document["events"]),
        "accounts": len(recorded.document["accounts"]),
        "partial_accounts": recorded.partial,
        "pseudonym_map": str(options.pseudonym_map) if options.pseudonym_map and pseudonyms else None,
        "unreproduced_events": [{"key": k, "why": why} for k, why in record.unreproduced.items() if k in written],
        "notes": notes,
    }
    return summary, files


def _checked(recorded: RecordedDocument, loader: ScenarioLoader) -> list[str]:
    """Leave out of the document every event and account the scenario checks refuse (a target's answer off the
    interface), so that the file always loads; the notes say which and why."""
    notes = []
    document = recorded.document
    for _ in range(3):  # an item left out can only remove problems; a uniqueness clash may name a second one
        problems = loader.problems(document)
        if not problems:
            break
        dropped: dict[str, set[int]] = {"events": set(), "accounts": set()}
        for problem in problems:
            where = problem.path
            if len(where) >= 2 and where[0] in dropped and isinstance(where[1], int):
                dropped[str(where[0])].add(where[1])
                notes.append(f"{problem.field}: not written: {problem_words(problem.message)}")
        if not any(dropped.values()):
            notes += [f"{p.field}: {problem_words(p.message)}" for p in problems]
            break
        for part, indexes in dropped.items():
            if part == "accounts":
                gone = {document[part][i]["account_id"] for i in indexes}
                recorded.partial[:] = [a for a in recorded.partial if a not in gone]
            document[part] = [item for i, item in enumerate(document[part]) if i not in indexes]
    return notes


def said(summary: dict[str, Any]) -> list[str]:
    """The lines the command prints once the file is written."""
    lines = [
        f"mock-server record: wrote {summary['file']} (scenario {summary['scenario']}: "
        f"{counted(summary['events'], 'event')}, {counted(summary['accounts'], 'account')})"
    ]
    partial = summary["partial_accounts"]
    if partial:
        lines.append(
            f"mock-server record: {counted(len(partial), 'partial account')} (registration not recorded, written with "
            f"what the calls showed): {', '.join(partial)}"
        )
    if summary["pseudonym_map"]:
        lines.append(f"mock-server record: pseudonym map written to {summary['pseudonym_map']}")
    for event in summary["unreproduced_events"]:
        lines.append(f"mock-server record: event {event['key']} not answered byte for byte: {event['why']}")
    lines += [f"mock-server record: {note}" for note in summary["notes"]]
    return lines


async def stop_recording(call: Call) -> Reply:
    recorder = call.server.recorder
    summary = finish(call.server)
    if recorder is not None and recorder.on_stop is not None:
        recorder.on_stop()
    return Reply(200, summary)


HANDLERS: dict[str, Handler] = {"mockStopRecording": stop_recording}
