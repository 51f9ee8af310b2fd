"""Which repository a folder belongs to, the same in every clone and git worktree of it.

The identity is the repository's root commit: clones share it, and worktrees share their
common git folder. It costs one ``git`` call per repository per process (then it is cached);
the rest (worktree, branch, HEAD) is read from files on every call, as ``git`` itself would.
A folder outside any repository is its own project.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Standard library only: the SessionStart and SessionEnd commands use it, and must start fast.
GIT_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Place:
    """Where a session works: its repository's identity, its worktree, its git folders."""

    project: str  # "repo-<root commit>" or "dir-<digest of the folder>"
    worktree: Path
    git_dir: Path | None = None  # this worktree's own git folder (HEAD lives here)
    common_dir: Path | None = None  # shared by every worktree (refs, packed-refs)

    @property
    def key(self) -> str:
        """A file-name-safe form of the project, for folders named after it."""
        return self.project


def _git_folders(start: Path) -> tuple[Path, Path, Path] | None:
    """(worktree, git_dir, common_dir) of the repository holding ``start``, by reading files."""
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            git_dir = dot_git
        elif dot_git.is_file():
            try:
                text = dot_git.read_text(encoding="utf-8").strip()
            except OSError:
                return None
            if not text.startswith("gitdir:"):
                return None
            git_dir = (folder / text.removeprefix("gitdir:").strip()).resolve()
        else:
            continue
        common = git_dir
        commondir_file = git_dir / "commondir"
        if commondir_file.is_file():
            try:
                common = (git_dir / commondir_file.read_text(encoding="utf-8").strip()).resolve()
            except OSError:
                return None
        return folder, git_dir, common
    return None


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _root_commit(worktree: Path) -> str | None:
    """The oldest root commit of HEAD's history; None before the first commit."""
    try:
        done = subprocess.run(
            ["git", "rev-list", "--max-parents=0", "HEAD"],
            cwd=worktree,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return None  # no git here: the common git folder stands in
    roots = sorted(done.stdout.split()) if done.returncode == 0 else []
    return roots[0] if roots else None


def _locate(cwd: Path) -> Place:
    found = _git_folders(cwd)
    if found is None:
        return Place(project=f"dir-{_digest(str(cwd))}", worktree=cwd)
    worktree, git_dir, common = found
    root = _root_commit(worktree)
    # Before the first commit the common git folder stands in: worktrees still agree.
    project = f"repo-{root[:16]}" if root else f"git-{_digest(str(common))}"
    return Place(project=project, worktree=worktree, git_dir=git_dir, common_dir=common)


_places: dict[Path, Place] = {}
MAX_PLACES = 1_024


def place_of(cwd: str) -> Place:
    """Where ``cwd`` belongs; cached per folder, since a repository's root commit does not change
    (before the first commit, it is asked again next time)."""
    path = Path(cwd).expanduser()
    with contextlib.suppress(OSError):
        path = path.resolve()
    found = _places.get(path)
    if found is None:
        found = _locate(path)
        if not found.project.startswith("git-"):
            if len(_places) >= MAX_PLACES:
                _places.clear()
            _places[path] = found
    return found


def branch(place: Place) -> str | None:
    head = _read(place.git_dir / "HEAD") if place.git_dir else None
    if head and head.startswith("ref: refs/heads/"):
        return head.removeprefix("ref: refs/heads/")
    return None


def head_commit(place: Place) -> str | None:
    """HEAD's commit id, read from the git folders (loose ref, then packed-refs)."""
    if place.git_dir is None:
        return None
    head = _read(place.git_dir / "HEAD")
    if head is None or not head.startswith("ref: "):
        return head or None  # detached: the id itself
    ref = head.removeprefix("ref: ").strip()
    for folder in (place.git_dir, place.common_dir):
        if folder is not None and (value := _read(folder / ref)):
            return value
    packed = _read(place.common_dir / "packed-refs") if place.common_dir else None
    for line in (packed or "").splitlines():
        sha, _, name = line.partition(" ")
        if name.strip() == ref:
            return sha
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
