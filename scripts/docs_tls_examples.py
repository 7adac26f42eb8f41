"""The outputs of docs/tls.md, made by running its commands for real: `mock-server pki init`, a mock-server serving
mutual TLS, curl and httpx against it. Never typed by hand; tests/e2e/test_docs_tls.py checks them (`--check`).

The page's ```shell-session blocks are `$` lines, each run by bash in a fresh directory (where `pki init` writes its
files), in order, its stdout and stderr shown under it. A `$ mock-server` line that serves (not `pki`, `check`,
`healthcheck` or `wait`) is started in the background and shows its ready line; it is stopped when the page ends.
The ```pycon blocks are `>>>` lines run in one Python interpreter, as the interactive prompt shows them (an
exception as its last line under `Traceback (most recent call last):` and `...`, as doctest writes it).

The page serves on localhost:8000, as `mock-server` does by default; the replay's server gets a free port instead
(MOCK_SERVER_PORT=0). curl reaches it for localhost:8000 through `--connect-to` (the Host header, TLS name and
certificate check stay those of localhost:8000); a Python line is run with localhost:8000 changed to the real
port; and the real port is written back as 8000 in what is shown. These `(shell-session|pycon)` blocks are not
```console blocks: tests/api/test_readme.py's in-process replay knows nothing of TLS.

Compared with `--check`, after masking what differs from run to run: a new PKI's serial numbers, fingerprints and
validity, the OpenSSL and curl versions, the line numbers in `_ssl.c`.

Usage: python scripts/docs_tls_examples.py [--check]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "tls.md"
SHOWN_PORT = "8000"
SHOWN_AT = f"localhost:{SHOWN_PORT}"
PROMPT, PYTHON_PROMPT, CONTINUATION = "$ ", ">>> ", "... "
BLOCKS = ("```shell-session", "```pycon")
NOT_SERVING = ("pki", "check", "healthcheck", "wait")
TIMEOUT = 60
# What a fresh PKI, another machine's OpenSSL or curl, or another Python build prints differently: masked before
# a page is compared with a new run (the page shows one real run's values).
VOLATILE = (
    (re.compile(r"\b[0-9a-f]{64}\b"), "<sha-256>"),
    (re.compile(r'"serial_number": "[0-9A-F]+"'), '"serial_number": "<serial>"'),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}-03:00"), "<instant>"),
    (re.compile(r"OpenSSL/\d+\.\d+\.\d+\w*"), "OpenSSL/<version>"),
    (re.compile(r"curl/\d+\.\d+\.\d+"), "curl/<version>"),
    (re.compile(r"_ssl\.c:\d+"), "_ssl.c:<line>"),
)


def masked(text: str) -> str:
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


class Replay:
    """The page's commands, run in order in `directory`: one serving mock-server at most, one Python namespace."""

    def __init__(self, directory: Path, tools: Path) -> None:
        self.directory = directory
        self.port: str | None = None
        self.server: subprocess.Popen[str] | None = None
        self.namespace: dict[str, Any] = {"__name__": "__docs__"}
        self.env = {name: value for name, value in os.environ.items() if not name.startswith("MOCK_SERVER_")}
        self.env.update(
            LC_ALL="C.UTF-8", PATH=f"{tools}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        )
        self.tools = tools

    def shown(self, text: str) -> str:
        return text if self.port is None else text.replace(f":{self.port}", f":{SHOWN_PORT}")

    def shell(self, command: str) -> list[str]:
        words = command.split()
        if words[0] == "mock-server" and (len(words) == 1 or words[1] not in NOT_SERVING):
            return self._serve(command)
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=self.directory,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=TIMEOUT,
            check=False,
        )
        return _lines(self.shown(result.stdout.decode("utf-8")))

    def _serve(self, command: str) -> list[str]:
        assert self.server is None, "one serving mock-server a page"
        self.server = subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            cwd=self.directory,
            env={**self.env, "MOCK_SERVER_PORT": "0"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.server.stdout is not None
        line = self.server.stdout.readline()
        ready = re.match(r"^mock-server ready on https?://127\.0\.0\.1:(\d+) ", line)
        if ready is None:
            raise SystemExit(f"docs_tls_examples: `{command}` did not start: {line!r}")
        self.port = ready[1]
        wrapper = self.tools / "curl"
        real = shutil.which("curl", path=os.environ["PATH"])
        if real is None:
            raise SystemExit("docs_tls_examples: curl is not installed (apt-get install curl)")
        wrapper.write_text(f'#!/bin/sh\nexec {real} --connect-to {SHOWN_AT}:127.0.0.1:{self.port} "$@"\n')
        wrapper.chmod(0o755)
        return [self.shown(line.rstrip("\n"))]

    def python(self, source: str) -> list[str]:
        if self.port is not None:
            source = source.replace(SHOWN_AT, f"localhost:{self.port}")
        out = io.StringIO()
        cwd = Path.cwd()
        os.chdir(self.directory)
        try:
            with contextlib.redirect_stdout(out):
                try:
                    code = compile(source, "<docs/tls.md>", "single")
                    exec(code, self.namespace)
                except Exception as exc:
                    detail = traceback.format_exception_only(type(exc), exc)[-1].rstrip("\n")
                    print(f"Traceback (most recent call last):\n  ...\n{detail}")
        finally:
            os.chdir(cwd)
        return _lines(self.shown(out.getvalue()))

    def close(self) -> None:
        client = self.namespace.get("client")
        if hasattr(client, "close"):
            client.close()
        if self.server is not None:
            self.server.send_signal(signal.SIGTERM)
            self.server.communicate(timeout=TIMEOUT)


def _lines(text: str) -> list[str]:
    text = text.replace("\r\n", "\n").rstrip("\n")
    return text.split("\n") if text else []


@contextmanager
def replay() -> Iterator[Replay]:
    with tempfile.TemporaryDirectory(prefix="docs-tls-") as folder:
        directory, tools = Path(folder) / "work", Path(folder) / "tools"
        directory.mkdir()
        tools.mkdir()
        running = Replay(directory, tools)
        try:
            yield running
        finally:
            running.close()


def regenerate(markdown: str, run: Replay) -> str:
    """`markdown` with the lines under each command of its shell-session and pycon blocks as they print now."""
    lines = markdown.split("\n")
    out: list[str] = []
    index, block = 0, None
    while index < len(lines):
        line = lines[index]
        index += 1
        if block is None:
            block = line.strip() if line.strip() in BLOCKS else None
            out.append(line)
            continue
        if line.startswith("```"):
            block = None
            out.append(line)
            continue
        prompt = PROMPT if block == "```shell-session" else PYTHON_PROMPT
        if not line.startswith(prompt):
            raise SystemExit(f"docs_tls_examples: line {index}: output before any command: {line!r}")
        source = [line[len(prompt) :]]
        out.append(line)
        while prompt == PYTHON_PROMPT and index < len(lines) and lines[index].startswith(CONTINUATION):
            source.append(lines[index][len(CONTINUATION) :])
            out.append(lines[index])
            index += 1
        while index < len(lines) and not lines[index].startswith((prompt, "```")):
            index += 1  # the output shown now: replaced
        if prompt == PROMPT:
            out += run.shell(source[0])
        else:
            out += run.python("\n".join(source) + ("\n" if len(source) > 1 else ""))
    return "\n".join(out)


def differences(shown: str, fresh: str) -> list[str]:
    """The lines that differ once what varies from run to run is masked, as a unified diff."""
    import difflib

    return list(
        difflib.unified_diff(masked(shown).split("\n"), masked(fresh).split("\n"), "shown", "now", lineterm="", n=1)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the page differs")
    args = parser.parse_args()
    shown = PAGE.read_text(encoding="utf-8")
    with replay() as run:
        fresh = regenerate(shown, run)
    if args.check:
        diff = differences(shown, fresh)
        print("\n".join(diff) if diff else f"{PAGE.relative_to(ROOT)}: as shown")
        return 1 if diff else 0
    PAGE.write_text(fresh, encoding="utf-8")
    print(f"{PAGE.relative_to(ROOT)}: rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
