"""A generated repository with a long history, written in one ``git fast-import`` stream.

Commits have varied, realistic messages (so search has something to rank), a dozen authors,
dates spread evenly over the last two years, and change 1-4 files each; a fifth of them add a
file, a few rename one, and some files are binary. Deterministic for a given seed.
"""

from __future__ import annotations

import random
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAY = 24 * 3600
AUTHORS = [
    (f"Developer {name}", f"{name.lower()}@example.com")
    for name in (
        "Ada",
        "Brian",
        "Chen",
        "Dana",
        "Emeka",
        "Fatima",
        "Goran",
        "Hiro",
        "Ines",
        "Jonas",
        "Kavya",
        "Luis",
    )
]
VERBS = ["Fix", "Add", "Refactor", "Speed up", "Document", "Test", "Remove", "Simplify", "Harden", "Log"]
TOPICS = [
    "retry with exponential backoff in the HTTP client",
    "race condition in the cache invalidation",
    "pagination off-by-one in the list endpoint",
    "memory leak when closing database connections",
    "timezone handling of scheduled jobs",
    "password hashing parameters",
    "CSV export of large reports",
    "websocket reconnection after network loss",
    "configuration loading from environment variables",
    "rate limiting of the public API",
    "image thumbnail generation",
    "search ranking of exact matches",
    "unicode normalisation of user names",
    "graceful shutdown of background workers",
    "feature flag evaluation",
    "audit log retention",
]
MODULES = ["api", "core", "storage", "auth", "jobs", "web", "search", "billing", "export", "util"]


@dataclass
class _State:
    rng: random.Random
    files: dict[str, list[str]] = field(default_factory=dict)
    binary: set[str] = field(default_factory=set)
    next_file: int = 0


def _new_path(state: _State) -> str:
    n = state.next_file
    state.next_file += 1
    module = MODULES[n % len(MODULES)]
    return f"src/{module}/part_{n:05d}.py" if n % 25 else f"assets/{module}/image_{n:05d}.bin"


def _data(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


def _modify(state: _State, path: str, commit_no: int) -> bytes:
    if path in state.binary or path.endswith(".bin"):
        state.binary.add(path)
        blob = bytes(state.rng.randrange(256) for _ in range(64)) + b"\x00" + str(commit_no).encode()
        return b"M 100644 inline " + path.encode() + b"\n" + _data(blob)
    lines = state.files.setdefault(path, [])
    rng = state.rng
    for _ in range(rng.randint(1, 6)):
        if lines and rng.random() < 0.4:
            lines[rng.randrange(len(lines))] = (
                f"value_{commit_no}_{rng.randrange(10**6)} = {rng.random():.6f}"
            )
        else:
            lines.insert(rng.randint(0, len(lines)), f"def step_{commit_no}_{rng.randrange(10**6)}(): pass")
    if len(lines) > 80:
        del lines[: rng.randint(1, 10)]
    return b"M 100644 inline " + path.encode() + b"\n" + _data(("\n".join(lines) + "\n").encode())


def _commit(state: _State, n: int, when: int, parent: str | None, initial_files: int) -> bytes:
    rng = state.rng
    name, email = AUTHORS[rng.randrange(len(AUTHORS))]
    message = f"{rng.choice(VERBS)} {rng.choice(TOPICS)} ({rng.choice(MODULES)}, change {n})\n"
    if rng.random() < 0.3:
        message += f"\nThe {rng.choice(MODULES)} module needed this after review {rng.randrange(1000)}.\n"
    ops: list[bytes] = []
    if not state.files and not state.binary:
        for _ in range(initial_files):
            ops.append(_modify(state, _new_path(state), n))
    elif rng.random() < 0.2:
        ops.append(_modify(state, _new_path(state), n))
    else:
        known = sorted(set(state.files) | state.binary)
        for path in rng.sample(known, min(len(known), rng.randint(1, 4))):
            if rng.random() < 0.02 and path in state.files:
                new = path.replace(".py", f"_v{n}.py")
                state.files[new] = state.files.pop(path)
                ops.append(b"D " + path.encode() + b"\n")
                ops.append(_modify(state, new, n))
            else:
                ops.append(_modify(state, path, n))
    ident = f"{name} <{email}> {when} +0000".encode()
    head = [
        b"commit refs/heads/main\n",
        b"mark :%d\n" % (n + 1),
        b"author " + ident + b"\n",
        b"committer " + ident + b"\n",
        _data(message.encode()),
    ]
    if parent:
        head.append(b"from " + parent.encode() + b"\n")
    return b"".join(head) + b"".join(ops) + b"\n"


def generate(root: Path, commits: int, *, initial_files: int = 200, days: int = 730, seed: int = 7) -> Path:
    """A repository at ``root`` with ``commits`` commits on ``main``, the last one about now."""
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    state = _State(random.Random(seed))
    now = int(time.time())
    start = now - days * DAY
    stream = [
        _commit(
            state, n, start + (now - start) * n // max(1, commits - 1), f":{n}" if n else None, initial_files
        )
        for n in range(commits)
    ]
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=b"".join(stream), check=True)
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=root, check=True)
    return root


def append(root: Path, commits: int, *, seed: int = 11) -> None:
    """``commits`` more commits on ``main``, changing files that exist (as a day's work would)."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, check=True)
    tracked = subprocess.run(["git", "ls-files", "src"], cwd=root, capture_output=True, check=True)
    state = _State(random.Random(seed))
    for path in tracked.stdout.decode().split():
        state.files[path] = (root / path).read_text().splitlines()
    now = int(time.time())
    parent = head.stdout.decode().strip()
    stream = []
    for n in range(commits):
        stream.append(_commit(state, 10**6 + n, now + n, parent if n == 0 else f":{10**6 + n}", 0))
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=b"".join(stream), check=True)
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=root, check=True)


def touched_files(root: Path) -> int:
    out = subprocess.run(
        ["git", "log", "--format=", "--name-only"], cwd=root, capture_output=True, check=True
    ).stdout
    return len({line for line in out.decode().splitlines() if line})
