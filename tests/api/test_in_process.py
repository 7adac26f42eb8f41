"""The docs' in-process recipe (issue 11, docs/from-tests.md): create_app(Settings(...)) behind httpx's
ASGITransport, run as written."""

from __future__ import annotations

import asyncio
import re
import textwrap
from pathlib import Path
from typing import Any

RECIPES = Path(__file__).resolve().parents[2] / "docs" / "from-tests.md"


def readme_block() -> str:
    text = RECIPES.read_text(encoding="utf-8")
    match = re.search(
        r"^#+ In-process, without pytest[^\n]*\n.*?```python\n(?P<code>.*?)```", text, re.DOTALL | re.MULTILINE
    )
    assert match, "docs/from-tests.md: the in-process block is gone"
    return match["code"]


def test_the_readme_block_answers_from_the_app_with_no_socket():
    source = "async def main():\n" + textwrap.indent(readme_block(), "    ") + "    return event, app\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, "docs/from-tests.md", "exec"), namespace)
    event, app = asyncio.run(namespace["main"]())
    assert event.status_code == 200
    assert len(event.json()["event_conciliation_list"]) == 3  # the payments scenario's first event
    # the request went through the session URL, to session t1 only
    assert app.state.sessions.get("t1").journal.entries()[0]["path"].startswith("/__session/t1/")


def test_the_observer_block_sees_the_lookup_it_prints(capsys):
    text = RECIPES.read_text(encoding="utf-8")
    match = re.search(
        r"^#+ Seeing every request whole[^\n]*\n.*?```python\n(?P<code>.*?)```", text, re.DOTALL | re.MULTILINE
    )
    assert match, "docs/from-tests.md: the turn observer block is gone"
    exec(compile(match["code"], "docs/from-tests.md", "exec"), {})
    shown = match["code"].split("print(seen)  # ", 1)[1].strip()
    assert capsys.readouterr().out.strip() == shown == "[('getExtraordinaryEvent', 200)]"
