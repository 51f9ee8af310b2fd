"""Anchors of a text an agent wrote (a memory): the repository's files it names, and the
functions or classes of those files it names too.

A path counts only when it is a file of the worktree (relative to its root, or absolute inside
it): "the fixtures live in tests/conftest.py" anchors, "see README" or a URL does not. A name
counts only when one of the named files defines it, so ordinary words never become symbols.
"""

from __future__ import annotations

import re
from pathlib import Path

from learning_memory.shared.contracts.experiences import Anchor
from learning_memory.worker.capture.experience import MAX_ANCHORS
from learning_memory.worker.capture.source_units import Unreadable, read_units

# A path-like word: at least one "/" or a dotted extension; the characters paths are made of.
_PATH = re.compile(r"(?<![\w:/.-])(?:\.{0,2}/)?[\w@+-][\w@+.-]*(?:/[\w@+.-]+)*")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_CALLED = re.compile(r"([A-Za-z_]\w*)\(")
_LINE_SUFFIX = re.compile(r":\d+(?::\d+)?$")
MAX_CANDIDATES = 200  # words checked against the disk: a bound for a long memory full of paths


def _candidates(text: str) -> list[str]:
    found: list[str] = []
    for match in _PATH.finditer(text):
        word = _LINE_SUFFIX.sub("", match.group(0)).rstrip(".,;:")
        if ("/" in word or "." in word.lstrip(".")) and word not in found:
            found.append(word)
        if len(found) >= MAX_CANDIDATES:
            break
    return found


def _repository_file(worktree: Path, word: str) -> str | None:
    """``word`` as a file of the worktree relative to its root, or None."""
    root = worktree.resolve()
    try:
        path = (root / word).resolve() if not word.startswith("/") else Path(word).resolve()
        relative = path.relative_to(root)
    except (OSError, ValueError):  # outside the worktree, or a word the file system refuses
        return None
    if ".git" in relative.parts or not path.is_file():
        return None
    return relative.as_posix()


def _names_method(name: str, words: set[str], called: set[str]) -> bool:
    """A unit named by its last part alone ("refresh" for Session.refresh): only when that part
    cannot be an ordinary word (an underscore or a capital in it) or the text calls it."""
    last = name.rsplit(".", 1)[-1]
    return last in called or (last in words and ("_" in last or last != last.lower()))


def anchors_in_text(text: str, worktree: Path) -> list[Anchor]:
    """The files of ``worktree`` that ``text`` names, each with the units of it the text names
    (their digests as the code is now). Blocking (stats and parses files): off the event loop."""
    files = list(dict.fromkeys(f for f in (_repository_file(worktree, w) for w in _candidates(text)) if f))
    words = set(_IDENTIFIER.findall(text))
    called = set(_CALLED.findall(text))
    anchors: list[Anchor] = []
    for file in files:
        try:
            units = read_units(worktree, file)
        except (Unreadable, OSError):
            units = []
        named = [u for u in units if u.name in words or _names_method(u.name, words, called)]
        anchors += [Anchor(file=file, symbol=u.name, digest=u.digest) for u in named] or [Anchor(file=file)]
    return anchors[:MAX_ANCHORS]
