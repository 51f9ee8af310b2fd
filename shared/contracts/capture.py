"""Capture: what the Claude Code hooks record of a session, without the agent's help.

Every hook event of a session is appended to that session's log (one JSON line per
:class:`SessionEvent`); the log is later cut into episodes, and an episode in which failing
runs went green after edits becomes an *auto experience*. Runs are read into a
:class:`RunOutcome` whose failures carry a :class:`Failure` signature: the same failure met
again, in another session or another worktree of the repository, has the same signature.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, get_args

from pydantic import Field

from learning_memory.shared.jobs import Contract, JobSpec
from learning_memory.shared.keys import Queue

RunKind = Literal["test", "build", "lint", "other"]
RUN_KINDS: tuple[str, ...] = get_args(RunKind)
EventType = Literal["prompt", "run", "edit", "read", "commit", "compact", "stop", "end", "injected"]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)
# How an item of the memory reached the agent (an ``injected`` event): the SessionStart brief, a
# prompt's context, a fix hint on a failing run, or a file's lessons when it was first touched.
InjectedVia = Literal["brief", "prompt", "fix_hint", "file_lesson"]
MAX_INJECTED_ITEMS = 20
# A run keeps at most this many failures: the first ones name the problem, the rest repeat it.
MAX_FAILURES = 20
MAX_PROMPT_CHARS = 2_000
MAX_COMMAND_CHARS = 1_000


class Failure(Contract):
    """One failure of a run, normalised so that it reads the same the next time it happens."""

    test_id: str | None = None  # e.g. "tests/test_app.py::test_login", "TestLogin/empty"
    error_type: str | None = None  # e.g. "AssertionError", "E0308", "TS2322", "F401"
    message: str  # numbers, hex ids, temp and home paths, line numbers and times masked
    frame: str | None = None  # innermost frame in the project's own code: "src/app.py:login"
    signature: str  # stable hex digest of what identifies the failure (never line numbers)


class RunOutcome(Contract):
    """What a Bash command was and how it ended."""

    kind: RunKind
    runner: str | None = None  # "pytest", "jest", "cargo", "mypy", ... when recognised
    exit_code: int | None = None
    passed: bool  # exit status 0 and no failure counted
    tests_passed: int | None = None
    tests_failed: int | None = None
    failures: list[Failure] = Field(default_factory=list, max_length=MAX_FAILURES)
    # Output no parser understood: its last error line, normalised (never a guessed parse).
    last_error: str | None = None


class LineRange(Contract):
    start: int = Field(ge=1)  # 1-based, inclusive, in the file as edited
    end: int = Field(ge=1)


class SessionEvent(Contract):
    """One line of a session log. ``id`` is unique within the session (Claude Code's
    ``tool_use_id`` when there is one): a hook delivered twice is recorded once."""

    id: str
    session_id: str
    type: EventType
    at: datetime
    project: str  # the repository's identity, the same in every clone and worktree
    worktree: str  # the folder of the working tree the session ran in
    branch: str | None = None
    prompt: str | None = None  # prompt
    command: str | None = None  # run
    run: RunOutcome | None = None  # run
    file: str | None = None  # edit, read: relative to the worktree when inside it
    lines: list[LineRange] = Field(default_factory=list)  # edit: changed lines, when known
    head: str | None = None  # commit: the new HEAD
    previous_head: str | None = None  # commit: the HEAD before
    # The agent's active GHAP entry when the event happened: an episode inside one is that
    # entry's evidence, not an auto experience of its own.
    ghap_id: str | None = None
    # injected: the context ids put in front of the agent (``exp:<id>``, ``val:<id>``, ``mem:<id>``),
    # so that the episode that followed can say whether they helped.
    items: list[str] = Field(default_factory=list, max_length=MAX_INJECTED_ITEMS)
    via: InjectedVia | None = None


# --- jobs --------------------------------------------------------------------------


class MineSessionRequest(Contract):
    """Cut a session's log into episodes and keep what they taught (idempotent: mining the same
    log again stores nothing twice)."""

    log_path: str
    session_id: str
    project: str


class MineSessionResponse(Contract):
    episodes: int
    stored: int  # new auto experiences
    merged: int  # episodes that strengthened an auto experience already kept
    absorbed: int  # episodes kept as evidence on an active GHAP entry instead


MINE_SESSION: JobSpec[MineSessionRequest, MineSessionResponse] = JobSpec(
    "mine_session",
    MineSessionRequest,
    MineSessionResponse,
    Queue.BATCH,
    timeout_s=300,
)
