"""mock_server.domain.words: a count reads `1 scenario`, `2 scenarios`, never `1 scenarios` (issue 23)."""

from __future__ import annotations

import pytest

from mock_server.domain.errors import ApiError, Detail
from mock_server.domain.words import counted


@pytest.mark.parametrize(
    ("count", "noun", "nouns", "shown"),
    [
        (0, "scenario", None, "0 scenarios"),
        (1, "scenario", None, "1 scenario"),
        (2, "scenario", None, "2 scenarios"),
        (1, "more problem", None, "1 more problem"),
        (1, "entry", "entries", "1 entry"),
        (3, "entry", "entries", "3 entries"),
    ],
)
def test_a_count_agrees_with_its_noun(count, noun, nouns, shown):
    assert counted(count, noun, nouns) == shown


def test_an_error_body_cut_one_detail_short_says_one_more_problem():
    long = "x" * 200
    details = [Detail(("field", index), long) for index in range(1000)]
    body = ApiError("many", details).body()
    fitted = len(body["details"]) - 1
    assert body["details"][-1]["message"].startswith(f"{1000 - fitted} more problems not listed")
    few = ApiError("many", details[: fitted + 1]).body()
    assert few["details"][-1] == {"field": "", "message": "1 more problem not listed (the body is cut)"}
