"""Which `Host` the server answers to: the guard against DNS rebinding, and RFC 9112's one-Host rule.

No web page on another site can read this server's answers: the server never sends a CORS header. Unless the
page's own name comes to point at this machine: a DNS-rebinding page at `http://evil.example:8000` first resolves
to the attacker's server, then to 127.0.0.1, and its requests arrive here with `Host: evil.example:8000` from a
browser that sees one origin and hands the page every answer. Refusing a Host the server was not told it is named
closes that, as dev servers learned to (Vite's `server.allowedHosts`, webpack-dev-server's `allowedHosts`). Answered:

- `localhost` and any `*.localhost` name (RFC 6761: resolved to the machine itself, never by a DNS server);
- any IP address (`127.0.0.1`, `[::1]`, `10.0.0.7`): rebinding needs a name the attacker's DNS answers, and a
  page whose URL holds an address is that address's own page. Kubernetes probes and `docker run -p` reach the
  server by address;
- the name the server was bound to (`--host mock.internal`);
- the names `--allowed-hosts` lists (MOCK_SERVER_ALLOWED_HOSTS), for a deployment reached by a name: `mock`
  exactly, `.example.com` for example.com and every name under it, `*` for any Host at all.

The rule covers every route, the public API's as well as /__mock: a rebinding page could read the public API's
data as well as the admin state, and a deployment behind a name lists that name once for both.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from mock_server.domain.errors import ApiError, HostNotAllowed, MalformedHttp, bounded_text

# RFC 3986's reg-name without percent-encoding or sub-delims, which no DNS name holds.
_NAME = re.compile(r"[a-z0-9_~-]+(\.[a-z0-9_~-]+)*")
_PORT = re.compile(r"[0-9]*")
ANY_HOST = "*"
MAX_ANSWERED = 64  # Host values remembered as answered


def host_name(value: str) -> str | None:
    """The host of a Host header's value, lower case, without its port or a final dot (`Localhost.:80` ->
    `localhost`; an IPv6 address keeps its brackets); None when the value is not `host[:port]`."""
    text = value.strip().lower()
    if text.startswith("["):
        inside, bracket, port = text[1:].partition("]")
        if not bracket or not (port == "" or (port.startswith(":") and _PORT.fullmatch(port[1:]))):
            return None
        try:
            ipaddress.IPv6Address(inside)
        except ValueError:
            return None
        return f"[{inside}]"
    name, _, port = text.partition(":")
    if not _PORT.fullmatch(port):
        return None  # a second colon (an IPv6 address without brackets), or a port that is no number
    name = name.removesuffix(".")
    return name if _NAME.fullmatch(name) else None


def _is_address(host: str) -> bool:
    if host.startswith("["):
        return True  # host_name checked it is an IPv6 address
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


def allowed_host_entry(entry: str) -> str:
    """One `--allowed-hosts` entry, lower case: `*`, a name, or `.` and a name; ValueError saying why not."""
    text = entry.strip().lower()
    if text == ANY_HOST:
        return text
    name = text.removeprefix(".")
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"{entry!r} is not a host name: give a name (mock.internal), a dot and a name (.example.com: it and "
            "every name under it) or *, without a scheme or a port"
        )
    return text


@dataclass(frozen=True)
class HostPolicy:
    """The Host names the server answers to (see the module's docstring). `allowed` as `--allowed-hosts` gives them
    (already checked by `allowed_host_entry`), `bound` the `--host` the server listens on."""

    allowed: tuple[str, ...] = ()
    bound: str | None = None
    # Host values already answered, as sent: a client sends the same one on every request, and parsing it again
    # (an IP address through `ipaddress`) was a few microseconds a request. Bounded: a client cannot grow it.
    _answered: set[bytes] = field(default_factory=set, compare=False, repr=False)

    @classmethod
    def build(cls, allowed: Iterable[str], bound: str | None) -> HostPolicy:
        return cls(tuple(allowed_host_entry(entry) for entry in allowed), host_name(bound) if bound else None)

    def allows(self, host: str) -> bool:
        """Whether a request to `host` (as `host_name` gives it) is answered."""
        if host == "localhost" or host.endswith(".localhost") or _is_address(host) or host == self.bound:
            return True
        for entry in self.allowed:
            if entry in (ANY_HOST, host):
                return True
            if entry.startswith(".") and (host == entry[1:] or host.endswith(entry)):
                return True
        return False

    def refusal(self, hosts: list[bytes], http_version: str) -> ApiError | None:
        """Why a request with these Host header values is refused (400, or 403 for a Host not answered), or None.

        RFC 9112 3.2: an HTTP/1.1 request carries exactly one Host; with two, two parts of a chain of servers
        could each act on another one. HTTP/1.0 needs none."""
        if len(hosts) > 1:
            return MalformedHttp("The request carries more than one Host header; send one (RFC 9112 3.2).")
        if len(hosts) == 1 and hosts[0] in self._answered:
            return None
        if not hosts:
            if http_version == "1.1":
                return MalformedHttp("An HTTP/1.1 request carries a Host header (RFC 9112 3.2); this one has none.")
            return None
        value = hosts[0].decode("latin-1")
        host = host_name(value)
        if host is None:
            return MalformedHttp(f"The Host header {bounded_text(value, 100)!r} is not host[:port] (RFC 9112 3.2).")
        if self.allows(host):
            if len(self._answered) < MAX_ANSWERED:
                self._answered.add(hosts[0])
            return None
        return HostNotAllowed(
            f"This server does not answer to the name {bounded_text(host, 100)!r}: a page whose name was made to "
            "point here (DNS rebinding) would send it. It answers to localhost, IP addresses and its --host; if "
            "it is reached by this name, start it with --allowed-hosts (MOCK_SERVER_ALLOWED_HOSTS) naming it."
        )
