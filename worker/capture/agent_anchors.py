"""Anchors for the agent's own experiences: the files and units edited in the episodes its GHAP
entry absorbed (runs record the active entry; an episode inside one is its evidence), with their
digests as the code is when the log is mined.

The agent writes what it learned in words; where it happened in the code, the log knows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from learning_memory.shared.contracts.experiences import Anchor
from learning_memory.worker.capture.episodes import Edit, Episode
from learning_memory.worker.capture.experience import MAX_ANCHORS
from learning_memory.worker.capture.symbols import SymbolResolver


def agent_anchors(episodes: Sequence[Episode], project: str) -> dict[str, list[Anchor]]:
    """By GHAP entry, the anchors of its episodes' edits. Blocking (reads and parses the edited
    files): run it off the event loop."""
    edits: dict[tuple[str, str], list[Edit]] = {}  # (entry, worktree) -> edits
    for episode in episodes:
        if episode.ghap_id:
            edits.setdefault((episode.ghap_id, episode.worktree), []).extend(episode.edits)
    resolvers: dict[str, SymbolResolver] = {}
    anchors: dict[str, list[Anchor]] = {}
    for (ghap_id, worktree), made in edits.items():
        resolver = resolvers.setdefault(worktree, SymbolResolver(Path(worktree), project))
        found = anchors.setdefault(ghap_id, [])
        for file, names in resolver.symbols(made).items():
            if Path(file).is_absolute():  # outside the worktree: not the repository's code
                continue
            digests = resolver.digests(file) if names else {}
            found += [Anchor(file=file, symbol=name, digest=digests.get(name)) for name in names] or [
                Anchor(file=file)
            ]
    return {ghap_id: found[:MAX_ANCHORS] for ghap_id, found in anchors.items() if found}
