"""Masking what changes from one run to the next, so that a message reads the same every time.

Numbers, hex ids and addresses, temporary and home folders, the checkout's own path, times and
durations differ between two runs of the same failure (and between two clones of one
repository); masked, the message names the failure and nothing else. Every pattern here is
linear (no nested repetition): the hooks call this on every Bash command.
"""

from __future__ import annotations

import re

MAX_MESSAGE_CHARS = 300

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
# Paths end at whitespace, quotes, brackets and the separators that follow a path in a message.
_PATH_END = r"[^\s'\"()\[\]<>,;`]*"
_TEMP = re.compile(
    r"(?:/private)?/var/folders/"
    + _PATH_END
    + r"|(?<![\w.])/(?:tmp|dev/shm)/"
    + _PATH_END
    + r"|(?<![\w/])[A-Za-z]:\\Users\\[^\\\s]+\\AppData\\Local\\Temp\\"
    + _PATH_END
    + r"|\bpytest-of-[\w.-]+/"
    + _PATH_END
)
_HOME = re.compile(
    r"(?<![\w.])(?:/home/[^/\s'\"]+|/Users/[^/\s'\"]+|/root(?![\w.-]))|[A-Za-z]:\\Users\\[^\\\s'\"]+"
)
_TIMESTAMP = re.compile(
    r"\b\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?\b"
    r"|\b\d\d:\d\d:\d\d(?:[.,]\d+)?\b"
)
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
_HEX_WORD = re.compile(r"\b[0-9a-fA-F]{7,64}\b")
_DURATION = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|µs|us|ns|s|sec|secs|seconds?|min|mins|minutes?)(?![\w])"
)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)*(?![A-Za-z_\d])")
_SPACE = re.compile(r"\s+")


def strip_ansi(text: str) -> str:
    """Colour and cursor escapes removed (jest, cargo and maven colour even when piped)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def _hex_word(found: re.Match[str]) -> str:
    # A git sha or a build hash mixes digits and letters; a plain word ("deadbeef") or a plain
    # number is left to the other rules.
    word = found.group(0)
    if any(c.isdigit() for c in word) and any(c.isalpha() for c in word):
        return "<hex>"
    return word


def mask_paths(text: str, worktree: str | None = None) -> str:
    """The checkout's prefix dropped (its paths read as relative ones), temporary folders and home
    folders masked: the same file reads the same in every clone and on every machine."""
    if worktree:
        root = worktree.rstrip("/\\")
        if root and root in text:
            text = text.replace(root + "/", "").replace(root + "\\", "").replace(root, ".")
    if "/" in text or "\\" in text:
        text = _TEMP.sub("<tmp>", text)
        text = _HOME.sub("~", text)
    return text


def normalise(message: str, *, worktree: str | None = None) -> str:
    """``message`` on one line with everything run-specific masked, at most 300 characters."""
    text = mask_paths(strip_ansi(message), worktree)
    text = _TIMESTAMP.sub("<time>", text)
    text = _UUID.sub("<uuid>", text)
    text = _ADDRESS.sub("0x<hex>", text)
    text = _HEX_WORD.sub(_hex_word, text)
    text = _DURATION.sub("<dur>", text)
    text = _NUMBER.sub("<n>", text)
    text = _SPACE.sub(" ", text).strip()
    return text[:MAX_MESSAGE_CHARS].rstrip()
