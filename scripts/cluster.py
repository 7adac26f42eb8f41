"""N mock-server processes behind nginx, each session sticking to one process (deploy/nginx/mock-cluster.conf).

`mock-server` is one process serving one core. Sessions are independent, so they are what is spread: nginx
hashes each request's session name (the `/__session/NAME/` prefix, else `X-Mock-Session`, else `default`) to
one process. This script starts the processes (each on a free loopback port), writes the nginx config into a
temporary directory, runs nginx in the foreground, prints one ready line and waits; Ctrl-C (or SIGTERM) stops
everything it started, and so does any of its processes dying.

    python scripts/cluster.py --processes 2 --port 8000 [-- MOCK-SERVER OPTIONS...]

prints `mock-cluster ready on http://127.0.0.1:8000 (2 processes: http://127.0.0.1:41533 http://127.0.0.1:40119)`.
Needs nginx (Debian: `apt-get install nginx-light`; `make cluster-test` installs it when missing).

With `--tls-cert F --tls-key F` nginx serves https; with `--client-ca F` too it ends mutual TLS (a client
certificate required and verified by nginx) and forwards the verified certificate in X-Client-Cert to the processes,
started with `--client-cert-header X-Client-Cert`: the journal records the client's certificate as if the mock had
run the handshake itself (docs/tls.md).

nginx passes each client's Host on, and every process answers only to loopback names and IP addresses (the guard
against DNS rebinding, docs/threat-model.md): a balancer that clients reach by a name (`--host 0.0.0.0`, then
`http://mocks.internal:8000`) needs that name passed on, `-- --allowed-hosts mocks.internal`.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "deploy" / "nginx" / "mock-cluster.conf"
READY = "mock-server ready on "
START_TIMEOUT = 60.0
CLIENT_CERT_HEADER = "X-Client-Cert"


def nginx_config(
    listen: str,
    servers: Sequence[str],
    run_dir: Path,
    tls: tuple[Path, Path] | None = None,
    client_ca: Path | None = None,
) -> str:
    """The template with its placeholders filled: `servers` as host:port; `tls` (certificate, key): https, and
    with `client_ca` mutual TLS whose verified client certificate goes on in CLIENT_CERT_HEADER."""
    lines = "\n".join(f"        server {server};" for server in servers)
    routes = "\n".join(f'        "/__mock/mcp {replica_name(i)}"  mock_{replica_name(i)};' for i in range(len(servers)))
    upstreams = "\n".join(
        f"    upstream mock_{replica_name(i)} {{\n        server {server};\n        keepalive 8;\n    }}"
        for i, server in enumerate(servers)
    )
    tls_lines = header = ""
    if tls is not None:
        listen += " ssl"
        tls_lines = (
            f"\n        ssl_certificate {tls[0].resolve()};\n        ssl_certificate_key {tls[1].resolve()};\n"
            "        ssl_protocols TLSv1.2 TLSv1.3;"
        )
        if client_ca is not None:
            tls_lines += f"\n        ssl_client_certificate {client_ca.resolve()};\n        ssl_verify_client on;"
            header = f"\n            proxy_set_header {CLIENT_CERT_HEADER} $ssl_client_escaped_cert;"
    return (
        TEMPLATE.read_text(encoding="utf-8")
        .replace("@RUN_DIR@", str(run_dir))
        .replace("@LISTEN@", listen)
        .replace("@SERVERS@", lines)
        .replace("@MCP_ROUTES@", routes)
        .replace("@MCP_UPSTREAMS@", upstreams)
        .replace("@TLS@", tls_lines)
        .replace("@CLIENT_CERT_HEADER@", header)
    )


def replica_name(index: int) -> str:
    """The name of the index-th process in its MCP session ids (`--mcp-replica`), and of its upstream."""
    return f"m{index}"


def _start_server(command: Sequence[str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(list(command), stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith(READY):
            return process, line[len(READY) :].split()[0]
        if not line and process.poll() is not None:
            break
    process.kill()
    process.wait()
    raise SystemExit(f"cluster: {' '.join(command)} did not start")


def _wait_healthy(url: str, process: subprocess.Popen[bytes], mutual: bool = False) -> None:
    """Until the balancer answers /__mock/health (over mutual TLS, where this script holds no client certificate:
    until nginx answers at all, its 400 for the missing certificate)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # nginx's own liveness, not its identity
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"cluster: nginx exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/__mock/health", timeout=2, context=context) as answer:
                if answer.status == 200:
                    return
        except urllib.error.HTTPError as error:
            if mutual and error.code == 400:
                return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.05)
    raise SystemExit("cluster: the balancer did not answer /__mock/health")


def _stop(process: subprocess.Popen[str] | subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--processes", type=int, default=2, help="mock-server processes (default 2)")
    parser.add_argument("--host", default="127.0.0.1", help="the balancer's interface (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="the balancer's port (default 8000)")
    parser.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx", help="the nginx binary")
    parser.add_argument("--tls-cert", type=Path, help="nginx serves https with this certificate (PEM)")
    parser.add_argument("--tls-key", type=Path, help="...and this key")
    parser.add_argument(
        "--client-ca",
        type=Path,
        help="nginx ends mutual TLS against this CA and forwards the client certificate to the processes",
    )
    parser.add_argument("server_options", nargs="*", help="passed to every mock-server (after --)")
    args = parser.parse_args(argv)
    if args.processes < 1:
        parser.error("--processes must be at least 1")
    if (args.tls_cert is None) != (args.tls_key is None) or (args.client_ca and not args.tls_cert):
        parser.error("--tls-cert and --tls-key go together; --client-ca needs them")
    tls = (args.tls_cert, args.tls_key) if args.tls_cert else None
    forwarded = ["--client-cert-header", CLIENT_CERT_HEADER] if args.client_ca else []
    if not Path(args.nginx).exists():
        raise SystemExit(f"cluster: no nginx at {args.nginx} (Debian: apt-get install nginx-light)")
    mock_server = [sys.executable, "-m", "mock_server"]
    started: list[subprocess.Popen[str] | subprocess.Popen[bytes]] = []

    def on_signal(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    run_dir = Path(tempfile.mkdtemp(prefix="mock-cluster-"))
    run_dir.chmod(0o755)  # nginx's worker drops root and must reach its temporary directories
    try:
        urls = []
        for index in range(args.processes):
            options = [*args.server_options, *forwarded, "--mcp-replica", replica_name(index)]
            options += ["--host", "127.0.0.1", "--port", "0"]
            process, url = _start_server([*mock_server, *options])
            started.append(process)
            urls.append(url)
        listen = f"[{args.host}]:{args.port}" if ":" in args.host else f"{args.host}:{args.port}"
        config = run_dir / "nginx.conf"
        servers = [u.removeprefix("http://") for u in urls]
        config.write_text(nginx_config(listen, servers, run_dir, tls, args.client_ca), encoding="utf-8")
        nginx = subprocess.Popen([args.nginx, "-p", str(run_dir), "-c", str(config), "-g", "daemon off;"])
        started.append(nginx)
        balancer = f"{'https' if tls else 'http'}://{listen}"
        _wait_healthy(balancer, nginx, mutual=args.client_ca is not None)
        print(f"mock-cluster ready on {balancer} ({args.processes} processes: {' '.join(urls)})", flush=True)
        while all(process.poll() is None for process in started):
            time.sleep(0.2)
        dead = next(process for process in started if process.poll() is not None)
        print(f"cluster: {' '.join(map(str, dead.args))} exited with {dead.returncode}", file=sys.stderr, flush=True)
        return 1
    finally:
        for process in reversed(started):
            _stop(process)
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
