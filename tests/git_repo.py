"""A small repository with the history git tools must get right, built with the git command line:
several authors, a rename, a binary file, a merge, a path with a space, and two non-UTF-8
messages (one that declares its encoding, one that does not). Also the git command line's own
answers, parsed here independently of the worker's parser, for the tests to compare with."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

DAY = 24 * 3600
AUTHORS = {
    "alice": ("Alice Liddell", "alice@example.com"),
    "bob": ("Bob Builder", "bob@example.com"),
    "carol": ("Carol Danvers", "carol@example.com"),
    "dave": ("Dave Lister", "dave@example.com"),
    "erin": ("Erin Brockovich", "erin@example.com"),
}
RETRY_MESSAGE = "Add retry with exponential backoff to the HTTP client"
LATIN1_MESSAGE = "Corrigé le défaut d'encodage des accents"


def git(root: Path, *args: str, who: str = "alice", days_ago: float = 0, stdin: bytes | None = None) -> bytes:
    name, email = AUTHORS[who]
    moment = f"@{int(time.time() - days_ago * DAY)} +0000"
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_AUTHOR_DATE": moment,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
        "GIT_COMMITTER_DATE": moment,
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(root.parent),
    }
    done = subprocess.run(["git", *args], cwd=root, env=env, input=stdin, capture_output=True, check=True)
    return done.stdout


def commit(
    root: Path, message: str | bytes, *, who: str, days_ago: float, encoding: str | None = None
) -> str:
    raw = message.encode() if isinstance(message, str) else message
    args = ["-c", f"i18n.commitEncoding={encoding}"] if encoding else []
    git(root, "add", "-A", who=who, days_ago=days_ago)
    git(root, *args, "commit", "-q", "-F", "-", who=who, days_ago=days_ago, stdin=raw)
    return git(root, "rev-parse", "HEAD").decode().strip()


def raw_commit(root: Path, message: bytes, *, who: str, days_ago: float) -> str:
    """A commit whose message bytes are kept as given: ``git commit`` would re-encode invalid
    UTF-8 as Latin-1, so the object is written by hand."""
    git(root, "add", "-A")
    tree = git(root, "write-tree").decode().strip()
    parent = git(root, "rev-parse", "HEAD").decode().strip()
    name, email = AUTHORS[who]
    stamp = f"{name} <{email}> {int(time.time() - days_ago * DAY)} +0000"
    body = f"tree {tree}\nparent {parent}\nauthor {stamp}\ncommitter {stamp}\n\n".encode() + message
    sha = git(root, "hash-object", "-t", "commit", "-w", "--stdin", stdin=body).decode().strip()
    git(root, "update-ref", "HEAD", sha)
    return sha


def write(root: Path, rel: str, text: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)


def lines(n: int, tag: str) -> str:
    return "".join(f"{tag} line {i}\n" for i in range(n))


def build_repo(root: Path) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    write(root, "src/app.py", lines(10, "app"))
    write(root, "README.md", "# Demo\n")
    write(root, "docs/user guide.md", "How to use it.\n")
    commit(root, "Initial commit: the app skeleton and its readme", who="alice", days_ago=200)

    write(root, "src/app.py", lines(9, "app") + "more\nand more\nstill more\n")
    write(root, "assets/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00binary\x00data")
    commit(root, "Parse the configuration file before start-up\n\nAlso a logo.", who="bob", days_ago=150)

    git(root, "mv", "src/app.py", "src/main.py")
    write(root, "src/main.py", (root / "src/main.py").read_text() + "renamed\n")
    commit(root, "Rename the app module to main", who="alice", days_ago=40)

    git(root, "checkout", "-q", "-b", "feature")
    write(root, "src/util.py", lines(5, "util"))
    write(root, "README.md", "# Demo\n\nWith utilities.\n")
    commit(root, "Add string utilities for slug generation", who="carol", days_ago=30)
    git(root, "checkout", "-q", "main")
    write(root, "src/main.py", (root / "src/main.py").read_text().replace("app line 3", "app line three"))
    write(root, "assets/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00other\x00pixels")
    commit(root, "Fix the off-by-one in pagination and refresh the logo", who="bob", days_ago=25)
    git(root, "merge", "-q", "--no-ff", "feature", "-m", "Merge branch 'feature'", who="alice", days_ago=20)

    write(root, "src/main.py", (root / "src/main.py").read_text() + "accent handling\n")
    commit(root, LATIN1_MESSAGE.encode("latin-1"), who="dave", days_ago=10, encoding="ISO-8859-1")

    write(root, "src/util.py", (root / "src/util.py").read_text() + "caf\n")
    raw_commit(root, b"Fix caf\xe9 menu parser crash on empty input\n", who="erin", days_ago=5)

    write(root, "src/http.py", lines(20, "http"))
    write(root, "docs/user guide.md", "How to use it.\nRetries are automatic.\n")
    commit(root, RETRY_MESSAGE, who="alice", days_ago=2)
    return root


# --- the git command line's answers ------------------------------------------------------------


@dataclass
class CliCommit:
    sha: str
    author: str
    email: str
    timestamp: int
    stats: list[tuple[str, int, int]]  # (path after the commit, insertions, deletions)


def _new_path(raw: str) -> str:
    """``src/{app.py => main.py}`` or ``a => b`` (numstat's rename notation) -> the new path."""
    if "{" in raw and " => " in raw:
        head, rest = raw.split("{", 1)
        inner, tail = rest.split("}", 1)
        return (head + inner.split(" => ")[1] + tail).replace("//", "/")
    return raw.split(" => ")[-1]


def _count(value: str) -> int:
    return 0 if value == "-" else int(value)


def cli_log(root: Path, *args: str) -> list[CliCommit]:
    """``git log --numstat`` without -z, parsed line by line."""
    out = git(root, "log", "--numstat", "--format=@@%H|%an|%ae|%at", *args).decode("utf-8", "replace")
    commits: list[CliCommit] = []
    for line in out.splitlines():
        if line.startswith("@@"):
            sha, author, email, at = line[2:].split("|")
            commits.append(CliCommit(sha, author, email, int(at), []))
        elif line.strip():
            added, deleted, path = line.split("\t", 2)
            path = path.strip('"')
            commits[-1].stats.append((_new_path(path), _count(added), _count(deleted)))
    return commits


# A repository whose one test fails (cart.py subtracts one), for capture's tests: a fix in one
# worktree should answer the same failure in the other.
CART_BROKEN = "def total(prices):\n    return sum(prices) - 1\n"
CART_FIXED = "def total(prices):\n    return sum(prices)\n"
CART_TEST = "from cart import total\n\n\ndef test_total():\n    assert total([2, 3]) == 5\n"


def shop_worktrees(root: Path) -> tuple[Path, Path]:
    """``root/shop`` (branch main) and ``root/shop-feature`` (branch feature), both still broken."""
    main = root / "shop"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    git(main, "config", "user.name", "Agent")
    git(main, "config", "user.email", "agent@example.com")
    (main / "cart.py").write_text(CART_BROKEN)
    (main / "test_cart.py").write_text(CART_TEST)
    git(main, "add", ".")
    git(main, "commit", "-q", "-m", "Cart totals")
    second = root / "shop-feature"
    git(main, "worktree", "add", "-q", str(second), "-b", "feature")
    return main, second
