"""Cutting a session's events into episodes: a failing run, the edits that followed, how it ended.

Pure and deterministic: events (and what is known of the session's commits) in, episodes out.

An episode opens at a failing test, build or lint run that names its failures, and follows them
through the later runs of the same runner: a failure that a run after edits no longer shows went
away (and stays gone unless a later run shows it again). It ends

- ``confirmed`` at the first green run after edits, keeping what went away and stayed gone (if
  every one of its failures came back later in the session, it is ``falsified`` instead);
- ``falsified`` when its runner's last run in the session is still red after edits;
- ``abandoned`` when the session moved on (a new prompt, or its end) after edits, with no run of
  that runner since.

Dropped: an episode without edits (nothing was tried), one whose green run came with no edit
since its last red run (a flaky rerun), and one still in progress (edits not yet run, nothing
else since). The log is mined again as it grows, so an episode dropped or provisional now is
decided later. An episode run while the agent had a GHAP entry active carries its ``ghap_id``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from learning_memory.shared.contracts.capture import Failure, LineRange, RunKind, SessionEvent
from learning_memory.shared.contracts.experiences import OutcomeStatus
from learning_memory.shared.fix_index import failures_of

MAX_GOAL_CHARS = 200
MAX_COMMANDS = 10
FOLLOWED_KINDS = frozenset({"test", "build", "lint"})
# Fixed, so that an episode's id is the same however often and wherever its log is mined.
EPISODE_NAMESPACE = uuid.UUID("0c7e2b9a-5d41-4f3e-8a60-2f9d3c1b7e54")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    subject: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class Edit:
    file: str
    lines: tuple[LineRange, ...] = ()


@dataclass(frozen=True)
class Fixed:
    """A failure that went away after edits and stayed gone."""

    failure: Failure
    at: datetime  # the run it was gone from
    edits: tuple[Edit, ...]  # made between its first appearance and that run


@dataclass(frozen=True)
class Episode:
    id: str
    session_id: str
    project: str
    worktree: str
    kind: RunKind
    runner: str | None
    outcome: OutcomeStatus
    goal: str
    failures: tuple[Failure, ...]  # the first red run's: what the episode was about
    fixed: tuple[Fixed, ...]
    remaining: tuple[Failure, ...]  # still failing at its end
    edits: tuple[Edit, ...]
    commands: tuple[str, ...]
    runs: tuple[SessionEvent, ...]  # of its runner, the first red one first
    commit: CommitInfo | None
    ghap_id: str | None
    started_at: datetime
    ended_at: datetime

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(edit.file for edit in self.edits))

    @property
    def signatures(self) -> tuple[str, ...]:
        """What it taught about: the failures fixed when confirmed, else those it opened on."""
        chosen = [fix.failure for fix in self.fixed] if self.outcome == "confirmed" else self.failures
        return tuple(sorted({failure.signature for failure in chosen}))


@dataclass
class _Builder:
    first: SessionEvent
    prompt: str | None
    failures: dict[str, Failure]  # every failure met, in order
    appeared: dict[str, int]  # signature -> edits made before it was first met
    present: set[str]
    commands: list[str]
    edits: list[Edit] = field(default_factory=list)
    runs: list[SessionEvent] = field(default_factory=list)
    fixed: dict[str, tuple[datetime, int, int]] = field(default_factory=dict)  # at, edits from, to
    came_back: set[str] = field(default_factory=set)
    edits_at_last_run: int = 0
    ran_after_edits: bool = False
    moved_on: bool = False
    green: SessionEvent | None = None
    awaiting_commit: bool = False
    commit: CommitInfo | None = None
    last_at: datetime | None = None
    seq: int = 0  # the order it opened in

    @classmethod
    def start(cls, event: SessionEvent, failures: list[Failure], prompt: str | None) -> _Builder:
        met = {failure.signature: failure for failure in failures}
        builder = cls(event, prompt, met, dict.fromkeys(met, 0), set(met), [])
        builder.note(event)
        return builder

    @property
    def key(self) -> tuple[str, str | None]:
        assert self.first.run is not None
        return (self.first.run.kind, self.first.run.runner)

    def note(self, event: SessionEvent) -> None:
        if event.command and event.command not in self.commands and len(self.commands) < MAX_COMMANDS:
            self.commands.append(event.command)
        if event.type == "run" and event.run is not None and (event.run.kind, event.run.runner) == self.key:
            self.runs.append(event)
            self.last_at = event.at

    def red(self, event: SessionEvent, failures: list[Failure], edited: bool) -> None:
        self.ran_after_edits |= edited
        if not failures:  # output no parser read: nothing known of which failures remain
            return
        current = {failure.signature: failure for failure in failures}
        for signature, failure in current.items():
            if signature not in self.failures:
                self.failures[signature] = failure
                self.appeared[signature] = len(self.edits)
            self.fixed.pop(signature, None)
        if edited:  # gone without an edit since the last run is a flaky failure, not a fix
            for signature in self.present - current.keys():
                self.fixed[signature] = (event.at, self.appeared[signature], len(self.edits))
        self.present = set(current)

    def close_green(self, event: SessionEvent) -> None:
        for signature in self.present:
            self.fixed[signature] = (event.at, self.appeared[signature], len(self.edits))
        self.present = set()
        self.green = event
        self.awaiting_commit = True

    def came_again(self, failures: list[Failure]) -> None:
        for failure in failures:
            if self.fixed.pop(failure.signature, None) is not None:
                self.came_back.add(failure.signature)


def episode_id(session_id: str, first_event_id: str) -> str:
    return str(uuid.uuid5(EPISODE_NAMESPACE, f"{session_id}:{first_event_id}"))


def mine(events: Iterable[SessionEvent], commits: Mapping[str, CommitInfo] | None = None) -> list[Episode]:
    """The episodes of a session's events (in log order), in the order they opened."""
    commits = commits or {}
    active: dict[tuple[str, str | None], _Builder] = {}
    closed: list[_Builder] = []
    ended: list[tuple[_Builder, OutcomeStatus]] = []
    prompt: str | None = None
    opened = 0
    for event in events:
        if event.type in ("prompt", "end"):
            prompt = event.prompt if event.type == "prompt" else prompt
            for builder in active.values():
                builder.moved_on |= bool(builder.edits)
        elif event.type == "edit" and event.file:
            for builder in active.values():
                builder.edits.append(Edit(event.file, tuple(event.lines)))
                builder.last_at = event.at
        elif event.type == "commit" and event.head:
            info = commits.get(event.head)
            for builder in closed:
                if builder.awaiting_commit and info is not None and set(info.files) & set(_files(builder)):
                    builder.commit, builder.awaiting_commit = info, False
        elif event.type == "run" and event.run is not None:
            for builder in active.values():
                builder.note(event)
            run = event.run
            if run.kind not in FOLLOWED_KINDS:
                continue
            key, failures = (run.kind, run.runner), failures_of(run)
            if not run.passed:
                for builder in closed:
                    if builder.key == key:
                        builder.awaiting_commit = False
                        builder.came_again(failures)
            current = active.get(key)
            if current is None:
                if not run.passed and failures:
                    active[key] = _Builder.start(event, failures, prompt)
                    active[key].seq, opened = opened, opened + 1
                continue
            edited = len(current.edits) > current.edits_at_last_run
            current.edits_at_last_run, current.moved_on = len(current.edits), False
            if not run.passed:
                current.red(event, failures, edited)
            else:
                del active[key]
                if edited:  # else a flaky rerun: nothing was learnt
                    current.close_green(event)
                    closed.append(current)
    for builder in active.values():
        if builder.edits and builder.ran_after_edits:
            ended.append((builder, "falsified"))
        elif builder.edits and builder.moved_on:
            ended.append((builder, "abandoned"))
    ended += [(builder, "confirmed" if builder.fixed else "falsified") for builder in closed]
    ended.sort(key=lambda item: item[0].seq)
    return [_episode(builder, outcome) for builder, outcome in ended]


def _files(builder: _Builder) -> list[str]:
    return [edit.file for edit in builder.edits]


def _episode(builder: _Builder, outcome: OutcomeStatus) -> Episode:
    first, run = builder.first, builder.first.run
    assert run is not None
    order = list(builder.failures)
    fixed = tuple(
        Fixed(builder.failures[sig], at, tuple(builder.edits[start:end]))
        for sig in order
        if sig in builder.fixed
        for at, start, end in [builder.fixed[sig]]
    )
    opening = tuple(failures_of(run))
    commit = builder.commit if outcome == "confirmed" else None
    ghap = next((event.ghap_id for event in builder.runs if event.ghap_id), None)
    return Episode(
        id=episode_id(first.session_id, first.id),
        session_id=first.session_id,
        project=first.project,
        worktree=first.worktree,
        kind=run.kind,
        runner=run.runner,
        outcome=outcome,
        goal=goal(commit, builder.prompt, opening, run.runner or run.kind),
        failures=opening,
        fixed=fixed,
        remaining=tuple(builder.failures[sig] for sig in order if sig in builder.present),
        edits=tuple(builder.edits),
        commands=tuple(builder.commands),
        runs=tuple(builder.runs),
        commit=commit,
        ghap_id=ghap,
        started_at=first.at,
        ended_at=builder.green.at if builder.green else builder.last_at or first.at,
    )


def goal(commit: CommitInfo | None, prompt: str | None, failures: tuple[Failure, ...], runner: str) -> str:
    """The commit's subject that followed the fix, else the prompt's first sentence, else the test."""
    if commit is not None and commit.subject.strip():
        return commit.subject.strip()[:MAX_GOAL_CHARS]
    if prompt and prompt.strip():
        sentence = _SENTENCE_END.split(prompt.strip(), maxsplit=1)[0].strip()
        return sentence[:MAX_GOAL_CHARS].rstrip()
    test = next((failure.test_id for failure in failures if failure.test_id), None)
    return f"make {test or runner} pass"[:MAX_GOAL_CHARS]
