"""`make lock` and `make upgrade-check`: the constraints file every install into .venv uses, and what would change.

lock           A clean virtual environment gets `pip install -e ".[dev,browser]"` with no constraints of ours (the
               newest releases that fit pyproject.toml); `pip freeze` of it, less the project itself, is written to
               constraints.txt as exact `==` pins. The `browser` extra is in it because `make test-browser` and
               `make screenshots` install it into .venv too.
upgrade-check  The same fresh install in a throwaway environment, then the smoke tier (below) run with it;
               prints each package whose release differs from constraints.txt (old -> new, added, dropped) and
               whether the tier passed. Exits with pytest's status: non-zero when the tier fails.
lowest-check   A throwaway environment where uv installs `.[pytest,tls]` with `--resolution lowest-direct`: every
               direct dependency of the server, the plugin and its TLS at the lowest release pyproject.toml allows
               (what an integrator's resolver may pick), then the test runner's own tools (pytest-xdist, httpx2,
               hypothesis: no dependency of the package, newest); then the smoke tier. A floor nobody runs at is a
               guess: this is where each one is tried.

The smoke tier (SMOKE_TIER): the public API's and the admin API's HTTP tests, TLS and mutual TLS served by a real
`mock-server` process, the Host rule and header values over a real connection, and the pytest plugin in process and
in a child pytest.

pip merges constraint files, so a machine-wide one (pip's `global.constraint`) still applies; the lock only adds
exact pins. Usage: python scripts/lock.py {lock,upgrade-check,lowest-check} [--python PYTHON] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "constraints.txt"
EXTRAS = "dev,browser"  # everything a target installs into .venv: `make install` ([dev]) and the browser targets
HEADER = """\
# Exact pins of every package `pip install -e ".[{extras}]"` resolves to, written by `make lock`
# from a clean virtual environment ({python}, {when}). `make install` and every target that installs
# into .venv pass it with -c; the install stamp depends on it. What newer releases would change, and whether
# the suite passes with them: `make upgrade-check`.
"""
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")

# What both checks run: the public and admin API tiers, TLS serving and the plugin (README "Dependency floors").
SMOKE_TIER = [
    "tests/api",
    "tests/admin/test_admin_lifecycle.py",
    "tests/admin/test_admin_events.py",
    "tests/admin/test_admin_accounts.py",
    "tests/admin/test_admin_journal_faults_clock.py",
    "tests/admin/test_admin_state.py",
    "tests/admin/test_sessions.py",
    "tests/admin/test_provider_states.py",
    "tests/admin/test_pact_export.py",
    "tests/http/test_tls.py",
    "tests/http/test_hosts.py",  # the Host rule and header values as the protocol reads them, on each release
    "tests/plugin",
    "tests/e2e/test_tls.py",
    "tests/e2e/test_pytest_plugin.py",
    "tests/e2e/test_plugin_tls.py",
]
LOWEST_EXTRAS = "pytest,tls"  # what an integrator installs: the server, the pix_mock fixture, TLS certificates
RUNNER_TOOLS = ["pytest-xdist", "httpx2", "hypothesis"]  # the suite's own tools, not the package's dependencies


COMMAND = "lock"  # which of the two is running: the prefix of what it prints


def say(message: str) -> None:
    print(f"{COMMAND}: {message}", flush=True)


def run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result: subprocess.CompletedProcess[str] = subprocess.run(command, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    return result


def canonical(name: str) -> str:
    """PEP 503's normalised name: `PyYAML`, `pyyaml` and `py_yaml` are one project."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(text: str) -> dict[str, tuple[str, str]]:
    """`name==version` lines of a freeze or of constraints.txt: canonical name -> (name as written, version)."""
    found: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        match = PIN.match(line.split("#", 1)[0].strip())
        if match:
            found[canonical(match.group(1))] = (match.group(1), match.group(2))
    return found


def fresh_install(python: str, venv: Path) -> dict[str, tuple[str, str]]:
    """A new venv with the newest releases that fit pyproject.toml (no constraints of ours); its exact pins."""
    if run([python, "-m", "venv", "--clear", str(venv)]).returncode != 0:
        raise SystemExit(f"could not create a virtual environment with {python}")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    say(f"installing the newest releases of .[{EXTRAS}] into {venv}")
    for step in (["install", "--quiet", "--upgrade", "pip"], ["install", "--quiet", "-e", f".[{EXTRAS}]"]):
        if run([*pip, *step], cwd=ROOT).returncode != 0:
            raise SystemExit(f"pip {' '.join(step)} failed")
    frozen = run([*pip, "freeze", "--all", "--exclude-editable"], capture_output=True)
    if frozen.returncode != 0:
        raise SystemExit(f"pip freeze failed:\n{frozen.stderr}")
    return pins(frozen.stdout)


def lock(python: str) -> int:
    with tempfile.TemporaryDirectory(prefix="pix-mock-lock-") as tmp:
        found = fresh_install(python, Path(tmp) / "venv")
        version = run([str(Path(tmp) / "venv" / "bin" / "python"), "--version"], capture_output=True).stdout.strip()
    before = pins(CONSTRAINTS.read_text(encoding="utf-8")) if CONSTRAINTS.exists() else {}
    header = HEADER.format(extras=EXTRAS, python=version, when=time.strftime("%Y-%m-%d"))
    lines = [f"{name}=={release}" for name, release in sorted(found.values(), key=lambda pin: canonical(pin[0]))]
    CONSTRAINTS.write_text(header + "\n".join(lines) + "\n", encoding="utf-8")
    changes = differences(before, found)
    say(f"wrote {CONSTRAINTS.name}: {len(lines)} pins; {len(changes)} changed")
    for change in changes:
        print(f"  {change}")
    return 0


def differences(old: dict[str, tuple[str, str]], new: dict[str, tuple[str, str]]) -> list[str]:
    """`name old -> new` for each release that differs; packages only on one side are `added` or `dropped`."""
    lines = []
    for key in sorted(old.keys() | new.keys()):
        if key not in old:
            lines.append(f"{new[key][0]} (added) -> {new[key][1]}")
        elif key not in new:
            lines.append(f"{old[key][0]} {old[key][1]} -> (dropped)")
        elif old[key][1] != new[key][1]:
            lines.append(f"{new[key][0]} {old[key][1]} -> {new[key][1]}")
    return lines


@contextmanager
def throwaway(check: str, keep: bool) -> Iterator[Path]:
    """The path of a virtual environment to make in a temporary directory, removed afterwards unless `keep`."""
    tmp = Path(tempfile.mkdtemp(prefix=f"pix-mock-{check}-"))
    try:
        yield tmp / "venv"
    finally:
        if keep:
            say(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def upgrade_check(python: str, keep: bool) -> int:
    if not CONSTRAINTS.exists():
        raise SystemExit(f"{CONSTRAINTS.name} is missing: run `make lock` first")
    locked = pins(CONSTRAINTS.read_text(encoding="utf-8"))
    with throwaway("upgrade-check", keep) as venv:
        newest = fresh_install(python, venv)
        changes = differences(locked, newest)
        say(f"{len(changes)} of {len(locked)} locked packages differ from {CONSTRAINTS.name} (locked -> newest):")
        for change in changes:
            print(f"  {change}")
        stock = stock_protocol(venv)
        if stock:
            say(
                f"NOTE: {stock}. The smoke tier skips the tests of those extras (marker own_protocol): run the whole "
                "suite on this uvicorn, then widen KNOWN_UVICORN in mock_server/server.py"
            )
        say("the smoke tier on the newest releases")
        status = smoke_tier(venv, floors=False)
    verdict = "passed" if status == 0 else f"FAILED (pytest exit {status})"
    say(f"{len(changes)} package(s) differ from {CONSTRAINTS.name}; the smoke tier on the newest releases {verdict}")
    return status


def stock_protocol(venv: Path) -> str:
    """Why the server in `venv` serves uvicorn's own HTTP protocol ("" when it serves mock-server's)."""
    probe = "from mock_server.server import stock_protocol_reason as r; print(r() or '')"
    try:
        answer = run([str(venv / "bin" / "python"), "-c", probe], cwd=ROOT, capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "could not ask the installed server which protocol it serves: no answer within 60 s"
    if answer.returncode != 0:
        return f"could not ask the installed server which protocol it serves: {answer.stderr.strip()[-300:]}"
    return answer.stdout.strip()


def smoke_tier(venv: Path, floors: bool) -> int:
    """SMOKE_TIER under `venv`'s pytest, on both cores. The suite's pyproject options name its plugins with a flag
    pytest 8.0 lacks (--disable-plugin-autoload), so this run autoloads the installed ones, as an integrator's pytest
    does (the child pytests of the plugin's tests too); at the floors, deprecation warnings of old releases beside new
    transitive ones are no failure, and schemathesis (not installed there) is left out."""
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["VIRTUAL_ENV"] = str(venv)
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    options = "--strict-markers --import-mode=importlib"
    command = [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", f"addopts={options}"]
    if floors:
        command += ["-W", "ignore::DeprecationWarning", "-k", "not schemathesis"]
    # In process on both cores; the tests that start processes one by one, as make test-e2e runs them (a child pytest
    # under an xdist worker would take the worker's name for its sessions).
    in_process = [path for path in SMOKE_TIER if not path.startswith("tests/e2e/")]
    tiers = "not slow and not browser and not cluster and not exhaustive"
    status = run([*command, "-n", "2", "-m", f"{tiers} and not e2e", *in_process], cwd=ROOT, env=env).returncode
    processes = [path for path in SMOKE_TIER if path.startswith("tests/e2e/")]
    return status or run([*command, "-m", tiers, *processes], cwd=ROOT, env=env).returncode


def lowest_check(python: str, keep: bool) -> int:
    with throwaway("lowest-check", keep) as venv:
        if run([python, "-m", "venv", str(venv)]).returncode != 0:
            raise SystemExit(f"could not create a virtual environment with {python}")
        vpython = str(venv / "bin" / "python")
        if run([vpython, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "uv"]).returncode != 0:
            raise SystemExit("pip install uv failed")
        uv = [str(venv / "bin" / "uv"), "pip", "install", "--quiet", "-p", vpython]
        say(f"installing .[{LOWEST_EXTRAS}] with every direct dependency at its floor (uv --resolution lowest-direct)")
        if run([*uv, "--resolution", "lowest-direct", "-e", f".[{LOWEST_EXTRAS}]"], cwd=ROOT).returncode != 0:
            raise SystemExit("uv pip install --resolution lowest-direct failed")
        if run([*uv, *RUNNER_TOOLS], cwd=ROOT).returncode != 0:
            raise SystemExit(f"uv pip install {' '.join(RUNNER_TOOLS)} failed")
        frozen = run([vpython, "-m", "pip", "freeze", "--all", "--exclude-editable"], capture_output=True)
        floors = pins(frozen.stdout)
        direct = ["starlette", "uvicorn", "pyyaml", "jsonschema", "referencing", "jsonschema-rs", "httpx", "orjson"]
        direct += ["rfc3339-validator", "swagger-ui-bundle-v2", "rapidyaml", "pytest", "cryptography"]
        say("at the floors: " + ", ".join(f"{floors[d][0]} {floors[d][1]}" for d in direct if d in floors))
        status = smoke_tier(venv, floors=True)
    say("the smoke tier at the declared floors " + ("passed" if status == 0 else f"FAILED (pytest exit {status})"))
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["lock", "upgrade-check", "lowest-check"])
    parser.add_argument("--python", default="python3", help="the interpreter the environment is made with")
    parser.add_argument("--keep", action="store_true", help="the checks: keep the throwaway environment")
    options = parser.parse_args()
    global COMMAND
    COMMAND = options.command
    if options.command == "lock":
        return lock(options.python)
    if options.command == "lowest-check":
        return lowest_check(options.python, options.keep)
    return upgrade_check(options.python, options.keep)


if __name__ == "__main__":
    sys.exit(main())
