"""`mock-server verify-provider` against real servers on 127.0.0.1 (uvicorn in a thread): the clean mock agrees,
twice in a row on the same server; every planted defect is caught and its operation named; the JUnit report
holds one testcase per check; usage errors and an unreachable provider exit 2."""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from mock_server import cli
from tests.planted_defects import DEFECTS, Defect, clean_twin, defective, mock_app, serve

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
    assert len(operations) == 7, operations  # every public operation is checked
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
    assert {d.operation_id for d in default} == set(specs.public.operations) and len(default) == 7


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
        status, out, _ = verify_provider(capsys, "--target", url, "--flows", "60", "--concurrency", "8")
    assert status == 0, out
    assert "in 60 flows" in out
    assert "(run 3)" in out and "(run 4)" not in out  # 27 flows in the catalogue: 60 is twice and a bit


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


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A test CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl."""
    folder = tmp_path_factory.mktemp("pki")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True, timeout=60)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=verify-provider test CA")  # fmt: skip
    for name, extension in (("server", "subjectAltName=IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={name}")  # fmt: skip
        (folder / f"{name}.ext").write_text(extension + "\n")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext")  # fmt: skip
    return folder


def test_a_provider_behind_mutual_tls_is_reached_with_cert_key_and_cacert(capsys, pki: Path) -> None:
    tls = {
        "ssl_certfile": str(pki / "server.pem"),
        "ssl_keyfile": str(pki / "server.key"),
        "ssl_ca_certs": str(pki / "ca.pem"),
        "ssl_cert_reqs": ssl.CERT_REQUIRED,
    }
    client = ["--cert", str(pki / "client.pem"), "--key", str(pki / "client.key"), "--cacert", str(pki / "ca.pem")]
    with serve(mock_app(), **tls) as url:
        assert url.startswith("https://")
        agreed = verify_provider(capsys, "--target", url, *client)
        no_client_certificate = verify_provider(capsys, "--target", url, "--cacert", str(pki / "ca.pem"))
        untrusted_server = verify_provider(capsys, "--target", url, "--cert", str(pki / "client.pem"),
                                           "--key", str(pki / "client.key"))  # fmt: skip
    assert agreed[0] == 0, agreed[1] + agreed[2]
    assert no_client_certificate[0] == 2 and "cannot be reached" in no_client_certificate[2]
    assert untrusted_server[0] == 2 and "CERTIFICATE_VERIFY_FAILED" in untrusted_server[2]
