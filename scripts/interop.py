"""`make interop`: third-party OpenAPI tools against a live server, as an integrator would run them.

1. Specmatic `test --strict` on the public spec as served (every named example pair, plus the 415 examples
   of interop/specmatic-examples, which send text/plain); the jar's own exit code decides (`npx specmatic`
   exits 0 on failure).
2. openapi-python-client generates a client from each SERVED spec (the public one and the bundled admin
   one); any warning fails. scripts/interop_clients.py then calls every operation through them, and replays
   every example pair of the public spec, recording each request and response.
3. openapi-core validates every recorded request and response against the served spec it was made from
   (the public flow through a `/__session/NAME/` URL, whose spec names that URL in `servers`).
4. The `schemathesis` extra: a fresh virtual environment without it cannot import the hooks and says what to
   install; with it, it can.

Tools go under .tools/ (Java 17 from Debian when `java` is missing or older; Specmatic from npm; a virtual
environment of its own for openapi-python-client and openapi-core, whose pins differ from ours).
Usage: python scripts/interop.py [--work DIR]   (default .tools/interop-run: specs, clients, logs)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from spec_examples import faults_to_inject  # noqa: E402  (a script beside this one, not a package)

TOOLS = ROOT / ".tools"
SPECMATIC_VERSION = "2.55.1"
SPECMATIC_JAR = TOOLS / "specmatic" / "node_modules" / "specmatic" / "specmatic.jar"
INTEROP_VENV = TOOLS / "interop-venv"
INTEROP_PACKAGES = ["openapi-python-client==0.29.*", "openapi-core==0.23.*", "httpx>=0.28"]
SEED, CLOCK = "1", "2026-11-21T10:00:00-03:00"  # what the spec's examples were written with
READY = "mock-server ready on "
SPECMATIC_SUMMARY = r"Tests run: (\d+), Successes: (\d+), Failures: (\d+), WIP: (\d+), Errors: (\d+)"
CLIENT_SESSION, ADMIN_SESSION = "interop-clients", "interop-admin"


def step(title: str) -> float:
    print(f"\n== {title}", flush=True)
    return time.monotonic()


def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, text=True, check=False, **kwargs)


def java_major() -> int | None:
    java = shutil.which("java")
    if java is None:
        return None
    found = re.search(r'version "(\d+)', run([java, "-version"], capture_output=True).stderr)
    return int(found.group(1)) if found else None


def ensure_specmatic() -> None:
    """Java 17 and Specmatic's jar under .tools/ (also `make gate-compare`'s, scripts/gate_compare.py)."""
    if (java_major() or 0) < 17:
        print("installing openjdk-17-jre-headless (Debian)", flush=True)
        # No terminal in CI, and another apt-get (make test-browser's, image-test's) may hold the lock for a while.
        apt = ["apt-get", "-o", "DPkg::Lock::Timeout=600"]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in ([*apt, "update", "-qq"], [*apt, "install", "-y", "-qq", "openjdk-17-jre-headless"]):
            if run(command, env=env).returncode != 0:
                raise SystemExit(f"could not run {' '.join(command)} (Java 17 is needed for Specmatic)")
    if not SPECMATIC_JAR.exists():
        print(f"installing specmatic {SPECMATIC_VERSION} (npm) under .tools/", flush=True)
        npm = ["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(TOOLS / "specmatic")]
        if run([*npm, f"specmatic@{SPECMATIC_VERSION}"]).returncode != 0 or not SPECMATIC_JAR.exists():
            raise SystemExit("could not install specmatic from npm")


def ensure_tools() -> None:
    ensure_specmatic()
    python = INTEROP_VENV / "bin" / "python"
    if not python.exists():
        print("creating .tools/interop-venv (openapi-python-client, openapi-core)", flush=True)
        run([sys.executable, "-m", "venv", str(INTEROP_VENV)])
    missing = run([str(python), "-c", "import openapi_python_client, openapi_core"], capture_output=True).returncode
    if missing and run([str(python), "-m", "pip", "install", "--quiet", *INTEROP_PACKAGES]).returncode != 0:
        raise SystemExit("could not install the interop tools")


class Server:
    """`mock-server --port 0` with the examples' seed and clock; every response checked against the spec."""

    def __init__(self) -> None:
        command = [str(Path(sys.executable).parent / "mock-server"), "--port", "0", "--seed", SEED, "--clock", CLOCK]
        self.process = subprocess.Popen(
            [*command, "--validate-responses"], cwd=ROOT, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith(READY):
            self.stop()
            raise SystemExit(f"the server did not start: {line!r}")
        self.url = line[len(READY) :].split()[0]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()

    def fetch(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=10) as answer:
            text: str = answer.read().decode()
            return text

    def post(self, path: str, body: Any, session: str | None = None) -> int:
        headers = {"Content-Type": "application/json", **({"X-Mock-Session": session} if session else {})}
        request = urllib.request.Request(self.url + path, json.dumps(body).encode(), headers, method="POST")
        with urllib.request.urlopen(request, timeout=10) as answer:
            status: int = answer.status
            return status


def fetch_specs(server: Server, work: Path) -> dict[str, Path]:
    """The documents exactly as served: at the origin, and under the sessions the client flows use."""
    served = {
        "public": "/openapi.yaml",
        "admin": "/__mock/openapi.yaml",
        "public-session": f"/__session/{CLIENT_SESSION}/openapi.json",
        "admin-session": f"/__session/{ADMIN_SESSION}/__mock/openapi.yaml",
    }
    paths = {}
    for name, path in served.items():
        text = server.fetch(path)
        target = work / "specs" / f"{name}{Path(path).suffix}"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        paths[name] = target
    return paths


def inject_faults(server: Server, public: dict[str, Any]) -> int:
    """The faults the 413 and 500 examples (and the 415 ones) of the spec rely on, in their own sessions."""
    faults = faults_to_inject(public)
    for session, operation_id, status in faults:
        server.post("/__mock/faults", {"operation_id": operation_id, "status": status, "times": None}, session)
    return len(faults)


def specmatic(server: Server, spec: Path, work: Path) -> dict[str, int]:
    server.post("/__mock/reset", {})
    command = ["java", "-jar", str(SPECMATIC_JAR), "test", "--strict", f"--testBaseURL={server.url}"]
    command += [f"--examples={ROOT / 'interop' / 'specmatic-examples'}", str(spec)]
    result = run(command, cwd=work, capture_output=True)
    (work / "specmatic.log").write_text(result.stdout + result.stderr, encoding="utf-8")
    summary = re.search(
        r"Tests run: (\d+), Successes: (\d+), Failures: (\d+), WIP: (\d+), Errors: (\d+)", result.stdout
    )
    if summary is None:
        raise SystemExit(f"Specmatic printed no summary (exit {result.returncode}); see {work / 'specmatic.log'}")
    figures = dict(zip(("run", "passed", "failed", "wip", "errors"), map(int, summary.groups()), strict=True))
    figures["exit"] = result.returncode
    for line in result.stdout.splitlines():
        if "has FAILED" in line:
            print("  " + line.strip())
    # Specmatic runs a 415 only from an external example (interop/specmatic-examples, which sends text/plain): it
    # sets the in-spec unsupported_media_type pairs aside with a warning.
    figures["ignored"] = result.stdout.count("WARNING: Ignoring request example named unsupported_media_type")
    return figures


# What openapi-python-client can send as a request body; another media type (the YAML of PUT /__mock/state) is a
# warning, and mapping it to one of these in the config generates calls that crash (`body.payload` of a model).
SENDABLE = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data", "application/octet-stream")


def sendable(spec: Path) -> Path:
    """A copy of the spec whose request bodies list only the media types the generator can send (each body keeps
    its JSON form); the recorded flow is still validated against the spec as served."""
    document = yaml.safe_load(spec.read_text(encoding="utf-8"))
    for item in document.get("paths", {}).values():
        for operation in item.values():
            content = operation.get("requestBody", {}).get("content", {}) if isinstance(operation, dict) else {}
            for media_type in [m for m in content if m not in SENDABLE]:
                del content[media_type]
    copy = spec.with_name(f"{spec.stem}.sendable{spec.suffix}")
    copy.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return copy


def generate(spec: Path, package: Path) -> int:
    """Generate a client with openapi-python-client; any warning is a failure. Returns its operation count."""
    binary = INTEROP_VENV / "bin"
    spec = sendable(spec)
    command = [str(binary / "openapi-python-client"), "generate", "--path", str(spec), "--meta", "none"]
    command += ["--config", str(ROOT / "interop" / "openapi-python-client.yaml"), "--output-path", str(package)]
    command += ["--overwrite"]
    env = {"PATH": f"{binary}:/usr/bin:/bin"}  # its post-generation hook runs ruff, installed beside it
    result = run(command, capture_output=True, env=env)
    output = result.stdout + result.stderr
    if result.returncode != 0 or re.search(r"warning|error", output, re.IGNORECASE):
        raise SystemExit(f"openapi-python-client on {spec.name} (exit {result.returncode}):\n{output}")
    return len([p for p in (package / "api").glob("*/*.py") if p.name != "__init__.py"])


def interop_python(script: str, *args: str) -> int:
    python = str(INTEROP_VENV / "bin" / "python")
    return run([python, str(ROOT / "scripts" / script), *args]).returncode


def extras_check(work: Path) -> None:
    """The hooks module in a fresh environment: without the extra it names it; with it, it imports."""
    venv = work / "extras-venv"
    run([sys.executable, "-m", "venv", "--clear", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    pip += ["--constraint", str(ROOT / "constraints.txt")]  # the releases `make install` uses
    installed = run([*pip, str(ROOT)], capture_output=True)
    if installed.returncode != 0:
        raise SystemExit(f"pip install . failed:\n{installed.stderr}")
    probe = [str(venv / "bin" / "python"), "-c", "import mock_server.schemathesis_hooks"]
    without = run(probe, capture_output=True)
    hint = "pip install 'pix-limits-mock-server[schemathesis]'"
    if without.returncode == 0 or hint not in without.stderr:
        raise SystemExit(f"without the extra the hooks import should name it:\n{without.stderr}")
    print(f"  without the extra: {without.stderr.strip().splitlines()[-1]}")
    installed = run([*pip, f"{ROOT}[schemathesis]"], capture_output=True)
    if installed.returncode != 0:
        raise SystemExit(f"pip install '.[schemathesis]' failed:\n{installed.stderr}")
    with_extra = run(
        [*probe[:-1], "import mock_server.schemathesis_hooks as h; print(h.FORMAT_NAME)"], capture_output=True
    )
    if with_extra.returncode != 0:
        raise SystemExit(f"with the extra the hooks should import:\n{with_extra.stderr}")
    print(f"  with the extra: imports, registers {with_extra.stdout.strip()}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, default=TOOLS / "interop-run", help="specs, clients and logs (emptied)")
    options = parser.parse_args()
    started = time.monotonic()
    work: Path = options.work
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    step("tools (Java 17, Specmatic, openapi-python-client, openapi-core)")
    ensure_tools()
    server = Server()
    figures: dict[str, Any] = {"server": server.url}
    try:
        specs = fetch_specs(server, work)
        public = yaml.safe_load(specs["public"].read_text(encoding="utf-8"))
        figures["faults"] = inject_faults(server, public)

        step(f"Specmatic --strict on the served public spec ({server.url})")
        figures["specmatic"] = specmatic(server, specs["public"], work)
        print(
            "  Specmatic: {run} run, {passed} passed, {failed} failed (exit {exit}); {ignored} in-spec 415 examples "
            "set aside for interop/specmatic-examples".format(**figures["specmatic"])
        )

        step("openapi-python-client on both served specs")
        clients = work / "clients"
        figures["generated_public"] = generate(specs["public"], clients / "pix_public_client")
        figures["generated_admin"] = generate(specs["admin"], clients / "pix_admin_client")
        print(f"  no warning; operations: public {figures['generated_public']}, admin {figures['generated_admin']}")

        step("every operation through the generated clients, and every public example pair, recorded")
        server.post("/__mock/reset", {})
        flow = work / "flow.jsonl"
        arguments = ["--url", server.url, "--clients", str(clients), "--specs", str(work / "specs"), "--record"]
        driven = interop_python("interop_clients.py", *arguments, str(flow))

        step("openapi-core validates the recorded flow against the served specs")
        validated = interop_python("interop_openapi_core.py", "--specs", str(work / "specs"), str(flow))
    finally:
        server.stop()

    step("the schemathesis extra in fresh virtual environments")
    extras_check(work)

    elapsed = time.monotonic() - started
    specmatic_ok = figures["specmatic"]["exit"] == 0 and figures["specmatic"]["failed"] == 0
    print(f"\n== interop: {'passed' if specmatic_ok and not driven and not validated else 'FAILED'} in {elapsed:.0f} s")
    print(f"   work files: {work}")
    return 0 if specmatic_ok and driven == 0 and validated == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
