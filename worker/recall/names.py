"""Exact names a query writes as code: ``test_hook_tools``, ``server/tools/code.py``,
``time.sleep``, ``print()``, ``WouldBlock``, ``LMS_CONTEXT_MIN_SCORE``.

The keyword side splits a name into its words (``test``, ``hook``, ``tools``), each common, so a
note that names the very test ranks with every note about tests and hooks. A person who types a
name as code means the notes holding that name: ``hybrid.rank`` raises them.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[A-Za-z0-9_./-]*[A-Za-z0-9_](?:\(\))?")
_SNAKE = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]")  # test_hook_tools, LMS_CONTEXT_MIN_SCORE
_DOTTED = re.compile(r"[A-Za-z_]{2}[./][A-Za-z_]")  # time.sleep, server/tools, code.py; not e.g.
_CAMEL = re.compile(r"[a-z][A-Z]")  # WouldBlock, IdleConnTimeout


def names_in(query: str) -> list[str]:
    """The names ``query`` writes as code, lower-cased, each once (a call's ``()`` left off)."""
    found: dict[str, None] = {}
    for match in _TOKEN.finditer(query):
        token = match.group().strip("./-")
        called = token.endswith("()")
        token = token.removesuffix("()")
        if called or _SNAKE.search(token) or _DOTTED.search(token) or _CAMEL.search(token):
            if len(token) > 1:
                found[token.lower()] = None
    return list(found)


def held(names: list[str], text: str) -> float:
    """The share of ``names`` that ``text`` holds whole (not inside a longer name)."""
    if not names:
        return 0.0
    lowered = text.lower()
    return sum(bool(_whole(name).search(lowered)) for name in names) / len(names)


def _whole(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")
