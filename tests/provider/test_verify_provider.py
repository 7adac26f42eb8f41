"""`mock-server verify-provider` against real servers on 127.0.0.1 (uvicorn in a thread): the clean mock agrees,
twice in a row on the same server; every planted defect is caught and its operation named; the JUnit report
holds one testcase per check; usage errors and an unreachable provider exit 2."""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
import threading
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from mock_server import cli, probe
from mock_server.domain.operations import OPERATIONS
from mock_server.provider.flows import catalogue
from tests.default_scenario import UNKNOWN_EVENT
from tests.planted_defects import DEFECTS, Defect, clean_twin, defective, mock_app, serve
from tests.provider.hostile import (
    Answer,
    body,
    dripping,
    gzip_bomb,
    hostile,
    large,
    mock_over_mutual_tls,
    reset_mid_answer,
)

CHECK_LINE = re.compile(r"^(ok|differs|not run) +(\w+) +(.+)$")


def verify_provider(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`mock-server verify-provider ARGS` in process: exit status, stdout, stderr."""
    status = cli.main(["verify-provider", *args])
    out, err = capsys.readouterr()
    return status, out, err


def check_lines(out: str) -> list[tuple[str, str, str]]:
    return [m.groups() for line in out.splitlines() if (m := CHECK_LINE.match(line))]  # type: ignore[misc]


def differing_operations(out: str) -> set[str]:
    found = re.search(r"^operations that differ: (.+)$", out, re.MULTILINE)
    return set(found[1].split(", ")) if found else set()


def test_the_clean_twin_agrees_twice_in_a_row_on_the_same_server(capsys) -> None:
    with serve(clean_twin()) as url:
        first = verify_provider(capsys, "--target", url)
        second = verify_provider(capsys, "--target", url)
    for status, out, err in (first, second):
        assert status == 0, out + err
        assert " 0 differ, 0 not run" in out
        assert "the provider agrees with the mock on every check" in out
    lines = check_lines(first[1])
    operations = {operation for _, operation, _ in lines}
    assert operations == set(OPERATIONS), operations  # every public operation is checked
    assert all(verdict == "ok" for verdict, _, _ in lines)


def _first_of_each_operation_then_the_rest_exhaustive(defects: tuple[Defect, ...]) -> Sequence[object]:
    """The default tier plants the first defect of each operation (7 of 25, every operation); the exhaustive tier
    (`make test-exhaustive`, in CI) plants the others, each a verify-provider run of its own (~0.4 s)."""
    sampled: set[str] = set()
    params = []
    for defect in defects:
        marks = [] if defect.operation_id not in sampled else [pytest.mark.exhaustive]
        sampled.add(defect.operation_id)
        params.append(pytest.param(defect, id=defect.name, marks=marks))
    return params


@pytest.mark.parametrize("defect", _first_of_each_operation_then_the_rest_exhaustive(DEFECTS))
def test_a_planted_defect_is_caught_and_its_operation_named(capsys, defect: Defect) -> None:
    with serve(defective(defect)) as url:
        status, out, err = verify_provider(capsys, "--target", url)
    assert status == 1, f"{defect.name} ({defect.what}) was not caught:\n{out}{err}"
    assert defect.operation_id in differing_operations(out), out
    assert re.search(rf"^\d+\) {defect.operation_id}: ", out, re.MULTILINE), out


def test_the_defect_set_is_spread_over_every_operation_and_mostly_schema_valid(specs) -> None:
    assert len(DEFECTS) >= 20
    assert {d.operation_id for d in DEFECTS} == set(specs.public.operations)
    assert sum(d.schema_valid for d in DEFECTS) * 2 >= len(DEFECTS)
    assert len({d.name for d in DEFECTS}) == len(DEFECTS)


def test_the_default_tier_plants_a_defect_in_every_operation_and_the_exhaustive_tier_the_rest(specs) -> None:
    params = _first_of_each_operation_then_the_rest_exhaustive(DEFECTS)
    default = [p.values[0] for p in params if not p.marks]  # type: ignore[attr-defined]
    exhaustive = [p.values[0] for p in params if [m.name for m in p.marks] == ["exhaustive"]]  # type: ignore[attr-defined]
    assert sorted(d.name for d in default + exhaustive) == sorted(d.name for d in DEFECTS)
    assert {d.operation_id for d in default} == set(specs.public.operations) and len(default) == len(OPERATIONS)


def test_a_difference_shows_request_expected_actual_and_the_smallest_flow(capsys) -> None:
    defect = next(d for d in DEFECTS if d.name == "duplicate-account-accepted")
    with serve(defective(defect)) as url:
        status, out, _ = verify_provider(capsys, "--target", url, "--run-id", "shown")
    assert status == 1
    block = out[out.index("1) registerAccountLimit: register-twice 2/2") :]
    assert '   request:  POST /limits/account {"account_id": "vp-shown-' in block
    assert '   expected: 409 {"code": "account_already_registered"' in block
    assert "   actual:   201 {" in block
    assert "   differs:  status: expected 409, got 201" in block
    assert "   smallest flow that shows it (2 steps):" in block
    assert re.search(r"     1\. POST /limits/account .* -> expected 201, got 201", block)
    assert re.search(r"     2\. POST /limits/account .* -> expected 409, got 201", block)


def test_a_flow_is_shrunk_to_the_steps_that_still_show_the_difference(capsys) -> None:
    """The lifecycle's last step differs when removals remove nothing; its flow shrinks to what shows it."""
    defect = next(d for d in DEFECTS if d.name == "recipient-pending-analysis")
    with serve(defective(defect)) as url:
        status, out, _ = verify_provider(capsys, "--target", url)
    assert status == 1
    block = out[out.index(": lifecycle 4/10: add a CPF") :]
    # register, create the list, add: proposing a limit before (step 2) is not needed to show it.
    assert "   smallest flow that shows it (3 steps):" in block.split("\n\n")[0], block


def test_the_junit_report_is_valid_xml_with_one_testcase_per_check(capsys, tmp_path: Path) -> None:
    report = tmp_path / "verify.xml"
    defect = next(d for d in DEFECTS if d.name == "removal-removes-nothing")
    with serve(defective(defect)) as url:
        status, out, _ = verify_provider(capsys, "--target", url, "--report", str(report))
    assert status == 1
    lines = check_lines(out)
    root = ET.parse(report).getroot()
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == len(lines) == int(root.attrib["tests"])
    assert [case.attrib["classname"] for case in cases] == [operation for _, operation, _ in lines]
    failed = [case for case in cases if case.find("failure") is not None]
    assert len(failed) == sum(verdict == "differs" for verdict, _, _ in lines) == int(root.attrib["failures"]) > 0
    assert "removeRecipient" in {case.attrib["classname"] for case in failed}
    failure = failed[0].find("failure")
    assert failure is not None and failure.text and "smallest flow that shows it" in failure.text


def test_the_report_stays_valid_xml_whatever_the_provider_answers(capsys, tmp_path: Path) -> None:
    async def control_characters(scope: Scope, receive: Receive, send: Send) -> None:
        body = b'{"code": "\\u0000\\u001b<&]]>"}'
        await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    report = tmp_path / "verify.xml"
    with serve(control_characters) as url:
        status, _, _ = verify_provider(capsys, "--target", url, "--report", str(report))
    assert status == 1
    assert ET.parse(report).getroot().attrib["failures"] != "0"


def test_more_flows_than_the_catalogue_repeat_it_with_fresh_accounts(capsys) -> None:
    with serve(mock_app()) as url:
        status, out, _ = verify_provider(capsys, "--target", url, "--flows", "30", "--concurrency", "8")
    assert status == 0, out
    assert "in 30 flows" in out
    assert "(run 2)" in out and "(run 3)" not in out  # 27 flows in the catalogue: 30 is once and a bit


def test_the_noise_file_silences_the_fields_it_names(capsys, tmp_path: Path) -> None:
    defect = next(d for d in DEFECTS if d.name == "recipient-pending-analysis")
    noise = tmp_path / "noise.yaml"
    noise.write_text("addRecipient:\n  pointers: [/recipient_status]\n")
    patterns = tmp_path / "patterns.yaml"
    patterns.write_text("'*':\n  patterns: ['_status$']\n")
    with serve(defective(defect)) as url:
        assert verify_provider(capsys, "--target", url)[0] == 1
        assert verify_provider(capsys, "--target", url, "--noise", str(noise))[0] == 0
        assert verify_provider(capsys, "--target", url, "--noise", str(patterns))[0] == 0


class NeedsToken:
    """A provider that answers 401 without `Authorization: Bearer sandbox`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (b"authorization", b"Bearer sandbox") not in scope["headers"]:
            body = b'{"code": "unauthorized", "message": "no token"}'
            await send(
                {"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def test_extra_headers_reach_the_provider(capsys) -> None:
    with serve(NeedsToken(mock_app())) as url:
        without = verify_provider(capsys, "--target", url)
        with_token = verify_provider(capsys, "--target", url, "--header", "Authorization: Bearer sandbox")
    assert without[0] == 1 and "status: expected 200, got 401" in without[1]
    assert with_token[0] == 0, with_token[1]


def test_no_answer_in_time_is_a_difference_of_that_call(capsys) -> None:
    app = mock_app()
    calls = 0

    async def first_list_slow(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal calls
        if scope["type"] == "http" and scope["path"].endswith("/recipient_list"):
            calls += 1
            if calls == 1:
                await asyncio.sleep(1)
        await app(scope, receive, send)

    with serve(first_list_slow) as url:
        status, out, _ = verify_provider(capsys, "--target", url, "--timeout", "0.3", "--concurrency", "1")
    assert status == 1
    assert "createRecipientList" in differing_operations(out)
    assert "got no answer (no whole answer within --timeout 0.3 s)" in out


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target", "ftp://127.0.0.1:1"], "is not an http:// or https:// base URL"),
        (["--target", "http://127.0.0.1:1", "--flows", "0"], "is not a whole number of at least 1"),
        (["--target", "http://127.0.0.1:1", "--header", "no colon"], "is not a header"),
        (["--target", "http://127.0.0.1:1", "--header", "X-Team: 東京"], "its value Latin-1"),
        (["--target", "http://127.0.0.1:1", "--key", "k.pem"], "--key goes with --cert"),
        (["--target", "http://127.0.0.1:1", "--cacert", "/nonexistent.pem"], "the TLS files cannot be used"),
        (["--target", "http://127.0.0.1:1", "--scenario", "nope"], "No scenario named 'nope'"),
        (["--target", "http://127.0.0.1:1", "--noise", "/nonexistent.yaml"], "cannot be read"),
        ([], "the following arguments are required: --target"),
    ],
)
def test_usage_errors_exit_2(capsys, args: list[str], message: str) -> None:
    try:
        status = cli.main(["verify-provider", *args])
    except SystemExit as exc:  # argparse's own usage errors
        status = exc.code  # type: ignore[assignment]
    assert status == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "must be a mapping of operationId"),
        ("payEvent: {pointers: [/x]}", "'payEvent' is not an operationId"),
        ("addRecipient: {pointers: [recipient_id]}", "is not a JSON pointer"),
        ("addRecipient: {patterns: ['(']}", "is not a regular expression"),
        ("addRecipient: {ignore: [/x]}", "must be a mapping with pointers and/or patterns"),
    ],
)
def test_a_wrong_noise_file_is_a_usage_error(capsys, tmp_path: Path, text: str, message: str) -> None:
    noise = tmp_path / "noise.yaml"
    noise.write_text(text)
    status = cli.main(["verify-provider", "--target", "http://127.0.0.1:1", "--noise", str(noise)])
    assert status == 2
    assert message in capsys.readouterr().err


def test_an_unreachable_provider_exits_2(capsys) -> None:
    status, out, err = verify_provider(capsys, "--target", f"http://127.0.0.1:{_closed_port()}")
    assert status == 2
    assert out == ""
    assert "the provider cannot be reached" in err


def test_a_provider_behind_mutual_tls_is_reached_with_cert_key_and_cacert(capsys, test_pki) -> None:
    """The test PKI every TLS test shares (`mock-server pki init`, made once a process): openssl making a CA and
    two RSA certificates for this test alone cost ~1.3 s of CPU."""
    server_certificate, server_key = str(test_pki.server_cert), str(test_pki.server_key)
    tls = {
        "ssl_certfile": server_certificate,
        "ssl_keyfile": server_key,
        "ssl_ca_certs": str(test_pki.ca),
        "ssl_cert_reqs": ssl.CERT_REQUIRED,
    }
    certificate, key = (str(path) for path in test_pki.client())
    client = ["--cert", certificate, "--key", key, "--cacert", str(test_pki.ca)]
    with serve(mock_app(), **tls) as url:
        assert url.startswith("https://")
        agreed = verify_provider(capsys, "--target", url, *client)
        no_client_certificate = verify_provider(capsys, "--target", url, "--cacert", str(test_pki.ca))
        untrusted_server = verify_provider(capsys, "--target", url, "--cert", certificate, "--key", key)
    assert agreed[0] == 0, agreed[1] + agreed[2]
    assert no_client_certificate[0] == 2 and "cannot be reached" in no_client_certificate[2]
    assert untrusted_server[0] == 2 and "CERTIFICATE_VERIFY_FAILED" in untrusted_server[2]


# --- a provider that refuses, breaks or overwhelms the calls ----------------------------------------------------

REFUSALS = [
    (None, "TLSV13_ALERT_CERTIFICATE_REQUIRED: the server requires a client certificate (--cert and --key)"),
    ("expired", "SSLV3_ALERT_CERTIFICATE_EXPIRED: the server refused the client certificate (--cert): it has expired"),
    ("unknown-ca", "TLSV1_ALERT_UNKNOWN_CA: the server does not trust the CA that signed the client certificate "
                   "(--cert)"),
    ("wrong-eku", "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE: the server refused the client certificate (--cert): it is "
                  "not for client authentication (its extended key usage)"),
    ("not-yet-valid", "SSLV3_ALERT_BAD_CERTIFICATE: the server refused the client certificate (--cert): not yet "
                      "valid, or otherwise unusable"),
]  # fmt: skip


def one_line(err: str) -> str:
    """stderr holds exactly one line, no traceback: that line."""
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


@pytest.mark.parametrize(("variant", "reason"), REFUSALS, ids=[v or "none" for v, _ in REFUSALS])
def test_a_refused_client_certificate_exits_2_in_one_line(capsys, test_pki, variant, reason) -> None:
    """The alert arrives at the first read (TLS 1.3): an ssl.SSLError httpx does not wrap, which was a 76-line
    traceback and exit 1. The words are healthcheck's (http/failures.py)."""
    client = ["--cert", str(test_pki.client(variant)[0]), "--key", str(test_pki.client(variant)[1])] if variant else []
    with mock_over_mutual_tls(test_pki.server_cert, test_pki.server_key, test_pki.ca) as url:
        status, out, err = verify_provider(capsys, "--target", url, "--cacert", str(test_pki.ca), *client)
        health = probe.check_health(url, 5, tls=probe_context(test_pki, variant))
    assert status == 2 and out == ""
    assert one_line(err) == f"mock-server verify-provider: the provider cannot be reached: {url}: {reason}"
    assert health.reason.endswith(reason)  # the same words as healthcheck's


def probe_context(test_pki, variant: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=test_pki.ca)
    if variant is not None:
        context.load_cert_chain(*test_pki.client(variant))
    return context


@pytest.mark.parametrize("flag", ["--cacert", "--cert", "--key"])
def test_a_missing_tls_file_names_the_flag_and_the_path(capsys, test_pki, tmp_path: Path, flag: str) -> None:
    files = {"--cacert": test_pki.ca, "--cert": test_pki.client()[0], "--key": test_pki.client()[1]}
    files[flag] = tmp_path / "missing.pem"
    args = [item for name, path in files.items() for item in (name, str(path))]
    status = cli.main(["verify-provider", "--target", "https://127.0.0.1:1", *args])
    assert status == 2
    err = capsys.readouterr().err
    assert one_line(err) == (
        f"mock-server verify-provider: the TLS files cannot be used: {flag} {tmp_path / 'missing.pem'}: no such file"
    )


def test_a_reset_mid_answer_exits_2_in_one_line(capsys) -> None:
    with hostile(reset_mid_answer) as url:
        status, out, err = verify_provider(capsys, "--target", url)
    assert status == 2 and out == ""
    assert one_line(err).startswith(f"mock-server verify-provider: the provider cannot be reached: {url}: ")


def test_a_provider_dripping_its_answer_is_unreachable_within_the_timeout(capsys) -> None:
    """A byte every 0.1 s never lets one read wait 0.4 s: with a deadline per read it ran for as long as it
    dripped (its 72 bytes: 7 s)."""
    with hostile(dripping(0.1)) as url:
        status, _, err = verify_provider(capsys, "--target", url, "--timeout", "0.4")
    assert status == 2
    assert one_line(err).endswith(f"{url}: no whole answer within --timeout 0.4 s")


def provider_answering(lookup: Answer) -> ASGIApp:
    """The clean mock, but every lookup is answered by `lookup`'s bytes (a raw HTTP answer is parsed back)."""
    app = mock_app()

    async def provider(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/event_conciliation/") and "ffff" not in scope["path"]:
            raw = bytearray()

            class Writer:
                def write(self, data: bytes) -> None:
                    raw.extend(data)

                async def drain(self) -> None:
                    pass

            await lookup(Writer())  # type: ignore[arg-type]
            head, _, content = bytes(raw).partition(b"\r\n\r\n")
            headers = [tuple(line.split(b": ", 1)) for line in head.split(b"\r\n")[1:]]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": content})
            return
        await app(scope, receive, send)

    return provider


@pytest.mark.parametrize(
    ("lookup", "reason"),
    [
        pytest.param(large(3_000_000), "its body is larger than --max-body 2 MiB", id="3MB"),
        pytest.param(body(gzip_bomb(64 * 1024 * 1024), Content_Encoding="gzip"),
                     "its body is larger than --max-body 2 MiB", id="gzip-bomb"),
        pytest.param(body(b"this is no gzip", Content_Encoding="gzip"), "its gzip body does not decompress",
                     id="bad-gzip"),
    ],
)  # fmt: skip
def test_an_unusable_answer_is_a_difference_of_its_call(capsys, lookup: Answer, reason: str) -> None:
    """Read up to --max-body, decompressed in steps; a body that does not decompress is that call's difference
    (a bad gzip was a traceback, exit 1, and the end of every flow)."""
    with serve(provider_answering(lookup)) as url:
        status, out, err = verify_provider(capsys, "--target", url, "--max-body", "2MiB", "--quiet")
    assert status == 1 and err == "", err
    assert differing_operations(out) == {"getExtraordinaryEvent"}
    assert f"got no answer (an answer that cannot be used: {reason}" in out
    assert " 0 not run" in out  # every other flow ran


def test_a_100000_deep_answer_is_a_difference_never_a_traceback(capsys) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with serve(provider_answering(body(deep))) as url:
        status, out, err = verify_provider(capsys, "--target", url, "--quiet")
    assert status == 1 and err == "", err
    assert differing_operations(out) == {"getExtraordinaryEvent"}
    assert "schema: (body): " in out


def test_what_the_report_prints_of_a_large_answer_is_cut(capsys, tmp_path: Path) -> None:
    """1.5 MB answers (under the bound) compared whole, printed cut: 40 MB answers printed 84 MB."""
    report = tmp_path / "verify.xml"
    with serve(provider_answering(large(1_500_000))) as url:
        status, out, _ = verify_provider(capsys, "--target", url, "--report", str(report))
    assert status == 1
    assert max(len(line) for line in out.splitlines()) < 2500
    assert len(out) < 200_000 and report.stat().st_size < 200_000


def test_a_failure_in_one_flow_is_that_flows_difference(capsys, monkeypatch) -> None:
    """An exception met in one flow no longer ends every flow of the run."""
    from mock_server.provider import runner

    compare = runner.Runner.compare

    def failing(self, step, expected, actual):
        if step.operation_id == "removeRecipient":
            raise RuntimeError("planted")
        return compare(self, step, expected, actual)

    monkeypatch.setattr(runner.Runner, "compare", failing)
    with serve(mock_app()) as url:
        status, out, err = verify_provider(capsys, "--target", url, "--quiet")
    assert status == 1 and "Traceback" not in err
    assert {operation for verdict, operation, _ in check_lines(out) if verdict == "differs"} == {"removeRecipient"}
    assert "differs:  the step could not be checked: RuntimeError: planted" in out
    assert "not run  addRecipient                           lifecycle 8/10: add the CPF again (an earlier step " in out
    assert every_flow_of_the_default_scenario() in out


def every_flow_of_the_default_scenario() -> str:
    """`N checks in M flows`: a run of the catalogue on the default scenario, one check per step."""
    flows = catalogue(mock_app().state.sessions.scenarios["default"].events.values(), UNKNOWN_EVENT).flows
    return f"{sum(len(flow.steps) for flow in flows)} checks in {len(flows)} flows"


def test_a_call_that_got_no_answer_is_not_replayed_to_shrink_its_flow(capsys) -> None:
    """Shrinking replays shorter flows: against calls that time out, each replay cost a --timeout per step."""
    app = mock_app()
    calls = 0
    verified = threading.Event()

    async def only_the_first_call_answered_in_time(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal calls
        calls += 1
        if calls > 1:
            # Held past the --timeout until the run is over (10 s at most): the server's stop waits for the calls
            # still in flight, which a sleep of a fixed 2 s kept there for ~1.5 s after the run.
            for _ in range(200):
                if verified.is_set():
                    break
                await asyncio.sleep(0.05)
        await app(scope, receive, send)

    # 0.6 s: the first call, the probe, must be answered in time on a busy machine too (its schemas compile then).
    # The catalogue's first 11 flows (12 calls; register-twice is a flow of 2 steps to shrink: a replay of its second
    # call alone is one call more than counted), all 11 at once: the run takes that flow's 2 timeouts, 1.2 s. The
    # first 12 (a flow of 5 steps too) took 3 s, 4 at a time 5 s; the whole catalogue, 65 calls of 0.6 s each 4 at a
    # time, took 13 s to show the same.
    with serve(only_the_first_call_answered_in_time) as url:
        status, out, _ = verify_provider(
            capsys, "--target", url, "--timeout", "0.6", "--quiet", "--flows", "11", "--concurrency", "11"
        )
        verified.set()
    assert status == 1
    assert "got no answer (no whole answer within --timeout 0.6 s)" in out
    checked = int(re.search(r"^(\d+) checks in", out, re.MULTILINE)[1])  # type: ignore[index]
    not_run = int(re.search(r"(\d+) not run$", out, re.MULTILINE)[1])  # type: ignore[index]
    # Each check once, and the first call that finds the provider there; a replay would add calls. Under load a call
    # may time out before the server starts it (its app never sees it): so at most that many, and nearly all.
    expected = checked - not_run + 1
    assert expected - 3 <= calls <= expected, (calls, expected)
