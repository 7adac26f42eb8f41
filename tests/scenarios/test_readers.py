"""The fast readers of scenario text give exactly what the reference reader (libyaml + PyYAML's safe loader)
gives, or step aside (issue 15: same verdicts, faster). Checked on the shipped scenarios, on generated ones, on
every plain scalar form YAML 1.1 and 1.2 read differently, and on random documents written every way PyYAML
writes them."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.gen_scenario import write_scenario
from mock_server.scenarios.text import _read_yaml, read, read_fast_yaml
from mock_server.spec.resources import data_path

# Plain scalars on which readers disagree: YAML 1.1 (PyYAML) against 1.2 (most fast parsers), exponent and
# sign rules, octal, sexagesimal, the null and bool words, non-finite numbers, merge and value keys.
TRICKY = [
    "yes", "Yes", "YES", "no", "NO", "on", "On", "off", "OFF", "y", "n", "true", "True", "TRUE", "false",
    "null", "Null", "NULL", "~", "", "0", "-0", "+1", "01", "017", "0o17", "0x1F", "-0x1F", "0b101", "1_000",
    "1:20", "1:20.5", "1.5", "1.", ".5", "+.5", "-.5", "1e3", "1E3", "1e+3", "1.5e3", "1.5e+3", "1.5E-3",
    "1_000.5", "12e03", "1e400", "1.0e+400", ".inf", "-.inf", ".Inf", ".nan", ".NaN", "2026-01-01",
    "2026-02-30", "2026-01-10T09:00:00-03:00", "2026-12-31T23:59:60Z", "06:00:00-03:00", "06:00:00", "=", "<<",
    "9223372036854775808", "100.00", "00000000-0000-4000-a000-000000000000", "a b", "a:b", "a #b", "é",
]  # fmt: skip


def same(fast: Any, reference: Any) -> bool:
    """Equal values of equal types, all the way down (1 == 1.0 == True in Python, not here)."""
    return json.dumps(fast, sort_keys=True) == json.dumps(reference, sort_keys=True) and repr(fast) == repr(reference)


def check(text: str) -> bool:
    """The fast reader, when it reads `text` at all, gives the reference's data; whether it did."""
    fast = read_fast_yaml(text)
    if fast is None:
        return False
    try:
        reference = _read_yaml(text)
    except Exception as exc:  # the reference refuses it: the fast reader must not have taken it
        pytest.fail(f"fast reader took what the reference refuses ({exc}): {text!r}")
    assert not reference.problems, (text, reference.problems)
    assert same(fast.data, reference.data), (text, fast.data, reference.data)
    return True


@pytest.mark.parametrize("name", ["default", "payments", "recipients", "empty"])
def test_the_shipped_scenarios(name: str) -> None:
    text = (data_path("fixtures") / f"{name}.yaml").read_text(encoding="utf-8")
    check(text)
    assert same(read(text).data, _read_yaml(text).data)


@pytest.mark.parametrize("syntax", ["yaml", "json"])
def test_a_generated_scenario_is_read_fast_and_the_same(tmp_path, syntax: str) -> None:
    path = tmp_path / "scale.yaml"
    write_scenario(500, path, syntax)
    text = path.read_text(encoding="utf-8")
    assert same(read(text).data, _read_yaml(text).data)
    if syntax == "yaml":
        assert check(text)  # the happy path really is the fast one


def check_each(texts: list[str]) -> None:
    """check() on each text, every disagreement reported at once (a test a text: 540 tests, ~4 ms of pytest's
    own each, for checks of well under a millisecond)."""
    failures = []
    for text in texts:
        try:
            check(text)
        except (AssertionError, pytest.fail.Exception) as failure:
            failures.append(f"{text!r}: {failure}")
    assert not failures, f"{len(failures)} of {len(texts)} texts:\n" + "\n".join(failures)


@pytest.mark.parametrize("layout", ["k: {}\n", "- {}\n", "k: [{}, x]\n", "{}: v\n", "k:\n  {}\n", "k: {{a: {}}}\n"])
def test_every_tricky_plain_scalar(layout: str) -> None:
    check_each([layout.format(token) for token in TRICKY])


@pytest.mark.parametrize("quote", ["'", '"'])
def test_every_tricky_quoted_scalar(quote: str) -> None:
    check_each([f"k: {quote}{token}{quote}\nl: [{quote}{token}{quote}]\n" for token in TRICKY])


scalars = st.one_of(
    st.sampled_from(TRICKY),
    st.text(max_size=12),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
)
documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6) | st.sampled_from(TRICKY), inner, max_size=4)
    ),
    max_leaves=12,
)


# The default tier writes 70 random documents; the exhaustive tier the full count, 200.
STYLES = {
    "data": documents,
    "flow": st.sampled_from([None, True, False]),
    "unicode": st.booleans(),
    "width": st.sampled_from([10, 80, 10_000]),
}


@given(**STYLES)
@settings(max_examples=70, deadline=None)
def test_random_documents_in_every_style(data: Any, flow: bool | None, unicode: bool, width: int) -> None:
    check(yaml.safe_dump(data, default_flow_style=flow, allow_unicode=unicode, width=width))


@pytest.mark.exhaustive
@given(**STYLES)
@settings(max_examples=200, deadline=None)
def test_random_documents_in_every_style_full_count(data: Any, flow: bool | None, unicode: bool, width: int) -> None:
    check(yaml.safe_dump(data, default_flow_style=flow, allow_unicode=unicode, width=width))


# Lines that, put together at random, make documents valid and broken in many ways: rapidyaml is more lenient
# than libyaml on some (a document opening with `]`, `@`, an empty key, a comment in a flow collection), so
# the fast reader must step aside for every one the reference refuses.
FRAGMENTS = [
    "k: v", "k: a: b", "- a", "  - b", "k: [a, b", "k: [a, b]", "k: {a: 1, b: [2, 3]}", "  x: 1", "    y: 2", "k:",
    "  - {a: b}", "k: 'multi", "  line'", 'k: "dq', '  more"', "k: plain", "  continued", "k: -", "- - a", "k: 1.5",
    "k: 017", "'q': 1", '"q": 2', "k: [", "]", "k: {", "}", "k: [a,]", "k: {a,}", "k: [,]", "k: [a: 1]", "k: {a}",
    "- ", "-", "k: 'it''s'", "k: é", " k: v", "k: v ", "k: @x", "k: `x", "k: ,x", "k: [a b]", "k: {a b}", "k: x,",
    "[a, b]", "{a: b}", "a", "1", "k: 'a' b", 'k: "a" b', "k: [a]b", "null: 1", "1: x", "k: [1, 2]: 3", "k: a]",
    "k: a}", "- k: v", "  k2: v2", " k3: v", "", "   ", "k: v\r", "'a:b': c", "k: ''", "k: a'b", "k: 'a\n\n  b'",
    "k: [a,\n  b]", "k: {a: 1,\n  b: 2}", "k: v: w", "k:: v", "k: :v", "k: v:", "k:v", "k: {a: , b: }", "k: [a, , b]",
    "k: {a: #c\n b}", ": v", "k: .", "k: ..", "k: [-]",
]  # fmt: skip


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.exhaustive)])  # 2,000 documents a seed
def test_random_fragments_valid_or_broken(seed: int) -> None:
    chooser = random.Random(seed)
    taken = 0
    for _ in range(2000):
        lines = [chooser.choice(FRAGMENTS) for _ in range(chooser.randint(1, 6))]
        taken += check("\n".join(lines) + chooser.choice(["", "\n"]))
    assert taken > 100  # the fast reader did read a good share of them
