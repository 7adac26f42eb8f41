"""`make lock` and `make upgrade-check`: the constraints file every install into .venv uses, and what would change.

lock           A clean virtual environment gets `pip install -e ".[dev,browser]"` with no constraints of ours (the
               newest releases that fit pyproject.toml); `pip freeze` of it, less the project itself, is written to
               constraints.txt as exact `==` pins. The `browser` extra is in it because `make test-browser` and
               `make screenshots` install it into .venv too.
upgrade-check  The same fresh install in a throwaway environment, then the default test suite (`pytest -q`) run
               with it; prints each package whose release differs from constraints.txt (old -> new, added,
               dropped) and whether the suite passed. Exits with pytest's status: non-zero when the suite fails.

pip merges constraint files, so a machine-wide one (pip's `global.constraint`) still applies; the lock only adds
exact pins. Usage: python scripts/lock.py {lock,upgrade-check} [--python PYTHON]
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


def upgrade_check(python: str, keep: bool) -> int:
    if not CONSTRAINTS.exists():
        raise SystemExit(f"{CONSTRAINTS.name} is missing: run `make lock` first")
    locked = pins(CONSTRAINTS.read_text(encoding="utf-8"))
    tmp = Path(tempfile.mkdtemp(prefix="pix-mock-upgrade-check-"))
    try:
        venv = tmp / "venv"
        newest = fresh_install(python, venv)
        changes = differences(locked, newest)
        say(f"{len(changes)} of {len(locked)} locked packages differ from {CONSTRAINTS.name} (locked -> newest):")
        for change in changes:
            print(f"  {change}")
        say("the default test suite on the newest releases: pytest -q")
        env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
        env["VIRTUAL_ENV"] = str(venv)
        status = run([str(venv / "bin" / "pytest"), "-q", "-p", "no:cacheprovider"], cwd=ROOT, env=env).returncode
    finally:
        if keep:
            say(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    verdict = "passed" if status == 0 else f"FAILED (pytest exit {status})"
    say(f"{len(changes)} package(s) differ from {CONSTRAINTS.name}; the default suite on the newest releases {verdict}")
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["lock", "upgrade-check"])
    parser.add_argument("--python", default="python3", help="the interpreter the environment is made with")
    parser.add_argument("--keep", action="store_true", help="upgrade-check: keep the throwaway environment")
    options = parser.parse_args()
    global COMMAND
    COMMAND = options.command
    if options.command == "lock":
        return lock(options.python)
    return upgrade_check(options.python, options.keep)


if __name__ == "__main__":
    sys.exit(main())
