"""An episode told as an auto experience: a resolved GHAP entry written from facts, not prose.

Every field says what was seen: which runner failed how, which files (and units) were edited,
what ran, how it ended. Its id is deterministic from what it taught (project, outcome, the
failures' signatures and the files edited), so that the same fix met again, in this session or
another, strengthens one experience instead of adding a copy.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

from learning_memory.shared.contracts.capture import Failure, SessionEvent
from learning_memory.shared.contracts.experiences import (
    MAX_EVIDENCE,
    MAX_GHAP_FIELD_CHARS,
    MAX_RESOLUTION_FIELD_CHARS,
    Anchor,
    ConfidenceTier,
    Evidence,
    GhapEntry,
    Resolution,
    RootCause,
)
from learning_memory.worker.capture.episodes import Episode

# Fixed, so that an auto experience's id is the same in every process and every session.
AUTO_NAMESPACE = uuid.UUID("9a4d2c71-0b8e-4f5a-b3c6-7e1d8f2a9c40")
MAX_ANCHORS = 20
MAX_LISTED = 3  # failures or files named in one line; the rest counted


def experience_id(episode: Episode) -> str:
    key = "\0".join(
        (episode.project, episode.outcome, ",".join(episode.signatures), ",".join(sorted(episode.files)))
    )
    return str(uuid.uuid5(AUTO_NAMESPACE, key))


def failure_text(failure: Failure) -> str:
    message = failure.message
    if failure.error_type and not message.startswith(failure.error_type):
        message = f"{failure.error_type}: {message}"
    return f"{failure.test_id}: {message}" if failure.test_id else message


def _listed(items: list[str], limit: int = MAX_LISTED) -> str:
    shown = ", ".join(items[:limit])
    return f"{shown} and {len(items) - limit} more" if len(items) > limit else shown


def files_text(files: tuple[str, ...], symbols: Mapping[str, tuple[str, ...]]) -> str:
    """``src/app.py (login, Session.refresh), tests/test_app.py``."""
    parts = [f"{file} ({', '.join(symbols[file])})" if symbols.get(file) else file for file in files]
    return _listed(parts)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _evidence(event: SessionEvent) -> Evidence:
    run = event.run
    assert run is not None
    counts = [
        f"{n} {label}"
        for n, label in ((run.tests_passed, "passed"), (run.tests_failed, "failed"))
        if n is not None
    ]
    outcome = ", ".join(counts) if counts else ("succeeded" if run.passed else "failed")
    code = f" (exit {run.exit_code})" if run.exit_code else ""
    first = f": {failure_text(run.failures[0])}" if run.failures else ""
    return Evidence(
        kind="test" if run.kind == "test" else "build",
        command=event.command or run.runner or run.kind,
        passed=run.passed,
        exit_code=run.exit_code,
        tests_passed=run.tests_passed,
        tests_failed=run.tests_failed,
        summary=_cut(f"{'tests' if run.kind == 'test' else run.kind}: {outcome}{code}{first}", 300),
        at=event.at,
    )


def anchors(
    episode: Episode,
    symbols: Mapping[str, tuple[str, ...]],
    digests: Callable[[str], Mapping[str, str]] | None = None,
) -> list[Anchor]:
    """The files and units the episode edited; ``digests(file)``: its units' digests now, so that
    a later look can tell whether they were rewritten."""
    commit = episode.commit
    found: list[Anchor] = []
    for file in episode.files:
        sha = commit.sha if commit is not None and file in commit.files else None
        known = digests(file) if digests is not None and symbols.get(file) else {}
        found += [
            Anchor(file=file, symbol=name, commit=sha, digest=known.get(name))
            for name in symbols.get(file, ())
        ] or [Anchor(file=file, commit=sha)]
    return found[:MAX_ANCHORS]


def _resolution(episode: Episode, runner: str, edited: str) -> Resolution:
    fixed = [failure_text(fix.failure) for fix in episode.fixed]
    remaining = [failure_text(failure) for failure in episode.remaining]
    tier: ConfidenceTier = "abandoned" if episode.outcome == "abandoned" else "auto"
    cause: RootCause | None = None
    if episode.outcome == "confirmed":
        result = f"{runner} went green after editing {edited}"
        if episode.commit is not None:
            result += f"; committed {episode.commit.sha[:10]} ({episode.commit.subject})"
        cause = RootCause(
            category="oversight", description=_cut("; ".join(fixed), MAX_RESOLUTION_FIELD_CHARS)
        )
    elif episode.outcome == "falsified":
        result = (
            f"{runner} still failed after editing {edited}: {_listed(remaining or ['unreadable output'])}"
        )
        if fixed:
            result += f" (went away: {_listed(fixed)})"
        still = "; ".join(remaining) or "the run still failed"
        cause = RootCause(category="incomplete-fix", description=_cut(f"Still failing: {still}", 2_000))
    else:
        result = f"moved on before {runner} passed, after editing {edited}"
    return Resolution(
        status=episode.outcome,
        result=_cut(result, MAX_RESOLUTION_FIELD_CHARS),
        root_cause=cause,
        confidence_tier=tier,
        resolved_at=episode.ended_at,
        resolved_in_session=episode.session_id,
    )


def auto_entry(
    episode: Episode,
    symbols: Mapping[str, tuple[str, ...]],
    digests: Callable[[str], Mapping[str, str]] | None = None,
) -> GhapEntry:
    """The episode as a resolved auto experience (``symbols``: the units edited, by file;
    ``digests``: see :func:`anchors`)."""
    runner = episode.runner or episode.kind
    edited = files_text(episode.files, symbols)
    errors = _listed([failure_text(failure) for failure in episode.failures])
    ran = "; ".join(episode.commands)
    return GhapEntry(
        id=experience_id(episode),
        session_id=episode.session_id,
        # Making a failing run pass is debugging, whether the runner is a test suite or a compiler.
        domain="debugging",
        strategy="read-the-error",
        goal=episode.goal,
        hypothesis=_cut(f"Editing {edited} fixes {errors}", MAX_GHAP_FIELD_CHARS),
        action=_cut(f"Edited {edited}" + (f"; ran {ran}" if ran else ""), MAX_GHAP_FIELD_CHARS),
        prediction=f"{runner} passes",
        created_at=episode.started_at,
        updated_at=episode.ended_at,
        evidence=[_evidence(event) for event in episode.runs[-MAX_EVIDENCE:]],
        resolution=_resolution(episode, runner, edited),
        source="auto",
        anchors=anchors(episode, symbols, digests),
        last_seen=episode.ended_at,
        project=episode.project,
    )
