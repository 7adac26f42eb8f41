"""What a pytest fixture that mocks the API costs a run: `pix_mock` against pytest-httpserver and respx.

Measured as integrators run pytest: the same file of N tests (300 by default) run by whole `pytest` processes,
plugins autoloaded from their entry points (nothing pinned, no `-p`), four runs a round: each test asks for
`pix_mock` and sends one GET of the default scenario's pending event through `pix_mock.client`, or asks for
pytest-httpserver's `httpserver` (or respx's `respx_mock`) and sends that GET through one module-level
httpx.Client, or asks for no fixture and sends nothing (the baseline). A run's figure is its wall time, launch
to exit, less that of the same round's baseline: the whole-run cost of the fixture (start-up and per-test cost
both count), also shown over N. Rounds are interleaved (the four runs of a round in a rotated order) after one
unmeasured warm-up round, and the median over the rounds is reported; all of it serially and again with
pytest-xdist's `-n 4` (where pix_mock's server is one for the run, a child process of the xdist controller, and
pytest-httpserver's one a worker).

pytest-httpserver, respx and pytest-xdist are benchmark-only: they are installed, with the package (editable)
and its `pytest` extra, into a virtual environment of their own under bench/.tools/ the first time, never into
.venv. A conftest.py of this benchmark, beside the test files, sums each phase's duration, which splits a run's
figure into what a test costs once the fixture is up (the medians of setup, call and teardown) and the rest.

    .venv/bin/python -m bench.fixture_cost              # this section alone, spliced into BENCHMARKS.md
    .venv/bin/python -m bench.fixture_cost --rounds 5 --tests 300 --output /tmp/fixture.md
    .venv/bin/python -m bench.run --sections fixture    # the same, as a section of bench.run's report
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness import ROOT, TOOLS, WORK, Harness, core_jiffies, log
from bench.servers import LOOKUP_PATH

VENV = TOOLS / "fixture-venv"  # pytest-httpserver, respx and the package (editable): benchmark-only
VENV_PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".installed-stamp"
TOOL_PACKAGES = ("pytest-httpserver", "respx", "pytest-xdist")
VERSIONS = ("pytest", "httpx", "pytest-httpserver", "werkzeug", "respx", "pytest-xdist")
FILES = WORK / "fixture-cost"
BASELINE = "no fixture"
PIX_MOCK = "pix_mock"
HTTPSERVER = "pytest-httpserver"
RESPX = "respx"
TARGET_MS = 3.0
MODES = ((), ("-n", "4"))  # serially, and as pytest-xdist's four workers

# What the mock answers for the pending event: pytest-httpserver and respx answer these bytes.
EVENT_BODY = (
    b'{"extraordinary_event_conciliation_key":"9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11",'
    b'"security_key":"3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90","investment_key":"6a2f8c14-5b3d-4e7a-8f9c-1d0e2b4a6c83",'
    b'"amortization_type":"early_amortization","total_expected_amount":1500,"total_discount_amount":0,'
    b'"total_paid_amount":0,"status":"pending_conciliation","reference_date":"2026-11-01","due_date":"2026-11-30",'
    b'"paid_at":null,"event_conciliation_list":[]}'
)


def _head(tests: int, what: str) -> str:
    return (
        f'"""Written by bench/fixture_cost.py: {tests} tests, {what}."""\n\n'
        "import httpx\nimport pytest\n\n"
        "CLIENT = httpx.Client()  # the code under test's client, made once\n"
        f"PATH = {LOOKUP_PATH!r}\n"
        f"BODY = {EVENT_BODY!r}\n"
    )


TESTS = {
    BASELINE: (
        "nothing",
        """
@pytest.mark.parametrize("n", range({n}))
def test_lookup(n):
    pass
""",
    ),
    PIX_MOCK: (
        "a GET of pix_mock's session through pix_mock.client (the in-process server)",
        """
@pytest.mark.parametrize("n", range({n}))
def test_lookup(pix_mock, n):
    response = pix_mock.client.get(PATH)
    assert response.json()["status"] == "pending_conciliation"
""",
    ),
    HTTPSERVER: (
        "a GET of pytest-httpserver's server, which answers BODY",
        """
@pytest.mark.parametrize("n", range({n}))
def test_lookup(httpserver, n):
    httpserver.expect_request(PATH).respond_with_data(BODY, content_type="application/json")
    response = CLIENT.get(httpserver.url_for(PATH))
    assert response.json()["status"] == "pending_conciliation"
""",
    ),
    RESPX: (
        "a GET that respx answers with BODY",
        """
@pytest.mark.parametrize("n", range({n}))
def test_lookup(respx_mock, n):
    respx_mock.get("http://pix.test" + PATH).respond(200, content=BODY, headers={{"Content-Type": "application/json"}})
    response = CLIENT.get("http://pix.test" + PATH)
    assert response.json()["status"] == "pending_conciliation"
""",
    ),
}

# The conftest.py of every run: each phase's durations (under xdist the controller sees every worker's reports),
# written as JSON where FIXTURE_COST_TIMES says.
TIMING_PLUGIN = '''"""Written by bench/fixture_cost.py: each phase's durations, to the file FIXTURE_COST_TIMES names."""

import json
import os

DURATIONS = {"setup": [], "call": [], "teardown": []}


def pytest_runtest_logreport(report):
    DURATIONS[report.when].append(report.duration)


def pytest_unconfigure(config):
    if hasattr(config, "workerinput"):
        return
    with open(os.environ["FIXTURE_COST_TIMES"], "w") as out:
        json.dump(DURATIONS, out)
'''


@dataclass
class FixtureRuns:
    """One fixture's runs, a round each."""

    label: str
    what: str
    seconds: list[float] = field(default_factory=list)  # wall, launch to exit
    in_tests: list[float] = field(default_factory=list)  # median setup + call + teardown, seconds
    other_load: list[float] = field(default_factory=list)  # % of the machine's CPU other processes took meanwhile


@dataclass
class ModeCost:
    """The runs of one way of running pytest: serially (`workers` 0) or with `-n workers`."""

    workers: int
    runs: dict[str, FixtureRuns]
    problem: str | None = None

    @property
    def name(self) -> str:
        return "serially" if not self.workers else f"with `-n {self.workers}`"

    def overhead_s(self, label: str) -> list[float]:
        """Seconds the run took over the baseline, a value a round (the baseline of the same round)."""
        base = self.runs[BASELINE].seconds
        return [s - b for s, b in zip(self.runs[label].seconds, base, strict=True)]

    def in_test_ms(self, label: str) -> list[float]:
        """ms a test once the fixture is up: the medians of setup, call and teardown, over the baseline's."""
        base = self.runs[BASELINE].in_tests
        return [(s - b) * 1000 for s, b in zip(self.runs[label].in_tests, base, strict=True)]

    def median(self, label: str) -> float | None:
        """The median whole-run cost over the baseline, in seconds."""
        values = self.overhead_s(label) if self.runs[label].seconds else []
        return statistics.median(values) if values else None


@dataclass
class FixtureCost:
    tests: int
    rounds: int
    modes: list[ModeCost]
    versions: dict[str, str]

    @property
    def problem(self) -> str | None:
        return next((mode.problem for mode in self.modes if mode.problem), None)


def ensure_tools() -> Path:
    """The benchmark's own virtual environment, made or brought up to date when pyproject.toml is newer or the
    tools it holds are not the ones listed."""
    wanted = " ".join(TOOL_PACKAGES)
    fresh = STAMP.exists() and STAMP.stat().st_mtime >= (ROOT / "pyproject.toml").stat().st_mtime
    if fresh and STAMP.read_text(encoding="utf-8") == wanted:
        return VENV_PYTHON
    log(f"installing {', '.join(TOOL_PACKAGES)} and the package (editable, [pytest]) into {VENV}")
    TOOLS.mkdir(parents=True, exist_ok=True)
    if not VENV_PYTHON.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=300)
    subprocess.run(
        [
            *(str(VENV_PYTHON), "-m", "pip", "install", "--quiet", "-c", str(ROOT / "constraints.txt")),
            *("-e", f"{ROOT}[pytest]", *TOOL_PACKAGES),
        ],
        check=True,
        timeout=900,
    )
    STAMP.write_text(wanted, encoding="utf-8")
    return VENV_PYTHON


def tool_versions(python: Path) -> dict[str, str]:
    code = f"import json, importlib.metadata as m; print(json.dumps({{d: m.version(d) for d in {list(VERSIONS)!r}}}))"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60, check=True)
    versions: dict[str, str] = json.loads(out.stdout)
    return versions


def write_files(tests: int) -> dict[str, Path]:
    """The test files, one a fixture, in a directory with a pytest.ini of its own (not the repository's) and
    the timing conftest.py."""
    FILES.mkdir(parents=True, exist_ok=True)
    (FILES / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (FILES / "fixture_cost_timing.py").unlink(missing_ok=True)  # the timing plugin of older versions
    (FILES / "conftest.py").write_text(TIMING_PLUGIN, encoding="utf-8")
    paths = {}
    for index, (label, (what, body)) in enumerate(TESTS.items()):
        path = paths[label] = FILES / f"test_fixture_{index}.py"
        path.write_text(_head(tests, what) + body.format(n=tests), encoding="utf-8")
    return paths


def child_env(harness: Harness) -> dict[str, str]:
    """Plugins autoloaded as integrators have them; no MOCK_SERVER_* setting of the caller's; `--tree`'s package
    first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_SERVER_", "PYTEST_"))}
    env["PYTHONPATH"] = str(harness.tree.resolve())
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_once(harness: Harness, python: Path, path: Path, tests: int, workers: int) -> tuple[float, float, float]:
    """One whole pytest on `path` (`-n workers` unless 0): its wall seconds, its median setup + call +
    teardown, and the share of the machine's CPU that other processes took meanwhile."""
    times = FILES / "times.json"
    times.unlink(missing_ok=True)
    argv = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *(("-n", str(workers)) if workers else ())]
    env = {**child_env(harness), "FIXTURE_COST_TIMES": str(times)}
    busy0, total0 = core_jiffies("")  # "cpu ": every core
    kids0 = os.times()
    started = time.perf_counter()
    process = subprocess.Popen(
        [*argv, path.name],
        cwd=FILES,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate(timeout=60)
        raise RuntimeError(f"{path.name}: no end within 600 s") from None
    seconds = time.perf_counter() - started
    kids1 = os.times()
    busy1, total1 = core_jiffies("")
    summary = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    if process.returncode != 0 or not re.search(rf"\b{tests} passed\b", summary):
        raise RuntimeError(f"{path.name}: exit {process.returncode}: {stdout[-1500:]} {stderr[-1500:]}")
    durations = json.loads(times.read_text())
    in_tests = sum(statistics.median(durations[phase]) for phase in ("setup", "call", "teardown"))
    ticks = os.sysconf("SC_CLK_TCK")
    ours = (kids1.children_user + kids1.children_system - kids0.children_user - kids0.children_system) * ticks
    other = max(0.0, (busy1 - busy0 - ours) * 100 / (total1 - total0)) if total1 > total0 else 0.0
    return seconds, in_tests, other


def bench_mode(
    harness: Harness, python: Path, paths: dict[str, Path], tests: int, rounds: int, workers: int
) -> ModeCost:
    runs = {label: FixtureRuns(label, TESTS[label][0]) for label in TESTS}
    mode = ModeCost(workers, runs)
    labels = list(TESTS)
    try:
        for label in labels:  # the warm-up round: bytecode written, caches filled
            run_once(harness, python, paths[label], tests, workers)
        for index in range(rounds):
            order = labels[index % len(labels) :] + labels[: index % len(labels)]
            for label in order:
                seconds, in_tests, other = run_once(harness, python, paths[label], tests, workers)
                runs[label].seconds.append(seconds)
                runs[label].in_tests.append(in_tests)
                runs[label].other_load.append(other)
            line = ", ".join(
                f"{label} {runs[label].seconds[-1]:.2f} s"
                + ("" if label == BASELINE else f" ({mode.overhead_s(label)[-1]:+.2f} s)")
                for label in labels
            )
            log(f"fixture cost {mode.name}, round {index + 1}/{rounds}: {line}")
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        mode.problem = str(exc).splitlines()[0][:300]
        log(f"fixture cost {mode.name}: FAILED: {mode.problem}")
        done = min(len(r.seconds) for r in runs.values())
        for r in runs.values():  # whole rounds only
            del r.seconds[done:], r.in_tests[done:], r.other_load[done:]
    return mode


def bench_fixture_cost(harness: Harness, tests: int = 300, rounds: int = 3) -> FixtureCost:
    python = ensure_tools()
    paths = write_files(tests)
    modes = [bench_mode(harness, python, paths, tests, rounds, int(mode[1]) if mode else 0) for mode in MODES]
    return FixtureCost(tests, rounds, modes, tool_versions(python))


# --- the report ------------------------------------------------------------------------------------------

HEADING = "## pytest fixture cost: pix_mock, pytest-httpserver, respx"


def _verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("**met**" if ok else "**MISSED**")


def _mode_table(cost: FixtureCost, mode: ModeCost) -> list[str]:
    out = [f"{cost.tests} tests {mode.name}:\n"]
    if mode.problem:
        out.append(f"The runs stopped early: {mode.problem}\n")
    out += [
        "| fixture | whole run over no fixture | ms/test | rounds: min..max | in a test | once a run | run wall | "
        "other load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, runs in mode.runs.items():
        if not runs.seconds:
            out.append(f"| {label} | not measured | | | | | | |")
            continue
        wall = f"{statistics.median(runs.seconds):.2f} s"
        other = f"{statistics.median(runs.other_load):.0f}%"
        if label == BASELINE:
            out.append(f"| {label} | | | | | | {wall} | {other} |")
            continue
        values = mode.overhead_s(label)
        total = statistics.median(values)
        per_test = statistics.median(mode.in_test_ms(label))
        once = total - per_test * cost.tests / 1000 / max(1, mode.workers)
        figure = f"**{total:.2f} s**" if label == PIX_MOCK else f"{total:.2f} s"
        out.append(
            f"| {label} | {figure} | {total * 1000 / cost.tests:.2f} | {min(values):.2f}..{max(values):.2f} s | "
            f"{per_test:.2f} ms | {once:.2f} s | {wall} | {other} |"
        )
    return [*out, ""]


def fixture_section(cost: FixtureCost, made_by: str | None = None) -> list[str]:
    """The section: how it was measured, a table a mode, the targets."""
    versions = ", ".join(f"{name} {version}" for name, version in cost.versions.items())
    out = [f"{HEADING}\n"]
    if made_by:
        out.append(f"{made_by}\n")
    rounds = max((len(mode.runs[BASELINE].seconds) for mode in cost.modes), default=0)
    out += [
        f"The same file of {cost.tests} tests run by whole `pytest` processes as integrators run them (plugins "
        "autoloaded from their entry points, nothing pinned, `-p no:cacheprovider`), once a fixture: each test "
        "asks for it and sends one GET of the pending event, which the fixture answers: through `pix_mock.client` "
        "for pix_mock, through one module-level `httpx.Client` for pytest-httpserver and respx (which answer the "
        "same JSON, registered in the test); the baseline asks for no fixture and sends nothing. *Whole run over "
        "no fixture* is a run's wall time (launch to exit) less the same round's baseline: all the fixture costs, "
        f"start-up and per-test cost both (*ms/test*: the same over {cost.tests}). {rounds} rounds after an "
        "unmeasured one, the four runs of a round in a rotated order; medians over the rounds. *In a test* is "
        "the medians of setup, call and teardown over the baseline's (the test's own GET included); *once a "
        "run* is the rest (a server's start and stop, imports the baseline does not do; with `-n`, the tests' "
        "time divided among the workers). *Other load* is the share of the machine's CPU that other processes "
        "took during the run. With `-n 4`, pix_mock's server is one for the run (a child process of the xdist "
        "controller) and "
        f"pytest-httpserver starts one a worker. Tools: {versions} (a virtual environment of the benchmark's "
        "own, `bench/.tools/fixture-venv`).\n",
    ]
    for mode in cost.modes:
        out += _mode_table(cost, mode)
    out += ["| target | measured | verdict |", "|---|---:|---|"]
    serial = cost.modes[0].median(PIX_MOCK) if cost.modes else None
    per_test = None if serial is None else serial * 1000 / cost.tests
    out.append(
        f"| pix_mock ≤ {TARGET_MS:g} ms/test over no fixture (serially) | "
        f"{'n/a' if per_test is None else f'{per_test:.2f} ms'} | "
        f"{_verdict(None if per_test is None else per_test <= TARGET_MS)} |"
    )
    for mode in cost.modes:
        pix, server = mode.median(PIX_MOCK), mode.median(HTTPSERVER)
        measured = "n/a" if pix is None or server is None else f"{pix:.2f} vs {server:.2f} s"
        out.append(
            f"| pix_mock's whole run ≤ pytest-httpserver's ({mode.name}) | {measured} | "
            f"{_verdict(None if pix is None or server is None else pix <= server)} |"
        )
    return [*out, ""]


def splice(document: str, section: list[str]) -> str:
    """`document` with its fixture-cost section replaced by `section` (or, without one, `section` put before the
    targets, or at the end)."""
    text = "\n".join(section).rstrip("\n") + "\n\n"
    start = document.find(HEADING)
    if start >= 0:
        end = document.find("\n## ", start + len(HEADING))
        return document[:start] + text + (document[end + 1 :] if end >= 0 else "")
    targets = document.find("\n## Targets")
    if targets >= 0:
        return document[: targets + 1] + text + document[targets + 1 :]
    return document.rstrip("\n") + "\n\n" + text


def main(argv: Sequence[str] | None = None) -> int:
    from bench.report import git_revision

    parser = argparse.ArgumentParser(prog="python -m bench.fixture_cost", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tests", type=int, default=300, help="tests in the file (default 300)")
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds (default 3)")
    parser.add_argument("--tree", type=Path, default=ROOT, help="checkout whose mock_server/ is measured")
    parser.add_argument(
        "--output", type=Path, default=ROOT / "BENCHMARKS.md", help="report whose fixture-cost section is replaced"
    )
    parser.add_argument("--command", default=None, help="the command shown in the report")
    args = parser.parse_args(argv)
    command = args.command or "python -m bench.fixture_cost " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
    )
    revision = git_revision(args.tree.resolve())
    started = time.monotonic()
    with Harness("", tree=args.tree.resolve(), pin=False) as harness:  # no wrk: "" for its path

        def on_signal(signum: int, _frame: object) -> None:
            harness.stop_all()
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        cost = bench_fixture_cost(harness, args.tests, args.rounds)
    made_by = (
        f"Made by `{command}` on {time.strftime('%Y-%m-%d %H:%M %Z')} at commit {revision}, in "
        f"{(time.monotonic() - started) / 60:.1f} min (the other sections come from the run the header names; "
        "*other load* says how busy the machine was)."
    )
    document = args.output.read_text(encoding="utf-8") if args.output.exists() else "# Benchmarks\n"
    args.output.write_text(splice(document, fixture_section(cost, made_by)), encoding="utf-8")
    log(f"wrote the fixture-cost section of {args.output}")
    return 0 if cost.problem is None else 1


if __name__ == "__main__":
    sys.exit(main())
