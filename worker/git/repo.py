"""Finding the repository a request names, its HEAD, and paths inside it.

The server sends ``LMS_REPO_PATH`` (absolute); the repository is the one containing it, so a
session started in a subfolder still sees the whole repository, and paths are relative to its
root. Opened repositories are kept per process: opening one walks the folders up to ``.git``.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from git import Repo
from git.exc import GitCommandNotFound, InvalidGitRepositoryError, NoSuchPathError
from git.refs.symbolic import SymbolicReference

from learning_memory.shared.errors import GitError, ValidationError

_OPEN: dict[str, GitRepo] = {}
_OPEN_LOCK = threading.Lock()


@dataclass(frozen=True)
class GitRepo:
    repo: Repo
    root: Path  # the working tree (the git folder for a bare repository), resolved

    @property
    def key(self) -> str:
        """What the index and the watermark know this repository by."""
        return str(self.root)

    def head(self) -> str | None:
        """HEAD's commit, read from the refs (no git process); None before the first commit."""
        try:
            return str(SymbolicReference.dereference_recursive(self.repo, "HEAD"))
        except (ValueError, OSError):
            return None

    def relative(self, raw: str) -> str:
        """``raw`` (relative to the root, or absolute) as a root-relative path; outside is invalid."""
        given = Path(raw)
        absolute = given if given.is_absolute() else self.root / given
        # normpath, not resolve: a file only in history need not exist, and ".." must not escape.
        normal = Path(os.path.normpath(absolute))
        try:
            relative = normal.relative_to(self.root)
        except ValueError:
            try:  # an absolute path through a symlinked folder (e.g. /tmp -> /private/tmp)
                relative = normal.resolve().relative_to(self.root)
            except ValueError:
                raise ValidationError(
                    f"path {raw!r} is outside the repository {self.root}; give a path relative to its root"
                ) from None
        if str(relative) in ("", "."):
            raise ValidationError(f"path {raw!r} is the repository's root; give a file inside it")
        return str(PurePosixPath(*relative.parts))


def open_repo(repo_path: str) -> GitRepo:
    """The repository containing ``repo_path``; GitError naming the path and the setting if none."""
    with _OPEN_LOCK:
        cached = _OPEN.get(repo_path)
    if cached is not None and cached.root.exists():
        return cached
    try:
        repo = Repo(repo_path, search_parent_directories=True)
    except (InvalidGitRepositoryError, NoSuchPathError):
        raise GitError(
            f"no git repository at {repo_path} (LMS_REPO_PATH): the git tools need the server to run "
            "inside a git repository, or LMS_REPO_PATH set to one"
        ) from None
    except GitCommandNotFound:
        raise GitError("the git command is not installed on the worker's machine") from None
    root = Path(repo.working_tree_dir or repo.git_dir).resolve()
    opened = GitRepo(repo, root)
    with _OPEN_LOCK:
        _OPEN[repo_path] = opened
    return opened
