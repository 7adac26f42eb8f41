"""docs/pact.md's worked example, run for real: the outputs shown under its export and verify steps, never typed.

The page's console block (the client's calls, `curl` lines) runs on a fresh `mock-server --seed 1`, as `make run`
serves, through scripts/docs_examples.py's `curl`; its outputs are that script's to write (and
tests/api/test_readme.py's to check). Then the step marked
`<!-- pact-example: export -->` (a `mock-server pact` command) runs against that server, in a folder of its own,
and the step marked `<!-- pact-example: verify -->` (a Python script: Pact's verifier) runs there against a second,
fresh server started as the page says (`--scenario empty --seed 2 --clock 2031-05-06T07:08:09Z`). What each
prints becomes the ```text block that follows it. Where the page writes 127.0.0.1:8000 and 127.0.0.1:8001, the
servers' own ports are used.

Usage: python scripts/pact_example.py [--check]   (--check writes nothing; exit 1 when the page's outputs are not
what the example prints now, the verifier's timings aside). tests/e2e/test_pact_page.py runs the check.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "pact.md"
FIRST, SECOND = "http://127.0.0.1:8000", "http://127.0.0.1:8001"
SECOND_RUN = ("--scenario", "empty", "--seed", "2", "--clock", "2031-05-06T07:08:09Z")  # as the page says
STEPS = ("export", "verify")
TIMEOUT = 120
# The verifier's own timings, which differ on every run: "(1ms loading, 7ms verification)".
TIMINGS = re.compile(r" \(\d+m?s loading, \d+m?s verification\)")


def _module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def docs_examples() -> ModuleType:
    return _module("docs_examples", ROOT / "scripts" / "docs_examples.py")


def step(markdown: str, name: str) -> tuple[str, int, int]:
    """The code of the step marked `<!-- pact-example: NAME -->`, and where the ```text block after it holds its
    output (the first and the past-the-last line index of that output)."""
    lines = markdown.split("\n")
    start = lines.index(f"<!-- pact-example: {name} -->")
    opening = start + 1
    closing = lines.index("```", opening + 1)
    code = "\n".join(lines[opening + 1 : closing])
    output_start = lines.index("```text", closing) + 1
    output_end = lines.index("```", output_start)
    return code, output_start, output_end


@contextmanager
def server(*args: str) -> Iterator[str]:
    """`mock-server --port 0 ARGS` on 127.0.0.1; its base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "--port", "0", *args],
        stdout=subprocess.PIPE,
        text=True,
        env={name: value for name, value in os.environ.items() if not name.startswith("MOCK_SERVER_")},
    )
    try:
        assert process.stdout is not None
        ready = re.match(r"^mock-server ready on (\S+) ", process.stdout.readline())
        if ready is None:
            raise SystemExit("pact_example: a server did not start")
        yield ready[1]
    finally:
        process.terminate()
        process.wait(timeout=TIMEOUT)
        if process.stdout is not None:
            process.stdout.close()


def _run(argv: list[str], folder: str) -> str:
    environment = {name: value for name, value in os.environ.items() if not name.startswith("MOCK_SERVER_")}
    result = subprocess.run(
        argv, cwd=folder, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT
    )
    return result.stdout.decode("utf-8").replace("\r\n", "\n").strip("\n")


def outputs(markdown: str) -> dict[str, str]:
    """What the export and verify steps print, run as the page shows them after its console block."""
    examples = docs_examples()
    export, _, _ = step(markdown, "export")
    verify, _, _ = step(markdown, "verify")
    found: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as folder:
        with server("--seed", examples.SEED) as first, examples.curl_to(int(first.rsplit(":", 1)[1])) as environment:
            for example in examples.readme_module().examples(markdown):
                examples.run(example.text, environment)
            command = export.replace(FIRST, first).replace("mock-server ", "", 1)
            found["export"] = _run([sys.executable, "-m", "mock_server", *command.split()], folder)
        with server(*SECOND_RUN) as url:
            found["verify"] = _run([sys.executable, "-c", verify.replace(SECOND, url)], folder)
    return found


def with_outputs(markdown: str, found: dict[str, str]) -> str:
    for name in STEPS:
        _, start, end = step(markdown, name)
        lines = markdown.split("\n")
        markdown = "\n".join([*lines[:start], *found[name].split("\n"), *lines[end:]])
    return markdown


def same_but_timings(shown: str, printed: str) -> bool:
    return TIMINGS.sub("", shown) == TIMINGS.sub("", printed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the page would change")
    args = parser.parse_args()
    markdown = PAGE.read_text(encoding="utf-8")
    fresh = with_outputs(markdown, outputs(markdown))
    if args.check:
        if same_but_timings(markdown, fresh):
            print("docs/pact.md: as shown")
            return 0
        print("docs/pact.md: differs from what the example prints now")
        return 1
    PAGE.write_text(fresh, encoding="utf-8")
    print("docs/pact.md: rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
