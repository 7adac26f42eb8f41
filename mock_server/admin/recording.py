"""The end of a recording (`mock-server record`): the `default` session's state written as a scenario file that
`mock-server check` accepts, identifiers replaced, on POST /__mock/record/stop or when the server stops."""

from __future__ import annotations

import json
import os
from typing import Any

from mock_server.domain.errors import NotRecording, RecordingNotWritten
from mock_server.domain.pseudonyms import KEY_BYTES, Pseudonymizer
from mock_server.domain.words import counted
from mock_server.http.handling import Call, Handler, Reply, ServerContext
from mock_server.http.record import WRITTEN_SESSION as WRITTEN
from mock_server.scenarios.loader import ScenarioLoader
from mock_server.state.export import yaml_text
from mock_server.state.recording import RecordedDocument, SessionRecord, recorded_document, write_atomically


def finish(server: ServerContext) -> dict[str, Any]:
    """Write the recording's file (once; later calls answer what was written) and say what it holds. Raises
    NotRecording without record mode, OSError when a file cannot be written."""
    recorder = server.recorder
    if recorder is None:
        raise NotRecording("This server is not recording: start it with mock-server record --target URL --out FILE.")
    if recorder.stopped is not None:
        return recorder.stopped
    options = recorder.options
    session = server.sessions.peek(WRITTEN)
    events, accounts = session.store.snapshot() if session is not None else ([], [])
    record = recorder.records.get(WRITTEN) or SessionRecord()
    pseudonyms = None
    if not options.keep_identifiers:
        pseudonyms = Pseudonymizer(options.pseudonym_key or os.urandom(KEY_BYTES))
    description = session.scenario.description if session is not None else f"recorded from {options.target}"
    recorded = recorded_document(description, list(events), accounts, record.registered, pseudonyms)
    notes = recorded.notes + _checked(recorded, ScenarioLoader.from_specs(server.specs)) + record.skipped
    write_atomically(options.out, yaml_text(recorded.document))
    if options.pseudonym_map is not None and pseudonyms is not None:
        text = json.dumps(pseudonyms.mapping, indent=2, ensure_ascii=False) + "\n"
        write_atomically(options.pseudonym_map, text, private=True)
    written = {e["extraordinary_event_conciliation_key"] for e in recorded.document["events"]}
    recorder.stopped = {
        "file": str(options.out),
        "scenario": options.name,
        "events": len(recorded.document["events"]),
        "accounts": len(recorded.document["accounts"]),
        "partial_accounts": recorded.partial,
        "pseudonym_map": str(options.pseudonym_map) if options.pseudonym_map and pseudonyms else None,
        "unreproduced_events": [{"key": k, "why": why} for k, why in record.unreproduced.items() if k in written],
        "notes": notes,
    }
    return recorder.stopped


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
                notes.append(f"{problem.field}: not written: {problem.message}")
        if not any(dropped.values()):
            notes += [f"{p.field}: {p.message}" for p in problems]
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
    try:
        summary = finish(call.server)
    except OSError as exc:
        raise RecordingNotWritten(f"The recording could not be written: {exc}.") from None
    if recorder is not None and recorder.on_stop is not None:
        recorder.on_stop()
    return Reply(200, summary)


HANDLERS: dict[str, Handler] = {"mockStopRecording": stop_recording}
