"""Which files of a directory are worth indexing.

Inside a git work tree git decides what belongs to the project (``.gitignore``, the global
excludes, ``.git/info/exclude``): tracked files plus untracked ones that are not ignored. Elsewhere
the tree is walked. Either way the same rules then drop what is not hand-written source in a
language we parse: dependency and build folders, hidden folders, big, binary and minified files.
Blocking (subprocess, stat, reads): callers run :func:`discover` in a thread.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from learning_memory.shared.contracts.code import Language
from learning_memory.shared.log import get_logger
from learning_memory.worker.code.index import parser

log = get_logger(__name__)

SKIP_DIRS = frozenset(
    {
        "node_modules",
        ".venv",
        "venv",
        "env",
        "dist",
        "build",
        "target",
        ".git",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".idea",
        ".gradle",
        ".next",
        "vendor",
        "third_party",
        "site-packages",
    }
)
MAX_FILE_BYTES = 1_000_000
BINARY_SNIFF_BYTES = 8 * 1024
MINIFIED_SNIFF_BYTES = 32 * 1024
MAX_LINE_CHARS = 1_000
# Hand-written JavaScript and CSS rarely has a 1,000-character line; bundles are one long line.
MINIFIABLE_SUFFIXES = frozenset({".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".css", ".scss", ".less"})
MINIFIED_MARKERS = (".min.", "-min.", ".bundle.")
GIT_TIMEOUT_S = 120

LanguageOf = Callable[[PurePosixPath], Language | None]


@dataclass
class Discovery:
    files: list[PurePosixPath]  # relative to the root, sorted
    skipped: int  # files seen and left out (files inside pruned folders are not walked, so not counted)
    git: bool = False  # whether git listed the files


def discover(root: Path, recursive: bool = True, *, language_of: LanguageOf | None = None) -> Discovery:
    """The source files under ``root`` (relative, "/"-separated) and how many files were skipped;
    ``language_of`` defaults to the parser's (looked up at call time)."""
    language_of = language_of or parser.language_for
    base = root.resolve()
    listed = _git_files(base, recursive)
    candidates = listed if listed is not None else _walk(base, recursive)
    files: list[PurePosixPath] = []
    skipped = 0
    for rel in candidates:
        if _wanted(base, rel, language_of):
            files.append(rel)
        else:
            skipped += 1
    files.sort()
    log.info("code_discovered", root=str(base), files=len(files), skipped=skipped, git=listed is not None)
    return Discovery(files=files, skipped=skipped, git=listed is not None)


def discover_one(root: Path, rel: PurePosixPath, recursive: bool = True) -> bool:
    """Whether :func:`discover` would list ``rel`` (relative to ``root``): the same rules, without
    listing the tree, for re-indexing one edited file."""
    base = root.resolve()
    if not recursive and len(rel.parts) != 1:
        return False
    if not _wanted(base, rel, parser.language_for):
        return False
    try:
        # Exit 0: ignored. Outside a work tree git fails (128), and nothing is ignored.
        ignored = subprocess.run(
            ["git", "-C", str(base), "check-ignore", "-q", "--", str(rel)],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return True
    return ignored.returncode != 0


def _git_files(base: Path, recursive: bool) -> list[PurePosixPath] | None:
    """What git lists under ``base``, or None if ``base`` is not in a work tree (or git is missing)."""
    try:
        inside = subprocess.run(
            ["git", "-C", str(base), "rev-parse", "--show-toplevel"],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
        if inside.returncode != 0:
            return None
        # A folder git ignores (a virtualenv's package, say) was asked for by name: git would list
        # nothing in it, so walk it like a folder outside git.
        ignored = subprocess.run(
            ["git", "-C", str(base), "check-ignore", "-q", "."],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
        if ignored.returncode == 0:
            return None
        # Run from base, git lists only what is under it, relative to it; -z: no quoting of odd names.
        listing = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=base,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("code_git_listing_failed", root=str(base), error=str(exc))
        return None
    if listing.returncode != 0:
        log.warning("code_git_listing_failed", root=str(base), error=listing.stderr.decode(errors="replace"))
        return None
    paths: list[PurePosixPath] = []
    # A path both tracked and modified can be listed twice; dict.fromkeys keeps the first.
    for raw in dict.fromkeys(listing.stdout.split(b"\0")):
        if not raw:
            continue
        rel = PurePosixPath(os.fsdecode(raw))
        if recursive or len(rel.parts) == 1:
            paths.append(rel)
    return paths


def _walk(base: Path, recursive: bool) -> list[PurePosixPath]:
    paths: list[PurePosixPath] = []
    # followlinks=False: a symlinked folder is listed in dirnames but never entered.
    for folder, dirnames, filenames in os.walk(base, followlinks=False):
        here = PurePosixPath(Path(folder).relative_to(base).as_posix())
        dirnames[:] = sorted(d for d in dirnames if recursive and not _skip_dir(d))
        paths.extend(here / name for name in filenames)
    return paths


def _skip_dir(name: str) -> bool:
    return name in SKIP_DIRS or name.startswith(".")


def _wanted(base: Path, rel: PurePosixPath, language_of: LanguageOf) -> bool:
    if any(_skip_dir(part) for part in rel.parts[:-1]) or language_of(rel) is None:
        return False
    path = base / rel
    try:
        # Symlinks (files or folders on the way) must not lead out of the root.
        if not path.resolve().is_relative_to(base) or not path.is_file():
            return False
        if path.stat().st_size > MAX_FILE_BYTES:
            return False
        with path.open("rb") as handle:
            head = handle.read(MINIFIED_SNIFF_BYTES)
    except (OSError, RuntimeError):  # unreadable, vanished, or a symlink loop
        return False
    if b"\0" in head[:BINARY_SNIFF_BYTES]:
        return False
    return not _minified(rel, head)


def _minified(rel: PurePosixPath, head: bytes) -> bool:
    if rel.suffix.lower() not in MINIFIABLE_SUFFIXES:
        return False
    if any(marker in rel.name.lower() for marker in MINIFIED_MARKERS):
        return True
    lines = head.split(b"\n")
    if len(head) == MINIFIED_SNIFF_BYTES:
        lines = lines[:-1]  # the last line is cut by the sniff and may be longer in truth; judge the rest
        if not lines:
            return True  # 32 KB without a newline
    return any(len(line) > MAX_LINE_CHARS for line in lines)
