"""`make image-test`: build the Containerfile offline with Podman and prove the image works.

No public image registry is reachable here, so the base is made locally: mmdebstrap writes Debian bookworm with
python3 into a tarball that `podman import` turns into an image. The Containerfile is then built FROM it with
`--network none`, its pip pointed at a wheelhouse made on the host. The image is run read-only; the script waits
for the image's own HEALTHCHECK (`mock-server healthcheck`), replays the docs' examples against it, checks
the user, the read-only root, a second port and mounted fixtures, and stops it. Exits non-zero on any failure.

Sandbox specifics (not needed on a normal Docker host): podman uses `runc`, and containers get explicit `nofile`
and `nproc` ulimits (podman's default nofile of 1048576 is above this machine's hard limit), both set in a
CONTAINERS_CONF file this script writes. podman is rootful (we are root) and keeps HEALTHCHECK only with
`--format docker`. With no systemd here podman cannot run the health check's timer, so the containers start with
`--health-interval=disable` and the script runs the image's HEALTHCHECK command itself (`podman healthcheck run`).

Usage: python scripts/image_test.py [--rebuild-base]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
from docs_examples import readme_module  # the replay's parser and comparison: tests/api/test_readme.py

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
WHEELHOUSE = BUILD / "wheelhouse"
BASE_IMAGE = "localhost/pix-limits-mock-base:bookworm"
IMAGE = "localhost/pix-limits-mock-server:image-test"
CONTAINER = "pix-mock-image-test"
SECOND = "pix-mock-image-test-port"
PORT = 18400  # this helper's port range on the shared box: 18400-18499
SECOND_PORT = 18401
INNER_PORT = 9000  # the second container's MOCK_SERVER_PORT: the health check must follow it
APT_PACKAGES = ("podman", "runc", "mmdebstrap")
SUITE = "bookworm"
README_URL = "http://127.0.0.1:8000"
NO_HEALTH_TIMER = "--health-interval=disable"  # no systemd to run podman's timer: `podman healthcheck run` instead
HEALTHCHECK = ["CMD", "mock-server", "healthcheck"]


def say(message: str) -> None:
    print(f"image-test: {message}", flush=True)


def run(
    command: Sequence[str], *, check: bool = True, quiet: bool = False, **kw: object
) -> subprocess.CompletedProcess[str]:
    if not quiet:
        say("$ " + " ".join(command) if len(command) < 40 else " ".join(command[:12]) + " ...")
    result = subprocess.run(list(command), text=True, capture_output=quiet, **kw)  # type: ignore[call-overload]
    if check and result.returncode != 0:
        detail = f"\n{result.stdout}{result.stderr}" if quiet else ""
        raise SystemExit(f"image-test: failed ({result.returncode}): {' '.join(command)}{detail}")
    return result  # type: ignore[no-any-return]


def ensure_tools() -> None:
    """podman, runc and mmdebstrap from Debian's packages, installed if missing (needs root, as here)."""
    missing = [name for name in APT_PACKAGES if shutil.which(name) is None]
    if not missing:
        return
    if os.geteuid() != 0:
        raise SystemExit(
            f"image-test: missing {', '.join(missing)}; install them (apt-get install {' '.join(missing)})"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=600"]
    run(["apt-get", *lock, "update", "-qq"], env=env)
    run(["apt-get", *lock, "install", "-y", "-qq", "--no-install-recommends", *APT_PACKAGES], env=env)


def containers_conf() -> Path:
    """runc, and ulimits this sandbox lets runc set: podman asks for 1048576 files by default, above the hard limit
    here (20000), and an nproc of 48000 or more is refused too; a server needs far less of either."""
    nofile = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1] & 0xFFFFFFFF, 65536)  # RLIM_INFINITY is -1
    nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[1] & 0xFFFFFFFF, 4096)
    path = BUILD / "containers.conf"
    path.write_text(
        "# Written by scripts/image_test.py for this sandbox; a normal Docker or Podman host needs none of it.\n"
        "[containers]\n"
        f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n'
        "[engine]\n"
        'runtime = "runc"\n',
        encoding="utf-8",
    )
    return path


def podman(*args: str, check: bool = True, quiet: bool = False) -> subprocess.CompletedProcess[str]:
    return run(["podman", *args], check=check, quiet=quiet)


def apt_sources() -> str:
    """The host's own Debian sources (the mirror this machine may reach), for mmdebstrap."""
    for candidate in (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")):
        if candidate.exists() and candidate.read_text(encoding="utf-8").strip():
            return str(candidate)
    return "http://deb.debian.org/debian"


def build_base(rebuild: bool) -> float:
    """Debian + python3 (+ venv, as official Python images have) as a local image; seconds spent (0: reused)."""
    if not rebuild and podman("image", "exists", BASE_IMAGE, check=False, quiet=True).returncode == 0:
        say(f"base {BASE_IMAGE} exists (--rebuild-base to make it again)")
        return 0.0
    started = time.monotonic()
    tarball = BUILD / "base.tar"
    run(
        [
            "mmdebstrap",
            "--quiet",
            "--variant=minbase",
            "--include=python3,python3-venv",
            "--aptopt=Acquire::Languages none",
            "--dpkgopt=path-exclude=/usr/share/man/*",
            "--dpkgopt=path-exclude=/usr/share/locale/*",
            "--dpkgopt=path-exclude=/usr/share/doc/*",
            "--dpkgopt=path-include=/usr/share/doc/*/copyright",
            SUITE,
            str(tarball),
            apt_sources(),
        ]
    )
    # An imported tarball has no environment: give it the PATH an official image has.
    podman(
        "import",
        "--change",
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        str(tarball),
        BASE_IMAGE,
        quiet=True,
    )
    tarball.unlink()
    return time.monotonic() - started


def base_python() -> tuple[str, str, str]:
    """The base's Python version (3.11), glibc (2.36) and machine (x86_64): what the wheelhouse must fit."""
    probe = (
        "import platform, sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}', "
        "platform.libc_ver()[1], platform.machine())"
    )
    out = podman("run", "--rm", "--network", "none", BASE_IMAGE, "python3", "-c", probe, quiet=True).stdout.split()
    return out[0], out[1], out[2]


def build_wheelhouse(python: str, glibc: str, machine: str) -> None:
    """The project's wheel, every dependency as a wheel for the base's Python (the locked releases), and hatchling
    for the build."""
    shutil.rmtree(WHEELHOUSE, ignore_errors=True)
    WHEELHOUSE.mkdir(parents=True)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    run([*pip, "wheel", "--no-deps", "--wheel-dir", str(WHEELHOUSE), str(ROOT)])
    project = next(WHEELHOUSE.glob("pix_limits_mock_server-*.whl"))
    # pip does not widen an explicit platform to the older glibcs it covers: name each one (2.5 to the base's).
    major, minor = (int(part) for part in glibc.split(".")[:2])
    platforms = [f"manylinux_{major}_{n}_{machine}" for n in range(5, minor + 1)] + [f"manylinux2014_{machine}"]
    target = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp"]
    for platform in platforms:
        target += ["--platform", platform]
    # The releases the suite ran with (constraints.txt, `make lock`): the image holds what was tested.
    lock = ["--constraint", str(ROOT / "constraints.txt")]
    run([*pip, "download", *target, *lock, "--dest", str(WHEELHOUSE), str(project), "hatchling"])


def build_image() -> float:
    started = time.monotonic()
    podman(
        "build",
        "--format", "docker",  # the OCI format has no HEALTHCHECK: podman would drop it
        "--network", "none",
        "--pull=never",
        "--build-arg", f"BASE_IMAGE={BASE_IMAGE}",
        "--build-arg", "PIP_INSTALL_OPTIONS=--no-index --find-links /src/build/wheelhouse",
        "--file", str(ROOT / "Containerfile"),
        "--tag", IMAGE,
        str(ROOT),
    )  # fmt: skip
    return time.monotonic() - started


def inspect_image(name: str) -> dict[str, Any]:
    """`podman image inspect` as JSON (its --format templates fail on some fields of a docker-format image)."""
    found: list[dict[str, Any]] = json.loads(podman("image", "inspect", name, quiet=True).stdout)
    return found[0]


def check_healthcheck_kept() -> None:
    """The image carries the Containerfile's HEALTHCHECK (an OCI-format build would have dropped it)."""
    found = (inspect_image(IMAGE).get("Healthcheck") or {}).get("Test")
    if found != HEALTHCHECK:
        raise SystemExit(f"image-test: the image's health check is {found}, not {HEALTHCHECK}")


def image_size(name: str) -> int:
    return int(inspect_image(name)["Size"])


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
    BUILD.mkdir(exist_ok=True)
    ensure_tools()
    os.environ["CONTAINERS_CONF"] = str(containers_conf())
    figures: dict[str, object] = {}
    figures["base_build_s"] = round(build_base(args.rebuild_base), 1)
    python, glibc, machine = base_python()
    say(f"base: Python {python}, glibc {glibc}, {machine}")
    build_wheelhouse(python, glibc, machine)
    figures["image_build_s"] = round(build_image(), 1)
    check_healthcheck_kept()
    above_base = image_size(IMAGE) - image_size(BASE_IMAGE)
    figures["image_mb_above_base"] = round(above_base / 1e6, 1)
    say(f"image {IMAGE}: {above_base / 1e6:.1f} MB above the base")
    if above_base >= 150e6:
        raise SystemExit("image-test: the image is 150 MB or more above its base")
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
