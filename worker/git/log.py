"""One streaming pass of ``git log --numstat -z``, parsed into commits with their per-file stats.

Every question the git tools answer is one such pass (history of a file, churn over a window,
authorship, the commits to index): never one diff per commit. The output is read as bytes and
decoded leniently, since a commit message need not be UTF-8 (git re-encodes messages that declare
their encoding; the rest come as they were written).

Format: each commit starts with RS (0x1e); its fields are separated by US (0x1f), the message
last, then NUL. ``-z`` ends each numstat entry with NUL, and writes a rename as
``ins<TAB>del<TAB><NUL>old<NUL>new<NUL>``; a binary file has ``-`` for both counts.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from git import Repo

_RS, _US = b"\x1e", b"\x1f"
LOG_FORMAT = "--format=%x1e%H%x1f%P%x1f%an%x1f%ae%x1f%at%x1f%B%x1f"
READ_CHUNK = 1 << 16


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


@dataclass(frozen=True)
class FileStat:
    path: str
    insertions: int
    deletions: int
    binary: bool = False
    old_path: str | None = None  # set when git saw a rename (or copy) into ``path``


@dataclass
class Commit:
    sha: str
    parents: tuple[str, ...]
    author: str
    author_email: str
    timestamp: int  # author date, seconds since the epoch
    message: str
    files: list[FileStat] = field(default_factory=list)

    @property
    def when(self) -> datetime:
        return datetime.fromtimestamp(self.timestamp, UTC)

    @property
    def insertions(self) -> int:
        return sum(stat.insertions for stat in self.files)

    @property
    def deletions(self) -> int:
        return sum(stat.deletions for stat in self.files)


def _count(raw: bytes) -> int:
    return 0 if raw == b"-" else int(raw)


def parse_stats(raw: bytes) -> list[FileStat]:
    tokens = raw.lstrip(b"\n").split(b"\0")
    stats: list[FileStat] = []
    i = 0
    while i < len(tokens):
        token = tokens[i].lstrip(b"\n")
        i += 1
        if not token:
            continue
        added, deleted, path = token.split(b"\t", 2)
        binary = added == b"-" and deleted == b"-"
        if path:
            stats.append(FileStat(decode(path), _count(added), _count(deleted), binary))
            continue
        old, new = tokens[i], tokens[i + 1]
        i += 2
        stats.append(FileStat(decode(new), _count(added), _count(deleted), binary, old_path=decode(old)))
    return stats


def parse_record(record: bytes) -> Commit:
    sha, parents, author, email, timestamp, rest = record.split(_US, 5)
    message, _, stats = rest.partition(_US + b"\0")
    return Commit(
        sha=decode(sha),
        parents=tuple(decode(parents).split()),
        author=decode(author),
        author_email=decode(email),
        timestamp=int(timestamp),
        message=decode(message).strip(),
        files=parse_stats(stats),
    )


def parse_stream(chunks: Iterator[bytes]) -> Iterator[Commit]:
    """Commits from ``git log`` output arriving in arbitrary chunks."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        records = pending.split(_RS)
        pending = records.pop()  # may be incomplete: wait for the next RS or the end
        for record in records:
            if record:
                yield parse_record(record)
    if pending:
        yield parse_record(pending)


def iter_log(repo: Repo, *args: str) -> Generator[Commit, None, None]:
    """Stream ``git log --numstat -z <args>``; the git process is reaped whatever the caller does.

    A failing git (a bad revision, say) raises ``git.GitCommandError`` once its output is read.
    """
    from git import GitCommandError

    proc = repo.git.log("-z", "--numstat", LOG_FORMAT, *args, as_process=True)
    stdout = proc.proc.stdout
    assert stdout is not None

    def chunks() -> Iterator[bytes]:
        while chunk := stdout.read(READ_CHUNK):
            yield chunk

    finished = False
    try:
        yield from parse_stream(chunks())
        finished = True
    finally:
        if not finished:
            proc.proc.kill()
        stderr = proc.proc.stderr.read() if proc.proc.stderr is not None else b""
        code = proc.proc.wait()
        if finished and code != 0:
            raise GitCommandError(["git", "log", *args], code, stderr)
