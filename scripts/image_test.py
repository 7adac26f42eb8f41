"""`make image-test`: build the Containerfile offline with Podman and prove the image works.

No public image registry is reachable here, so the image is built as `make image` builds it
(scripts/image_build.py: a local mmdebstrap Debian base, `--network none`, pip pointed at a wheelhouse made on the
host). The image is run read-only; the script waits for the image's own HEALTHCHECK (`mock-server healthcheck`),
replays the docs' examples against it, checks the user, the read-only root, a second port and mounted fixtures, and
stops it. Exits non-zero on any failure.

Sandbox specifics (not needed on a normal Docker host): see scripts/image_build.py (runc, ulimits in a
CONTAINERS_CONF file, `--format docker` to keep the HEALTHCHECK). With no systemd here podman cannot run the health
`--health-interval=disable` and the script runs the image's HEALTHCHECK command itself (`podman healthcheck
run`).

Usage: python scripts/image_test.py [--rebuild-base]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import image_build  # the offline build `make image` runs too
from docs_examples import readme_module  # the replay's parser and comparison: tests/api/test_readme.py
from image_build import BUILD, ROOT, inspect_image, podman, say

IMAGE = "localhost/pix-limits-mock-server:image-test"
CONTAINER = "pix-mock-image-test"
SECOND = "pix-mock-image-test-port"
PORT = 18400  # this helper's port range on the shared box: 18400-18499
SECOND_PORT = 18401
INNER_PORT = 9000  # the second container's MOCK_SERVER_PORT: the health check must follow it
README_URL = "http://127.0.0.1:8000"
NO_HEALTH_TIMER = "--health-interval=disable"  # no systemd to run podman's timer: `podman healthcheck run` instead


def remove(*names: str) -> None:
    for name in names:
        podman("rm", "--force", "--time", "0", name, check=False, quiet=True)


def wait_healthy(name: str, started: float, timeout: float = 60.0) -> float:
    """Seconds from `podman run` until the image's HEALTHCHECK passes (podman runs it on demand here)."""
    deadline = started + timeout
    while time.monotonic() < deadline:
        if podman("healthcheck", "run", name, check=False, quiet=True).returncode == 0:
            return time.monotonic() - started
        state = podman("inspect", "--format", "{{.State.Status}}", name, check=False, quiet=True).stdout.strip()
        if state not in ("running", "created"):
            break
        time.sleep(0.2)
    logs = podman("logs", name, check=False, quiet=True)
    raise SystemExit(f"image-test: {name} never became healthy\n{logs.stdout}{logs.stderr}")


def page_by_page(readme: ModuleType, client: httpx.Client, base_url: str) -> Iterator[tuple[Path, Any]]:
    """Each replayed page's examples (README.md and docs/), in order, after a reset of every session the page uses:
    as on the fresh `make run` each page is written for."""
    for page in readme.replayed_pages():
        found = readme.examples(page.read_text(encoding="utf-8"))
        for session in ["default", *sorted(readme.sessions_named(found))]:
            reset = {"X-Mock-Session": session, "Content-Type": "application/json"}
            client.post(
                f"{base_url}/__mock/reset", headers=reset, content=b'{"scenario": "default"}'
            ).raise_for_status()
        for example in found:
            yield page, example


def reset_by_peer(error: BaseException) -> bool:
    """Whether a failed exchange ended in a TCP reset (httpx's ReadError wraps the ConnectionResetError)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ConnectionResetError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def send(client: httpx.Client, readme: ModuleType, curl: Any, base_url: str) -> Any:
    """One curl of a replayed page against the container. A connection the server reset (what an injected `reset` fault
    does) is the replay's own `NoAnswer`, which prints what curl prints then: the same comparison as in
    process, where the reset surfaces as `ConnectionDropped`. Any other transport error stops the test."""
    url = curl.url.replace(README_URL, base_url, 1)
    content = None if curl.data is None else curl.data.encode()
    try:
        return client.request(curl.method, url, headers=list(curl.headers), content=content)
    except httpx.TransportError as error:
        if not reset_by_peer(error):
            raise
        return readme.NoAnswer()


def walkthrough(base_url: str) -> int:
    """Every `$ curl` of the replayed pages' console blocks against the container: the answers must be the ones
    shown."""
    readme = readme_module()
    found: list[Any] = []
    report: list[str] = []
    with httpx.Client(timeout=10) as client:
        # What the reader's curl sends to 127.0.0.1:8000 (the journal shows request headers, the served specs the
        # Host): the port is forwarded, so the Host header still names 8000; then curl's own headers, as the
        # README's replay sends them.
        for name in list(client.headers):
            del client.headers[name]
        client.headers["Host"] = httpx.URL(README_URL).netloc.decode()
        for name, value in readme.CURL_HEADERS:
            client.headers[name] = value
        for page, example in page_by_page(readme, client, base_url):
            found.append(example)
            responses = [send(client, readme, curl, base_url) for curl in example.commands]
            problems = readme.differences(example, responses)
            if problems:
                report.append(f"{page.relative_to(ROOT)}:{example.line}: $ {example.text}")
                report += [f"    {problem}" for problem in problems]
    if report:
        raise SystemExit("image-test: examples that do not reproduce against the image:\n" + "\n".join(report))
    return len(found)


def in_container(name: str, code: str) -> str:
    return podman("exec", name, "python3", "-c", code, quiet=True).stdout.strip()


def check_user_and_read_only_root(name: str) -> None:
    user = inspect_image(IMAGE)["Config"].get("User")
    if user != "10001:10001":
        raise SystemExit(f"image-test: the image's USER is {user!r}, not 10001:10001")
    ids = in_container(name, "import os; print(os.getuid(), os.getgid())")
    server = in_container(name, "print([l for l in open('/proc/1/status') if l.startswith('Uid:')][0].split()[1])")
    if ids != "10001 10001" or server != "10001":
        raise SystemExit(f"image-test: runs as uid/gid {ids} (server uid {server}), not 10001")
    attempt = (
        "import errno\n"
        "for where in ('/', '/tmp', '/opt/mock-server', '/fixtures'):\n"
        "    try:\n"
        "        open(where.rstrip('/') + '/probe', 'w')\n"
        "    except OSError as exc:\n"
        "        print(where, errno.errorcode[exc.errno])\n"
        "    else:\n"
        "        print(where, 'WRITABLE')\n"
    )
    verdicts = in_container(name, attempt).splitlines()
    if any(not line.endswith("EROFS") for line in verdicts):
        raise SystemExit(f"image-test: the root filesystem is not read-only everywhere: {verdicts}")
    say(f"user 10001:10001, root read-only ({', '.join(verdicts)})")


@contextmanager
def mounted_fixtures() -> Iterator[Path]:
    """A fixtures directory with one scenario, `default`, copied from the shipped `empty`: readable by uid 10001."""
    with tempfile.TemporaryDirectory(prefix="pix-mock-fixtures-") as tmp:
        directory = Path(tmp)
        shutil.copy(ROOT / "fixtures" / "empty.yaml", directory / "default.yaml")
        directory.chmod(0o755)
        (directory / "default.yaml").chmod(0o644)
        yield directory


def check_port_and_fixtures() -> float:
    """Another MOCK_SERVER_PORT (the health check follows it) and a fixtures directory mounted at /fixtures."""
    with mounted_fixtures() as fixtures:
        started = time.monotonic()
        podman(
            "run", "--detach", "--name", SECOND, "--read-only", "--read-only-tmpfs=false", NO_HEALTH_TIMER,
            "--env", f"MOCK_SERVER_PORT={INNER_PORT}",
            "--volume", f"{fixtures}:/fixtures:ro",
            "--publish", f"127.0.0.1:{SECOND_PORT}:{INNER_PORT}",
            IMAGE,
        )  # fmt: skip
        healthy = wait_healthy(SECOND, started)
        listing = httpx.get(f"http://127.0.0.1:{SECOND_PORT}/__mock/scenarios", timeout=10).json()
        names = [s["name"] for s in listing["scenarios"]]
        if names != ["default"]:
            raise SystemExit(f"image-test: the mounted /fixtures was not used: scenarios {names}")
        say(f"MOCK_SERVER_PORT={INNER_PORT}: healthy in {healthy:.1f} s; mounted /fixtures serves {names}")
        remove(SECOND)
    return healthy


def stop(name: str) -> tuple[float, int]:
    started = time.monotonic()
    podman("stop", "--time", "10", name, quiet=True)
    seconds = time.monotonic() - started
    code = int(podman("inspect", "--format", "{{.State.ExitCode}}", name, quiet=True).stdout.strip())
    return seconds, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rebuild-base", action="store_true", help="make the mmdebstrap base again")
    args = parser.parse_args()
    total = time.monotonic()
    image_build.PROGRAM["name"] = "image-test"
    built = image_build.build(IMAGE, rebuild_base=args.rebuild_base)
    if built["image_mb_above_base"] >= 150:
        raise SystemExit("image-test: the image is 150 MB or more above its base")
    figures: dict[str, object] = dict(built)
    remove(CONTAINER, SECOND)
    try:
        started = time.monotonic()
        podman(
            "run", "--detach", "--name", CONTAINER, "--read-only", "--read-only-tmpfs=false", NO_HEALTH_TIMER,
            "--env", "MOCK_SERVER_SEED=1",  # as `make run`: the README's ids
            "--publish", f"127.0.0.1:{PORT}:8000",
            IMAGE,
        )  # fmt: skip
        figures["time_to_healthy_s"] = round(wait_healthy(CONTAINER, started), 2)
        say(f"healthy {figures['time_to_healthy_s']} s after podman run")
        figures["readme_examples"] = walkthrough(f"http://127.0.0.1:{PORT}")
        say(f"docs' examples: {figures['readme_examples']} answer as shown")
        check_user_and_read_only_root(CONTAINER)
        figures["time_to_healthy_port_9000_s"] = round(check_port_and_fixtures(), 2)
        seconds, code = stop(CONTAINER)
        if code not in (0, 143):
            raise SystemExit(f"image-test: the server exited {code} on SIGTERM")
        figures["stop_s"] = round(seconds, 2)
        say(f"stopped in {seconds:.1f} s (exit {code})")
    finally:
        remove(CONTAINER, SECOND)
    figures["total_s"] = round(time.monotonic() - total, 1)
    (BUILD / "image-test.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    say("passed: " + json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
