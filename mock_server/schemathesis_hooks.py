"""Schemathesis hooks: teach it the `br-document` string format (CPF or CNPJ).

Load with `SCHEMATHESIS_HOOKS=mock_server.schemathesis_hooks st run ...`, or
import it from pytest before building the schema. Needs the `schemathesis` extra:
`pip install 'pix-limits-mock-server[schemathesis]'`.

Only generation learns the format. Schemathesis 4.32.5 validates responses
with `jsonschema_rs`, passing no custom format checkers and leaving unknown
formats ignored, and offers no public API to add one; so in responses
`br-document` is not checked. Pair the format with
`pattern: DOCUMENT_PATTERN` in the schema to have at least the layout checked.
"""

from __future__ import annotations

import re
from typing import Any

# schemathesis (and its hypothesis) are an extra, not a dependency of the server: say what to install.
try:
    import schemathesis
    from hypothesis import strategies as st
except ImportError as missing:
    raise ImportError(
        f"mock_server.schemathesis_hooks needs schemathesis ({missing.name} is not installed): "
        "pip install 'pix-limits-mock-server[schemathesis]'",
        name=missing.name,
    ) from missing

from mock_server.domain.documents import (
    DOCUMENT_PATTERN,
    generate_cnpj,
    generate_cpf,
    is_valid_document,
    with_valid_check_digits,
)

FORMAT_NAME = "br-document"


def br_documents() -> st.SearchStrategy[str]:
    """Valid CPFs and CNPJs in both layouts, alphanumeric CNPJs included."""
    # Hypothesis drives these `Random`s from its own choice sequence, so a
    # failing document shrinks towards the smallest number like any other draw.
    rngs = st.randoms(use_true_random=False)
    cpfs = st.builds(generate_cpf, rngs, st.booleans())
    cnpjs = st.builds(generate_cnpj, rngs, st.booleans(), st.booleans())
    return st.one_of(cpfs, cnpjs)


def register() -> None:
    """Register `br-document` with Schemathesis; repeating it replaces the same entry."""
    schemathesis.openapi.format(FORMAT_NAME, br_documents())


_LAYOUT = re.compile(DOCUMENT_PATTERN)


@schemathesis.hook
def before_call(context: schemathesis.HookContext, case: schemathesis.Case[Any], kwargs: dict[str, Any]) -> None:
    """In positive cases, give a layout-only document number valid check digits.

    Schemathesis' coverage phase builds a string that has both `pattern` and a custom `format` from the
    pattern alone (4.32.5), so it sends e.g. `000.000.000-00` as "valid" data, which the server rightly
    rejects. Negative cases are left alone: an invalid number is what they are for.
    """
    meta = case.meta
    body = case.body
    if meta is None or not meta.generation.mode.is_positive or not isinstance(body, dict):
        return
    value = body.get("document_number")
    if isinstance(value, str) and _LAYOUT.fullmatch(value) and not is_valid_document(value):
        body["document_number"] = with_valid_check_digits(value)


register()
