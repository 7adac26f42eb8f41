"""The admin token rule: `Authorization: Bearer TOKEN`, compared as the UTF-8 bytes both sides mean."""

from __future__ import annotations

import hmac


def bearer_matches(authorization: str | None, token: str) -> bool:
    """Whether the header (as the server decoded it: latin-1, one char per byte) carries `token`.

    The header's bytes are what the client sent, the token's are its UTF-8 encoding (surrogate escapes for
    bytes a non-UTF-8 environment gave): so a non-ASCII token matches a UTF-8 client. Whitespace around
    either is ignored; the CLI refuses a token that is nothing but whitespace."""
    if not authorization:
        return False
    scheme, _, credential = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return False
    expected = token.strip().encode("utf-8", "surrogateescape")
    given = credential.strip().encode("latin-1", "replace")
    return bool(expected) and hmac.compare_digest(given, expected)
