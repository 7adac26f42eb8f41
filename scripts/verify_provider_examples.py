"""The outputs shown under the commands of docs/verify-provider.md's replayed blocks, made by running them for real.

Each block after a `<!-- replayed: SETUP -->` line runs against real servers (`python -m mock_server` on free
ports): `make-run`, one `mock-server --seed 1` shared by the page's make-run blocks, as `make run` serves;
`shadow`, for each such block, a mock on the payments scenario (the backend) and a mock with `--seed 1 --shadow`
in front of it, both with the clock frozen at tests/provider/test_docs_examples.CLOCK. Every `$` line is run by
bash in order, 127.0.0.1:8000 (and :8001, the backend) replaced by the real addresses, and what it prints, stdout
and stderr, becomes the lines under it (with the page's addresses). tests/provider/test_docs_examples.py replays
the page in process.

Usage: python scripts/verify_provider_examples.py [--check]   (--check writes nothing; exit 1 when the page's
outputs are not what the commands print now, the time a run took aside)
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
READY = re.compile(r"^mock-server ready on (?P<url>http://127\.0\.0\.1:\d+) ")
TIMEOUT = 120


def harness() -> ModuleType:
    """tests/provider/test_docs_examples.py: the page, its block parser, the shown addresses."""
    path = ROOT / "tests" / "provider" / "test_docs_examples.py"
    sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location("verify_provider_docs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _environment() -> dict[str, str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # the venv's mock-server
    clean = {name: value for name, value in os.environ.items() if not name.startswith("MOCK_SERVER_")}
    return {**clean, "PATH": path, "LC_ALL": "C.UTF-8"}


@contextmanager
def server(*args: str) -> Iterator[str]:
    """`python -m mock_server --port 0 ARGS`, ready; its base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "--port", "0", *args],
        stdout=subprocess.PIPE,
        text=True,
        env=_environment(),
    )
    try:
        assert process.stdout is not None
        ready = READY.match(process.stdout.readline())
        if ready is None:
            raise SystemExit(f"verify_provider_examples: mock-server {' '.join(args)} did not start")
        yield ready["url"]
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=TIMEOUT)


def run(command: str, base: str, backend: str | None, shown: ModuleType, folder: str) -> list[str]:
    text = command.replace(shown.SHOWN_TARGET, base)
    if backend is not None:
        text = text.replace(shown.SHOWN_BACKEND, backend)
    result = subprocess.run(
        ["bash", "-c", text],
        cwd=folder,
        env=_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=TIMEOUT,
        check=False,
    )
    printed = result.stdout.decode("utf-8").rstrip("\n").replace(base, shown.SHOWN_TARGET)
    if backend is not None:
        printed = printed.replace(backend, shown.SHOWN_BACKEND)
    return printed.split("\n") if printed else []


def regenerate(markdown: str, shown: ModuleType) -> str:
    lines = markdown.split("\n")
    found = shown.blocks(markdown)
    outputs: dict[int, list[str]] = {}  # line of a command -> what it printed
    with tempfile.TemporaryDirectory() as folder:
        make_run = [b for b in found if b.setup == "make-run"]
        if make_run:
            with server("--seed", "1") as base:
                for block in make_run:
                    for command in block.commands:
                        outputs[command.line] = run(command.text, base, None, shown, folder)
        for block in (b for b in found if b.setup == "shadow"):
            with (
                server("--scenario", "payments", "--clock", shown.CLOCK) as backend,
                server("--seed", "1", "--clock", shown.CLOCK, "--shadow", backend) as base,
            ):
                for command in block.commands:
                    outputs[command.line] = run(command.text, base, backend, shown, folder)
    out: list[str] = []
    index = 0
    while index < len(lines):
        out.append(lines[index])
        index += 1
        printed = outputs.get(index)  # `index` is now the 1-based number of the line just copied
        if printed is None:
            continue
        while index < len(lines) and not lines[index].startswith(("$ ", "```")):
            index += 1  # the old output
        out += printed
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the page would change")
    args = parser.parse_args()
    shown = harness()
    page: Path = shown.PAGE
    markdown = page.read_text(encoding="utf-8")
    fresh = regenerate(markdown, shown)
    same = shown.masked(fresh.split("\n")) == shown.masked(markdown.split("\n"))
    if args.check:
        print(f"{page.relative_to(ROOT)}: {'as shown' if same else 'stale'}")
        return 0 if same else 1
    if fresh != markdown:
        page.write_text(fresh, encoding="utf-8")
        print(f"{page.relative_to(ROOT)}: rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
