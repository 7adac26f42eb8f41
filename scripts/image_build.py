"""`make image`: build the Containerfile offline with Podman, as `make image-test` does, under a tag of one's choice.

No public image registry is reachable here, so the base is made locally: mmdebstrap writes Debian bookworm with
python3 into a tarball that `podman import` turns into an image. The Containerfile is then built FROM it with
`--network none`, its pip pointed at a wheelhouse made on the host. One build function (`build`) serves both
`make image` (the tag `mock_server.testcontainers.PixMockContainer` uses by default) and `make image-test`
(scripts/image_test.py, which goes on to prove the image works).

Sandbox specifics (not needed on a normal Docker host, where `docker build -f Containerfile .` pulls its base):
podman uses `runc`, and containers get explicit `nofile` and `nproc` ulimits (podman's default nofile of 1048576 is
above this machine's hard limit), both set in a CONTAINERS_CONF file written here. podman is rootful (we are root)
and keeps HEALTHCHECK only with `--format docker`.

Usage: python scripts/image_build.py [--tag TAG] [--rebuild-base]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
WHEELHOUSE = BUILD / "wheelhouse"
BASE_IMAGE = "localhost/pix-limits-mock-base:bookworm"
IMAGE = "localhost/pix-limits-mock-server:latest"  # what PixMockContainer runs unless told otherwise
APT_PACKAGES = ("podman", "runc", "mmdebstrap")
SUITE = "bookworm"
HEALTHCHECK = ["CMD", "mock-server", "healthcheck"]
PROGRAM = {"name": "image"}  # the prefix of every line printed: scripts/image_test.py sets its own


def say(message: str) -> None:
    print(f"{PROGRAM['name']}: {message}", flush=True)


def fail(message: str) -> SystemExit:
    return SystemExit(f"{PROGRAM['name']}: {message}")


def run(
    command: Sequence[str], *, check: bool = True, quiet: bool = False, **kw: object
) -> subprocess.CompletedProcess[str]:
    if not quiet:
        say("$ " + " ".join(command) if len(command) < 40 else " ".join(command[:12]) + " ...")
    result = subprocess.run(list(command), text=True, capture_output=quiet, **kw)  # type: ignore[call-overload]
    if check and result.returncode != 0:
        detail = f"\n{result.stdout}{result.stderr}" if quiet else ""
        raise fail(f"failed ({result.returncode}): {' '.join(command)}{detail}")
    return result  # type: ignore[no-any-return]


def ensure_tools(packages: Sequence[str] = APT_PACKAGES) -> None:
    """podman, runc and mmdebstrap (or `packages`) from Debian's packages, installed if missing (needs root)."""
    missing = [name for name in packages if shutil.which(name) is None and not Path("/usr/sbin", name).exists()]
    if not missing:
        return
    if os.geteuid() != 0:
        raise fail(f"missing {', '.join(missing)}; install them (apt-get install {' '.join(missing)})")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=600"]
    run(["apt-get", *lock, "update", "-qq"], env=env)
    run(["apt-get", *lock, "install", "-y", "-qq", "--no-install-recommends", *missing], env=env)


def containers_conf() -> Path:
    """runc, and ulimits this sandbox lets runc set: podman asks for 1048576 files by default, above the hard limit
    here (20000), and an nproc of 48000 or more is refused too; a server needs far less of either. Podman's Docker
    API (`podman system service`) needs the same file in its CONTAINERS_CONF."""
    nofile = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1] & 0xFFFFFFFF, 65536)  # RLIM_INFINITY is -1
    nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[1] & 0xFFFFFFFF, 4096)
    BUILD.mkdir(exist_ok=True)
    path = BUILD / "containers.conf"
    path.write_text(
        "# Written by scripts/image_build.py for this sandbox; a normal Docker or Podman host needs none of it.\n"
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


def build_image(tag: str) -> float:
    started = time.monotonic()
    podman(
        "build",
        "--format", "docker",  # the OCI format has no HEALTHCHECK: podman would drop it
        "--network", "none",
        "--pull=never",
        "--build-arg", f"BASE_IMAGE={BASE_IMAGE}",
        "--build-arg", "PIP_INSTALL_OPTIONS=--no-index --find-links /src/build/wheelhouse",
        "--file", str(ROOT / "Containerfile"),
        "--tag", tag,
        str(ROOT),
    )  # fmt: skip
    return time.monotonic() - started


def inspect_image(name: str) -> dict[str, Any]:
    """`podman image inspect` as JSON (its --format templates fail on some fields of a docker-format image)."""
    found: list[dict[str, Any]] = json.loads(podman("image", "inspect", name, quiet=True).stdout)
    return found[0]


def check_healthcheck_kept(tag: str) -> None:
    """The image carries the Containerfile's HEALTHCHECK (an OCI-format build would have dropped it)."""
    found = (inspect_image(tag).get("Healthcheck") or {}).get("Test")
    if found != HEALTHCHECK:
        raise fail(f"the image's health check is {found}, not {HEALTHCHECK}")


def image_size(name: str) -> int:
    return int(inspect_image(name)["Size"])


def build(tag: str, *, rebuild_base: bool = False) -> dict[str, float]:
    """The whole offline build of `tag`: tools, the CONTAINERS_CONF (exported for every podman run after it), the
    base, the wheelhouse, the image. Figures: seconds of the base (0 when reused) and of the image build, and the
    image's megabytes above its base."""
    BUILD.mkdir(exist_ok=True)
    ensure_tools()
    os.environ["CONTAINERS_CONF"] = str(containers_conf())
    figures: dict[str, float] = {"base_build_s": round(build_base(rebuild_base), 1)}
    python, glibc, machine = base_python()
    say(f"base: Python {python}, glibc {glibc}, {machine}")
    build_wheelhouse(python, glibc, machine)
    figures["image_build_s"] = round(build_image(tag), 1)
    check_healthcheck_kept(tag)
    figures["image_mb_above_base"] = round((image_size(tag) - image_size(BASE_IMAGE)) / 1e6, 1)
    say(f"image {tag}: {figures['image_mb_above_base']} MB above the base")
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tag", default=IMAGE, help=f"the image's name (default {IMAGE})")
    parser.add_argument("--rebuild-base", action="store_true", help="make the mmdebstrap base again")
    args = parser.parse_args()
    started = time.monotonic()
    figures = build(args.tag, rebuild_base=args.rebuild_base)
    figures["total_s"] = round(time.monotonic() - started, 1)
    say(f"built {args.tag}: " + json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
