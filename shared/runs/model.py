"""What a parser reads from a run's output, before it is normalised into the capture contract."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

# Folders that hold other people's code: a frame in them is never the project's own.
_LIBRARY_PARTS = frozenset(
    {
        "site-packages",
        "dist-packages",
        "node_modules",
        "vendor",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".cargo",
        ".rustup",
        ".gradle",
        ".m2",
        ".pyenv",
        ".rbenv",
        ".nvm",
        ".asdf",
        ".mix",
        "gems",
        "deps",
        "_build",
    }
)
_SYSTEM_PREFIXES = ("/usr/", "/opt/", "/rustc/", "/Library/", "/System/", "/nix/", "/Applications/", "/snap/")


@dataclass(frozen=True, slots=True)
class Frame:
    """A place in the code a failure went through; ``function`` when the output names it."""

    path: str
    function: str | None = None


@dataclass(slots=True)
class Found:
    """One failure as a parser reads it: the message still raw, the frames outermost first."""

    test_id: str | None
    error_type: str | None
    message: str
    frames: list[Frame] = field(default_factory=list)
    family: str | None = None  # when not the parse's own (javac's errors read through maven)


@dataclass(slots=True)
class Parse:
    """What one parser understood of an output. ``family`` names the output format: the same
    failure read through another command (``npm test`` running jest) keeps its signature."""

    runner: str
    found: list[Found] = field(default_factory=list)
    passed: int | None = None
    failed: int | None = None
    family: str = ""

    def __post_init__(self) -> None:
        if not self.family:
            self.family = self.runner


def _absolute(path: str) -> bool:
    return path.startswith("/") or (len(path) > 2 and path[1] == ":" and path[2] == "/")


def relative(path: str, worktree: str | None) -> str | None:
    """``path`` relative to the checkout, or None when it is someone else's code (a library, the
    standard library, the runtime) or outside the checkout."""
    path = path.strip().removeprefix("file://").replace("\\", "/")
    if not path or path.startswith(("<", "node:")):
        return None
    if worktree:
        root = worktree.replace("\\", "/").rstrip("/")
        if path.startswith(root + "/"):
            path = path[len(root) + 1 :]
        elif _absolute(path):
            return None
    elif path.startswith(_SYSTEM_PREFIXES):
        return None
    if "." in path:
        path = posixpath.normpath(path)
    if _LIBRARY_PARTS.intersection(path.split("/")) or "pkg/mod/" in path:
        return None
    return path


def own_frame(frames: list[Frame], worktree: str | None) -> str | None:
    """The innermost frame in the project's own code, as "path:function" (or "path"); never a line
    number, which moves with every edit above it."""
    for frame in reversed(frames):
        path = relative(frame.path, worktree)
        if path is not None:
            return f"{path}:{frame.function}" if frame.function else path
    return None


def last_match(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The last match of ``pattern`` (a runner's closing summary comes after any it printed before)."""
    found = None
    for found in pattern.finditer(text):  # noqa: B007 - the last one is wanted
        pass
    return found


def mentions(text: str, *words: str) -> bool:
    """Whether ``text`` holds one of ``words``: a substring test costs little next to a regex scan, so
    each parser asks it first and leaves the output of other tools at once."""
    return any(word in text for word in words)
