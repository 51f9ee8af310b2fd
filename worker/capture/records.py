"""What a mined session writes into the fix index: its episodes (with the auto experience each
tells, or the GHAP entry that absorbed it), their fixes, and every failure it met."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from learning_memory.shared.contracts.capture import SessionEvent
from learning_memory.shared.fix_index import EpisodeRecord, FixRecord, SeenFailure, failures_of
from learning_memory.worker.capture.episodes import FOLLOWED_KINDS, Episode
from learning_memory.worker.capture.experience import auto_entry
from learning_memory.worker.capture.symbols import SymbolResolver


def seen_failures(events: Iterable[SessionEvent]) -> list[SeenFailure]:
    return [
        SeenFailure(failure, event.at)
        for event in events
        if event.type == "run" and event.run is not None and event.run.kind in FOLLOWED_KINDS
        for failure in failures_of(event.run)
    ]


def episode_records(episodes: Sequence[Episode], project: str) -> list[EpisodeRecord]:
    """Blocking (reads and parses the edited files): run it off the event loop."""
    resolvers: dict[str, SymbolResolver] = {}
    records = []
    for episode in (replace(episode, project=project) for episode in episodes):
        resolver = resolvers.setdefault(episode.worktree, SymbolResolver(Path(episode.worktree), project))
        symbols = resolver.symbols(episode.edits)
        commit = episode.commit
        fixes = []
        for fix in episode.fixed:
            edited = resolver.symbols(fix.edits)
            fixes.append(
                FixRecord(
                    failure=fix.failure,
                    files=tuple(edited),
                    symbols=tuple(dict.fromkeys(name for names in edited.values() for name in names)),
                    commit=commit.sha if commit is not None else None,
                    subject=commit.subject if commit is not None else None,
                    fixed_at=fix.at,
                )
            )
        entry = None if episode.ghap_id else auto_entry(episode, symbols, resolver.digests)
        records.append(
            EpisodeRecord(
                episode_id=episode.id,
                experience_id=episode.ghap_id or (entry.id if entry else ""),
                outcome=episode.outcome,
                absorbed=episode.ghap_id is not None,
                started_at=episode.started_at,
                ended_at=episode.ended_at,
                entry=entry.model_dump_json() if entry is not None else None,
                fixes=tuple(fixes),
            )
        )
    return records
