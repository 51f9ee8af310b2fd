"""Which episode each item the agent was shown bore on, and so whether it helped.

Pure: a session's events and its episodes in, one record per (item, episode) out. An item shown
(an ``injected`` event) is tied to one episode of the same task, the task being what follows the
injection up to the next prompt that comes after some work (a run or an edit): a reply such as
"go on" does not start a new task, and the brief, shown before the first prompt, belongs to the
first task.

- A fix hint or a file's lessons speak to the work under way: the episode in progress when they
  were shown (the failing run that drew a hint opened or continued it), else the first to start
  after them.
- The brief and a prompt's context speak to the task ahead: the first episode that starts after
  them, else the one in progress.

The episode's outcome is the item's: ``confirmed`` helped; ``falsified`` or ``abandoned`` (given
up after edits) did not. An item with no such episode (nothing failed, or nothing was tried) is
not counted either way. Episodes still undecided are not mined yet, so neither are their items:
they are counted when a later mining decides them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from learning_memory.shared.contracts.capture import SessionEvent
from learning_memory.shared.contracts.context import item_id
from learning_memory.shared.contracts.experiences import ExperienceHit
from learning_memory.shared.fix_feedback import Outcomes
from learning_memory.shared.fix_index import FixIndex, fix_index_path
from learning_memory.shared.fix_writes import FeedbackRecord
from learning_memory.worker.capture.episodes import Episode

H = TypeVar("H", bound=ExperienceHit)
_WORK = frozenset({"run", "edit"})
_UNDER_WAY = frozenset({"fix_hint", "file_lesson"})


def _task_end(events: Sequence[SessionEvent], shown: int) -> int:
    """The position of the prompt that starts the next task after ``shown`` (or the log's end)."""
    worked = False
    for position in range(shown + 1, len(events)):
        kind = events[position].type
        if kind == "prompt" and worked:
            return position
        worked |= kind in _WORK
    return len(events)


def _episode_for(
    event: SessionEvent, shown: int, task_end: int, spans: Sequence[tuple[int, Episode]]
) -> Episode | None:
    in_progress = [episode for start, episode in spans if start < shown and episode.ended_at >= event.at]
    during = in_progress[-1] if in_progress else None  # the most recently opened
    after = next((episode for start, episode in spans if shown < start < task_end), None)
    if event.via in _UNDER_WAY:
        return during or after
    return after or during


def attribute(events: Sequence[SessionEvent], episodes: Sequence[Episode]) -> list[FeedbackRecord]:
    """The outcome of every item shown in the session whose episode is decided."""
    position = {event.id: index for index, event in enumerate(events)}
    spans = sorted(
        (
            (position[episode.runs[0].id], episode)
            for episode in episodes
            if episode.runs and episode.runs[0].id in position
        ),
        key=lambda span: span[0],
    )
    records: dict[tuple[str, str], FeedbackRecord] = {}
    for shown, event in enumerate(events):
        if event.type != "injected" or not event.items or event.via is None:
            continue
        episode = _episode_for(event, shown, _task_end(events, shown), spans)
        if episode is None:
            continue
        for item in event.items:
            # Shown again while the same episode went on: counted once, from its first showing.
            records.setdefault(
                (item, episode.id),
                FeedbackRecord(
                    item=item,
                    episode_id=episode.id,
                    via=event.via,
                    helped=episode.outcome == "confirmed",
                    shown_at=event.at,
                ),
            )
    return list(records.values())


def _read(data_dir: Path, items: list[str]) -> dict[str, Outcomes]:
    index = FixIndex(fix_index_path(data_dir))
    try:
        return index.outcomes(items)
    finally:
        index.close()


async def outcomes_for(data_dir: Path, items: Iterable[str]) -> dict[str, Outcomes]:
    """Helped / not-helped counts of the items that have any (a read of the fix index by id; an
    index not there yet or unreadable counts nothing)."""
    wanted = list(dict.fromkeys(items))
    return await asyncio.to_thread(_read, data_dir, wanted) if wanted else {}


async def with_outcomes(data_dir: Path, hits: list[H]) -> list[H]:
    """The experience hits with their helped / not-helped counts (the score left as it is)."""
    shown = await outcomes_for(data_dir, (item_id("experience", hit.ghap_id) for hit in hits))
    return [
        hit.model_copy(update={"helped": found.helped, "not_helped": found.not_helped})
        if (found := shown.get(item_id("experience", hit.ghap_id)))
        else hit
        for hit in hits
    ]
