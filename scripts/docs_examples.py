"""The output shown under every `$ curl` line of the docs, made by running the line for real: never typed by hand.

For each page tests/api/test_readme.py replays (its `replayed_pages()`: README.md and the docs/ pages with
```console blocks), a fresh `mock-server --seed 1` is started, as `make run` starts it but on a free port. Every `$`
line of the page's console blocks is run by bash, in order, with a `curl` that reaches that server for
127.0.0.1:8000 (curl's `--connect-to`: the Host header, which the journal and the served specs show, still names
127.0.0.1:8000). What the line prints, stdout and stderr, becomes the lines shown under it. A command the page
shows without output stays so (the page chose not to show it: the whole state export, the real time), but it is run
all the same: later commands depend on its effects. To add a command, write it with any placeholder line under it.

The replay test then checks the page against an in-process app built the same way.

Usage: python scripts/docs_examples.py [--check] [PAGE ...]   (default: every replayed page; --check writes nothing
and exits 1 when a page's outputs are not what the server prints now)
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
SHOWN_AT = "127.0.0.1:8000"  # where the pages' commands send their requests: `make run`'s address
SEED = "1"  # what `make run` passes as --seed
PROMPT = "$ "
READY = re.compile(r"^mock-server ready on http://127\.0\.0\.1:(?P<port>\d+) ")
TIMEOUT = 60


def readme_module() -> ModuleType:
    """tests/api/test_readme.py: the list of replayed pages and the console-block parser."""
    path = ROOT / "tests" / "api" / "test_readme.py"
    spec = importlib.util.spec_from_file_location("readme_examples", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@contextmanager
def make_run_server() -> Iterator[int]:
    """`mock-server --seed 1` on a free port of 127.0.0.1, as `make run` serves; its port."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "--port", "0", "--seed", SEED],
        stdout=subprocess.PIPE,
        text=True,
        env={name: value for name, value in os.environ.items() if not name.startswith("MOCK_SERVER_")},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        ready = READY.match(line)
        if ready is None:
            raise SystemExit(f"docs_examples: the server did not start: {line!r}")
        yield int(ready["port"])
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=TIMEOUT)


@contextmanager
def curl_to(port: int) -> Iterator[dict[str, str]]:
    """An environment whose `curl` is the real one, reaching the server on `port` for 127.0.0.1:8000."""
    real = shutil.which("curl")
    if real is None:
        raise SystemExit("docs_examples: curl is not installed (apt-get install curl)")
    with tempfile.TemporaryDirectory() as folder:
        wrapper = Path(folder) / "curl"
        wrapper.write_text(f'#!/bin/sh\nexec {real} --connect-to {SHOWN_AT}:127.0.0.1:{port} "$@"\n')
        wrapper.chmod(0o755)
        yield {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "LC_ALL": "C.UTF-8"}


def run(command: str, environment: dict[str, str]) -> list[str]:
    """What `command` prints, as the page shows it: stdout and stderr, line ends without CR, no trailing newline."""
    result = subprocess.run(
        ["bash", "-c", command],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=TIMEOUT,
        check=False,
    )
    text = result.stdout.decode("utf-8").replace("\r\n", "\n").rstrip("\n")
    return text.split("\n") if text else []


def _without_trailing_blanks(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def regenerate(markdown: str, environment: dict[str, str]) -> str:
    """`markdown` with the lines under each `$` line of its console blocks replaced by what the command prints."""
    lines = markdown.split("\n")
    out: list[str] = []
    index, in_console = 0, False
    while index < len(lines):
        line = lines[index]
        index += 1
        if not in_console:
            in_console = line.strip() == "```console"
            out.append(line)
            continue
        if line.startswith("```"):
            in_console = False
            out.append(line)
            continue
        if not line.startswith(PROMPT):
            raise SystemExit(f"docs_examples: line {index}: output before any command in a console block: {line!r}")
        shown: list[str] = []
        while index < len(lines) and not lines[index].startswith(PROMPT) and not lines[index].startswith("```"):
            shown.append(lines[index])
            index += 1
        blank_after = len(shown) - len(_without_trailing_blanks(shown))
        printed = run(line[len(PROMPT) :], environment)
        out.append(line)
        if _without_trailing_blanks(shown):  # shown with output: the output as printed now
            out += printed
        out += [""] * blank_after
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("pages", nargs="*", type=Path, help="pages to regenerate (default: every replayed page)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page would change")
    args = parser.parse_args()
    pages = [page.resolve() for page in args.pages] or readme_module().replayed_pages()
    stale: list[Path] = []
    for page in pages:
        markdown = page.read_text(encoding="utf-8")
        with make_run_server() as port, curl_to(port) as environment:
            fresh = regenerate(markdown, environment)
        name = page.relative_to(ROOT)
        if fresh == markdown:
            print(f"{name}: as shown")
        elif args.check:
            stale.append(page)
            print(f"{name}: differs from what the server prints now")
        else:
            page.write_text(fresh, encoding="utf-8")
            print(f"{name}: rewritten")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
