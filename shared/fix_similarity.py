"""How close two failures read: the fix index's "close ones" when no fix has the exact signature.

A failure's words are its normalised message and its test id, split into lower-case tokens
(identifiers split at ``_`` and camelCase, so ``user_id`` and ``userId`` read alike). Two failures
are close when their token sets overlap enough (Jaccard). Words every test id of a runner shares
("test", "tests", "py", "spec") are left out: they would make any two failures of one suite close.
"""

from __future__ import annotations

import re

# Two failures of the same error type are close from here on. Set between the labelled pairs of
# tests/unit/test_fix_index.py (CLOSE_PAIRS): the same message in a sibling test, or the same
# compiler error on another name, score 0.6 or more; another key or another assertion in the same
# test, or one message in unrelated tests, 0.5 or less.
CLOSE = 0.6
_WORD = re.compile(r"[A-Za-z]+|[0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_UBIQUITOUS = frozenset({"test", "tests", "py", "spec", "js", "ts", "tsx", "go", "rs", "rb", "java"})


def tokens(message: str, test_id: str | None = None) -> frozenset[str]:
    """The words of a failure that tell it apart from others."""
    text = f"{message} {test_id or ''}"
    words = (_CAMEL.sub(" ", word).lower().split() for word in _WORD.findall(text))
    return frozenset(part for group in words for part in group if len(part) > 1 and part not in _UBIQUITOUS)


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two token sets: 1.0 the same words, 0.0 none shared (or no words)."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
