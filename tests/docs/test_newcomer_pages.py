"""What a newcomer looked for and did not find where they were (issue 43): the unit of the amounts on the API page,
what `reset()` and `verify(body_contains=...)` do in the fixture table, `account(id)` beside them, and the
amounts the API page's own examples send read in that unit."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from mock_server.client import PixMock

DOCS = Path(__file__).resolve().parents[2] / "docs"


def fixture_row(name: str) -> str:
    """The fixture table's row for `pix_mock.NAME(...)` in docs/from-tests.md."""
    text = (DOCS / "from-tests.md").read_text(encoding="utf-8")
    return next(line for line in text.splitlines() if line.startswith(f"| `{name}("))


def test_the_api_page_says_the_unit_of_each_amount_before_its_first_example() -> None:
    text = (DOCS / "api-by-example.md").read_text(encoding="utf-8")
    before = " ".join(text[: text.index("## ")].split())
    assert "integer number of cents of BRL" in before and "`500000` is R$ 5,000.00" in before
    assert "BRL as exact decimals" in before
    # the first registration on the page sends 500000: the amount the unit's sentence reads out
    assert '"amount": 500000' in text[text.index("## Register a new limit") :]


def test_the_fixture_table_says_what_reset_and_verify_do() -> None:
    reset = fixture_row("reset")
    for what in ("journal emptied", "faults disarmed", "clock real again", "snapshots stay", "seed=N", "reseed=True"):
        assert what in reset, what
    assert "reseed" in inspect.signature(PixMock.reset).parameters
    verify = fixture_row("verify")
    assert re.search(r"`body_contains` \(a JSON subset: an object needs at least the keys given", verify), verify
    assert "an array the same number of elements" in verify


def test_the_fixture_table_lists_account() -> None:
    row = fixture_row("account")
    assert "GET /__mock/accounts/ID" in row and "cents of BRL" in row and "account_not_found" in row
    assert list(inspect.signature(PixMock.account).parameters) == ["self", "account_id"]
