"""docs/tls.md shows what its commands print: `scripts/docs_tls_examples.py --check` runs them for real (a new
PKI, a mock-server over mutual TLS, curl, httpx) and compares, but for what a new PKI or another OpenSSL changes."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.mark.own_protocol  # the page shows client certificates in the journal
def test_the_tls_page_shows_what_its_commands_print():
    result = subprocess.run(
        [sys.executable, str(REPOSITORY / "scripts" / "docs_tls_examples.py"), "--check"],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, (
        "docs/tls.md differs from what its commands print now (python scripts/docs_tls_examples.py remakes it):\n"
        + result.stdout[-4000:]
        + result.stderr[-2000:]
    )


def test_the_check_sees_a_changed_output():
    """The comparison is not blind: a page whose shown answer was edited fails it."""
    spec = importlib.util.spec_from_file_location("docs_tls_examples", REPOSITORY / "scripts" / "docs_tls_examples.py")
    assert spec is not None and spec.loader is not None
    replay = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(replay)
    page = replay.PAGE.read_text(encoding="utf-8")
    edited = page.replace("alert certificate expired", "alert certificate revoked", 1)
    assert edited != page
    assert replay.differences(page, page) == []
    assert replay.differences(edited, page)
    fingerprint = '"fingerprint_sha256": "'
    assert fingerprint in page  # a new PKI's fingerprint is masked, the field is not
    assert replay.differences(page.replace(fingerprint, '"sha256": "'), page)
