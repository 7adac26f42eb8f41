"""`mock-server record`'s process side (cli.py parses its options): why a folder cannot take the recording, the
file written as the server stops, and the exit status when it could not be written where asked (exit 1)."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import FrameType

    from mock_server.http.handling import ServerContext


def unwritable_directory(directory: Path) -> str | None:
    """Why a recording's file cannot be made in `directory`, in words (None: it can)."""
    if not directory.is_dir():
        return "does not exist"
    if os.access(directory, os.W_OK | os.X_OK):
        return None
    try:
        read_only = bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    return f"cannot be written: {os.strerror(errno.EROFS if read_only else errno.EACCES).lower()}"


@contextlib.contextmanager
def exit_1_when_not_written(recording: bool, not_written: list[str]) -> Iterator[None]:
    """Record mode: uvicorn raises SIGTERM again once stopped, which would end the process by the signal even when
    the recording could not be written where asked; then the command exits 1 instead (SystemExit from the handler
    uvicorn restores and calls). Written, the signal ends the process as before."""
    if not recording or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        if not_written:
            raise SystemExit(1)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def writing_recording(
    server: ServerContext, then: Callable[[], None] | None, not_written: list[str]
) -> Callable[[], None]:
    """What the server does once stopped in record mode: the file written (unless a stop wrote it), said, then
    `then`. A file not written where asked is kept elsewhere and said on stderr (admin/recording.finish_at_exit);
    `not_written` gets those lines, and the command exits 1."""

    def finish_recording() -> None:
        from mock_server.admin.recording import finish_at_exit

        written, errors = finish_at_exit(server)
        for line in written:
            print(line, flush=True)
        for line in errors:
            print(line, file=sys.stderr, flush=True)
        not_written.extend(errors)
        if then is not None:
            then()

    return finish_recording
