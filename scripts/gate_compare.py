"""`make gate-compare`: the labelled corpus of spec changes (tests/gate/mutations.py) run through `mock-server gate
spec` and through Specmatic's `compare` (the jar `make interop` installs under .tools/), and an identical spec
through both; the verdicts side by side go into docs/gate.md, between its gate-compare markers.

Each Specmatic run starts a JVM and generates examples for the whole spec: about 20 s of CPU, a minute or more of
wall time on a busy machine. Results are kept in .tools/gate-compare/results.json as they come, so an interrupted
run goes on where it stopped (`--fresh` starts over).
Usage: python scripts/gate_compare.py [--fresh] [--timeout SECONDS] [--table-only]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from interop import SPECMATIC_JAR, SPECMATIC_VERSION, TOOLS, ensure_specmatic  # noqa: E402
from mock_server.gate import command  # noqa: E402
from tests.gate.mutations import CORPUS, Mutation, shipped  # noqa: E402

WORK = TOOLS / "gate-compare"
RESULTS = WORK / "results.json"
DOC = ROOT / "docs" / "gate.md"
START, END = "<!-- gate-compare:start -->", "<!-- gate-compare:end -->"
IDENTICAL = Mutation("identical", False, "the same file", lambda document: None)
RULE = re.compile(r"\bR\d{4}\b")


def ours(old: Path, new: Path) -> tuple[bool, int]:
    """(breaking?, how many breaking changes listed) by `mock-server gate spec`."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = command.main(["spec", "--old", str(old), "--new", str(new)])
    if status == 2:
        raise SystemExit(f"gate spec could not read {old} or {new}")
    return status == 1, sum(1 for line in out.getvalue().splitlines() if line.startswith("breaking: "))


def specmatic(old: Path, new: Path, timeout: float, log: Path) -> tuple[str, list[str]]:
    """('breaking' | 'compatible' | 'timeout' | 'error', the rule ids it printed)."""
    command_line = ["nice", "java", "-jar", str(SPECMATIC_JAR), "compare", str(old), str(new)]
    try:
        result = subprocess.run(command_line, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return "timeout", []
    text = result.stdout + result.stderr
    log.write_text(text, encoding="utf-8")
    rules = sorted(set(RULE.findall(text)))
    if "not backward compatible" in text:
        return "breaking", rules
    if result.returncode == 0:
        return "compatible", rules
    return "error", rules


def run(mutation: Mutation, timeout: float | None) -> dict[str, object]:
    """Both verdicts on one case (`timeout` None: ours alone, Specmatic's left `not run`)."""
    old_document, new_document = (shipped(), shipped()) if mutation is IDENTICAL else mutation.versions()
    folder = WORK / mutation.name
    folder.mkdir(parents=True, exist_ok=True)
    old, new = folder / "old.yaml", folder / "new.yaml"  # JSON is YAML; Specmatic goes by the extension
    old.write_text(json.dumps(old_document, indent=1), encoding="utf-8")
    new.write_text(json.dumps(new_document, indent=1), encoding="utf-8")
    breaking, listed = ours(old, new)
    started = time.monotonic()
    theirs, rules = specmatic(old, new, timeout, folder / "specmatic.log") if timeout is not None else ("not run", [])
    return {
        "name": mutation.name,
        "label": "breaking" if mutation.breaking else "not breaking",
        "why": mutation.why,
        "ours": "breaking" if breaking else "compatible",
        "ours_listed": listed,
        "specmatic": theirs,
        "specmatic_rules": rules,
        "specmatic_seconds": round(time.monotonic() - started, 1),
    }


def _right(label: str, verdict: str) -> bool:
    return (label == "breaking") == (verdict == "breaking")


def _mark(result: dict[str, object], verdict: str) -> str:
    return "" if verdict == "not run" or _right(str(result["label"]), verdict) else " ✗"


def table(results: list[dict[str, object]]) -> str:
    rows = [
        "| change | for a client | `gate spec` | Specmatic 2.55.1 `compare` |",
        "|---|---|---|---|",
    ]
    for r in results:
        rules = ", ".join(r["specmatic_rules"]) if r["specmatic_rules"] else ""  # type: ignore[arg-type]
        theirs = f"{r['specmatic']}" + (f" ({rules})" if rules else "")
        rows.append(
            f"| `{r['name']}` | {r['label']}: {r['why']} | {r['ours']}{_mark(r, str(r['ours']))} | "
            f"{theirs}{_mark(r, str(r['specmatic']))} |"
        )
    ours_right = sum(_right(str(r["label"]), str(r["ours"])) for r in results)
    ran = [r for r in results if r["specmatic"] != "not run"]
    theirs_right = sum(_right(str(r["label"]), str(r["specmatic"])) for r in ran)
    left = len(results) - len(ran)
    untried = f" {left} of the {len(results)} cases were not run through Specmatic yet (`not run`)." if left else ""
    summary = (
        f"\n{len(results)} cases (the shipped spec against itself, then {len(results) - 1} changes): `gate spec` "
        f"agrees with the label on {ours_right}, Specmatic {SPECMATIC_VERSION} `compare` on {theirs_right} of "
        f"the {len(ran)} it ran "
        f"(✗ marks a verdict that disagrees with the label).{untried}"
    )
    return "\n".join(rows) + "\n" + summary


def write_doc(results: list[dict[str, object]]) -> None:
    text = DOC.read_text(encoding="utf-8")
    before, _, rest = text.partition(START)
    _, _, after = rest.partition(END)
    DOC.write_text(f"{before}{START}\n{table(results)}\n{END}{after}", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", action="store_true", help="forget the results of an earlier run")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds for one Specmatic run")
    parser.add_argument(
        "--table-only", action="store_true", help="write docs/gate.md's table from the results kept so far, run nothing"
    )
    args = parser.parse_args()
    if args.table_only:
        kept = {r["name"]: r for r in json.loads(RESULTS.read_text(encoding="utf-8"))} if RESULTS.exists() else {}
        write_doc([kept.get(m.name) or run(m, None) for m in (IDENTICAL, *CORPUS)])
        return 0
    ensure_specmatic()
    WORK.mkdir(parents=True, exist_ok=True)
    done: dict[str, dict[str, object]] = {}
    if RESULTS.exists() and not args.fresh:
        done = {r["name"]: r for r in json.loads(RESULTS.read_text(encoding="utf-8"))}
    results = []
    for mutation in (IDENTICAL, *CORPUS):
        result = done.get(mutation.name)
        if result is None or result["specmatic"] in ("timeout", "error", "not run"):
            result = run(mutation, args.timeout)
        results.append(result)
        RESULTS.write_text(json.dumps(results, indent=1), encoding="utf-8")
        verdicts = f"label {result['label']:<13} ours {result['ours']:<11} specmatic {result['specmatic']}"
        print(f"{result['name']:<40} {verdicts}", flush=True)
    write_doc(results)
    print(f"wrote the table into {DOC}")
    wrong = [r["name"] for r in results if not _right(str(r["label"]), str(r["ours"]))]
    if wrong:
        print(f"gate spec disagrees with the label on: {', '.join(map(str, wrong))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
