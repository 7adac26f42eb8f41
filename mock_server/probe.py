"""`mock-server healthcheck`, `wait` and `pact`: commands that ask a running mock server, answered with an exit code.

`healthcheck` and `wait`: is a mock server up and healthy. `pact`: fetch a session's Pact contract into a file.
Standard library only (http.client, no proxies from the environment: the server is local to the caller), so a
container HEALTHCHECK or a CI script pays no import of the server itself. Every network call has a timeout:
no command can hang.

Exit codes: 0 healthy (or the pact written); 1 not healthy (or refused), with one line on stderr saying why; 2 a
usage error (argparse).

Over https (a server started with --tls-cert): `wait` verifies the server against `--cacert` (else the system's
trust) and `healthcheck` does not (it asks the server on this machine whether it is up, as a container's
HEALTHCHECK: who it is was settled when it was started); a server that requires a client certificate gets
`--cert`/`--key`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import ssl
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from mock_server import environment
from mock_server.http.failures import describe

HEALTH_PATH = "/__mock/health"
UNHEALTHY = 1
# `mock-server ready on URL (...)`: the line `serve` prints on stdout once its socket accepts requests.
READY_LINE = re.compile(r"^mock-server ready on (?P<url>\S+) ", re.MULTILINE)
# What a wildcard bind address is reached through from the same machine.
LOOPBACK_FOR = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


@dataclass(frozen=True)
class Verdict:
    healthy: bool
    reason: str  # what was found, for the one line on stderr


def check_health(base_url: str, timeout: float, tls: ssl.SSLContext | None = None) -> Verdict:
    """One GET of BASE_URL/__mock/health, bounded by `timeout` seconds (connect and read each); an https URL
    with the `tls` context (else the system's trust, no client certificate)."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return Verdict(False, f"{base_url!r} is not an http:// or https:// URL")
    try:
        port = parts.port
    except ValueError as exc:
        return Verdict(False, f"{base_url!r}: {exc}")
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(parts.hostname, port, timeout=max(timeout, 0.001), context=tls)
    else:
        connection = http.client.HTTPConnection(parts.hostname, port, timeout=max(timeout, 0.001))
    url = f"{parts.path.rstrip('/')}{HEALTH_PATH}"
    try:
        connection.request("GET", url, headers={"Accept": "application/json"})
        response = connection.getresponse()
        body = response.read(64 * 1024)
    except (OSError, http.client.HTTPException) as exc:
        return Verdict(False, f"GET {base_url.rstrip('/')}{HEALTH_PATH}: {describe(exc)}")
    finally:
        connection.close()
    where = f"GET {base_url.rstrip('/')}{HEALTH_PATH}"
    if response.status != 200:
        return Verdict(False, f"{where} answered {response.status}: {body[:200].decode('utf-8', 'replace')}")
    try:
        health = json.loads(body)
        status = health.get("status")
    except (ValueError, AttributeError):
        status = None
    if status == "degraded":  # it answers, but what it acknowledges may not survive a restart
        problem = (health.get("state_file") or {}).get("error")
        return Verdict(False, f"{where}: degraded: the state file cannot be written ({problem})")
    if status != "ok":
        return Verdict(False, f"{where} answered 200 but not a mock server's health: {body[:200]!r}")
    return Verdict(True, f"{where}: ok")


def _process_gone(pid: int) -> bool:
    """True when no process `pid` exists any more (an exited child not yet reaped still counts as gone:
    its state is Z)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("Z", "X")


def _url_from_ready_file(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    match = READY_LINE.search(text)
    return match["url"] if match else None


def wait(
    url: str | None,
    timeout: float,
    interval: float = 0.1,
    pid: int | None = None,
    ready_file: Path | None = None,
    attempt_timeout: float = 2.0,
    tls: ssl.SSLContext | None = None,
) -> Verdict:
    """Poll until the server is healthy, the deadline passes, or (`pid`) the server process is gone.

    With `ready_file`, the URL is read from the ready line `serve` writes there (so `--port 0` works, and a
    server that never bound its port is never mistaken for another one that answers on it)."""
    deadline = time.monotonic() + timeout
    last = Verdict(False, "no attempt made")
    while True:
        target = url if url is not None else _url_from_ready_file(ready_file) if ready_file is not None else None
        if target is None:
            last = Verdict(False, f"no ready line in {ready_file} yet")
        else:
            left = deadline - time.monotonic()
            last = check_health(target, min(attempt_timeout, max(left, 0.05)), tls=tls)
            if last.healthy:
                return Verdict(True, target.rstrip("/"))
        if pid is not None and _process_gone(pid):
            return Verdict(False, f"the server process {pid} exited before it was healthy ({last.reason})")
        if time.monotonic() + interval > deadline:
            return Verdict(False, f"not healthy within {timeout:g}s: {last.reason}")
        time.sleep(interval)


def _positive(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number > 0 or number == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of seconds")
    return number


def _tls_options(parser: argparse.ArgumentParser, healthcheck: bool) -> None:
    twin = " (MOCK_SERVER_HEALTHCHECK_{})" if healthcheck else ""
    if not healthcheck:
        parser.add_argument(
            "--cacert", type=Path, metavar="FILE", help="https: trust the server's certificate to this CA (PEM)"
        )
    parser.add_argument(
        "--cert",
        type=Path,
        metavar="FILE",
        default=os.environ.get("MOCK_SERVER_HEALTHCHECK_CERT") or None if healthcheck else None,
        help="https: the client certificate (PEM) to present, for a server started with --client-cert required"
        + twin.format("CERT"),
    )
    parser.add_argument(
        "--key",
        type=Path,
        metavar="FILE",
        default=os.environ.get("MOCK_SERVER_HEALTHCHECK_KEY") or None if healthcheck else None,
        help="its private key (default: in the --cert file)" + twin.format("KEY"),
    )


def _tls_context(parser: argparse.ArgumentParser, args: argparse.Namespace, verify: bool) -> ssl.SSLContext:
    """The client side of https: the server verified against --cacert (or the system) unless `verify` is off; the
    client certificate of --cert/--key. A file that cannot be read is a usage error."""
    cacert = getattr(args, "cacert", None)
    try:
        if verify:
            context = ssl.create_default_context(cafile=cacert)
        else:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if args.cert is not None:
            context.load_cert_chain(args.cert, args.key)
    except (OSError, ssl.SSLError) as exc:
        parser.error(f"--cacert, --cert or --key cannot serve https: {exc}")
    return context


def healthcheck_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mock-server healthcheck",
        description="Exit 0 when the mock server at URL, or else the one configured here (flags or "
        "MOCK_SERVER_HOST / MOCK_SERVER_PORT, as `serve` reads them), answers GET /__mock/health; else 1 with the "
        "reason on stderr. One attempt, bounded by --timeout: for a container's HEALTHCHECK.",
    )
    parser.add_argument("url", nargs="?", help="the server's base URL (default: from --host and --port)")
    parser.add_argument(
        "--host", default=environment.default("host", "127.0.0.1"), help="the server's --host (default %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=environment.default("port", "8000"),
        help="the server's --port (default %(default)s)",
    )
    parser.add_argument("--timeout", type=_positive, default=3.0, help="seconds to wait for the answer (default 3)")
    parser.add_argument(
        "--https",
        action="store_true",
        default=bool(environment.default("tls_cert")),
        help="the server speaks https (default: when MOCK_SERVER_TLS_CERT is set, as `serve` reads it)",
    )
    _tls_options(parser, healthcheck=True)
    environment.name_variables(parser)  # a bad MOCK_SERVER_PORT is named as such, as `serve` names it
    args = parser.parse_args(argv)
    url = args.url
    if url is None:
        if not 0 < args.port < 65536:
            print(
                f"mock-server healthcheck: port {args.port} cannot be probed (give the port the server bound)",
                file=sys.stderr,
            )
            return UNHEALTHY
        host = LOOPBACK_FOR.get(args.host, args.host)
        scheme = "https" if args.https else "http"
        url = f"{scheme}://[{host}]:{args.port}" if ":" in host else f"{scheme}://{host}:{args.port}"
    verdict = check_health(url, args.timeout, tls=_tls_context(parser, args, verify=False))
    if not verdict.healthy:
        print(f"mock-server healthcheck: {verdict.reason}", file=sys.stderr, flush=True)
        return UNHEALTHY
    return 0


def wait_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mock-server wait",
        description="Wait until the mock server at URL answers GET URL/__mock/health, then print URL and exit 0; "
        "exit 1 with the reason on stderr when the timeout passes first or the --pid process exits.",
    )
    parser.add_argument("url", nargs="?", help="the server's base URL, e.g. http://127.0.0.1:8000")
    parser.add_argument(
        "--ready-file",
        type=Path,
        help="read the URL from the ready line `mock-server serve` writes to this file (its stdout)",
    )
    parser.add_argument("--pid", type=int, help="give up at once when this process (the server) has exited")
    parser.add_argument("--timeout", type=_positive, default=30.0, help="seconds to wait in all (default 30)")
    parser.add_argument("--interval", type=_positive, default=0.1, help="seconds between attempts (default 0.1)")
    _tls_options(parser, healthcheck=False)
    args = parser.parse_args(argv)
    if (args.url is None) == (args.ready_file is None):
        parser.error("give either URL or --ready-file FILE")
    tls = _tls_context(parser, args, verify=True)
    verdict = wait(args.url, args.timeout, args.interval, args.pid, args.ready_file, tls=tls)
    if not verdict.healthy:
        print(f"mock-server wait: {verdict.reason}", file=sys.stderr, flush=True)
        return UNHEALTHY
    print(verdict.reason, flush=True)  # the URL: `URL=$(mock-server wait ...)`
    return 0


PACT_PATH = "/__mock/pact"
UNSAFE_IN_FILE_NAMES = re.compile(r"[/\\\x00]")


def _name(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("give a name, not an empty one")
    return value


def fetch_pact(
    base_url: str, consumer: str, provider: str, session: str | None, token: str | None, timeout: float
) -> tuple[int, bytes]:
    """GET BASE_URL/__mock/pact?consumer=C&provider=P in `session` (the header): the status and the body."""
    parts = urlsplit(base_url)
    connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = connection_type(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    headers = {"Accept": "application/json"}
    if session is not None:
        headers["X-Mock-Session"] = session
    if token:
        headers["Authorization"] = f"Bearer {token}"
    query = urlencode({"consumer": consumer, "provider": provider})
    try:
        connection.request("GET", f"{parts.path.rstrip('/')}{PACT_PATH}?{query}", headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def pact_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mock-server pact",
        description="Write the Pact V4 contract of what a client did in a session of the running mock server at URL "
        "(GET URL/__mock/pact): to FILE, into DIR as CONSUMER-PROVIDER.json, or on stdout. Exit 1 with the reason on "
        "stderr when the server cannot be reached or refuses.",
    )
    parser.add_argument(
        "--url",
        default=environment.default("url", "http://127.0.0.1:8000"),
        help="the server's base URL (default %(default)s)",
    )
    parser.add_argument("--consumer", type=_name, required=True, help="the consumer's name in the pact")
    parser.add_argument("--provider", type=_name, required=True, help="the provider's name in the pact")
    parser.add_argument("--session", help="the session whose calls to export (default: the server's default)")
    parser.add_argument(
        "--admin-token",
        default=environment.default("admin_token"),
        help="the server's --admin-token, sent as Authorization: Bearer",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="FILE",
        help="the file to write, or a directory to write CONSUMER-PROVIDER.json into (default: stdout)",
    )
    parser.add_argument("--timeout", type=_positive, default=30.0, help="seconds to wait for the answer (default 30)")
    args = parser.parse_args(argv)
    where = f"GET {args.url.rstrip('/')}{PACT_PATH}"
    if urlsplit(args.url).scheme not in ("http", "https"):
        print(f"mock-server pact: {args.url!r} is not an http:// or https:// URL", file=sys.stderr, flush=True)
        return UNHEALTHY
    try:
        status, body = fetch_pact(args.url, args.consumer, args.provider, args.session, args.admin_token, args.timeout)
    except (OSError, http.client.HTTPException) as exc:
        print(f"mock-server pact: {where}: {describe(exc)}", file=sys.stderr, flush=True)
        return UNHEALTHY
    if status != 200:
        print(f"mock-server pact: {where} answered {status}: {body[:500].decode('utf-8', 'replace')}", file=sys.stderr)
        return UNHEALTHY
    document = json.loads(body)
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if args.output is None:
        sys.stdout.write(text)
        return 0
    target = args.output
    if target.is_dir():
        target = target / _file_name(args.consumer, args.provider)
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"mock-server pact: cannot write {target}: {exc}", file=sys.stderr, flush=True)
        return UNHEALTHY
    count = len(document["interactions"])
    version = document["metadata"]["pactSpecification"]["version"]
    print(f"wrote {target}: {count} interactions between {args.consumer} and {args.provider} (Pact {version})")
    return 0


def _file_name(consumer: str, provider: str) -> str:
    """`CONSUMER-PROVIDER.json`, as Pact's tools name the file: the rule of admin/pact.py's pact_file_name, written
    again here because this module stays on the standard library."""
    return f"{UNSAFE_IN_FILE_NAMES.sub('_', consumer)}-{UNSAFE_IN_FILE_NAMES.sub('_', provider)}.json"
