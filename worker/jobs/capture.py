"""mine_session: a session's log cut into episodes, kept as auto experiences and in the fix index.

The log is mined again each time the session stops, compacts, ends or takes a new prompt, so the
job makes the stores hold what the whole log says, whatever was recorded before: the fix index
replaces the session's episodes (an episode whose outcome a later event changed is recorded
anew) and the outcomes of what the hooks showed in it (``capture.feedback``), and every auto
experience whose episodes changed is stored again from its latest episode with its count of
episodes, or deleted when no episode holds it any more. Mining an unchanged log changes nothing
and counts nothing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from learning_memory.shared.contracts.capture import (
    MINE_SESSION,
    MineSessionRequest,
    MineSessionResponse,
    SessionEvent,
)
from learning_memory.shared.contracts.experiences import GhapEntry, PersistExperienceRequest
from learning_memory.shared.fix_index import EpisodeRecord, FixIndex, SessionChange, fix_index_path
from learning_memory.shared.log import get_logger
from learning_memory.worker.capture.agent_anchors import agent_anchors
from learning_memory.worker.capture.commits import session_commits
from learning_memory.worker.capture.episodes import mine
from learning_memory.worker.capture.feedback import attribute
from learning_memory.worker.capture.log_retention import prune_logs
from learning_memory.worker.capture.meaning import alias_by_meaning
from learning_memory.worker.capture.recent import write_recent
from learning_memory.worker.capture.records import episode_records, seen_failures
from learning_memory.worker.capture.session_log import parse_events
from learning_memory.worker.jobs.experiences import forget_experience, persist_experience
from learning_memory.worker.jobs.item_staleness import recheck_item_anchors
from learning_memory.worker.jobs.staleness import attach_agent_anchors, edited_files, recheck_anchors
from learning_memory.worker.registry import job
from learning_memory.worker.services import JobRun

log = get_logger(__name__)


def _read_log(path: Path) -> list[SessionEvent]:
    try:
        with path.open(encoding="utf-8", errors="replace") as lines:
            return parse_events(lines)
    except FileNotFoundError:
        log.info("capture.log_missing", path=str(path))
        return []


@job(MINE_SESSION)
async def mine_session(run: JobRun, request: MineSessionRequest) -> MineSessionResponse:
    events = await asyncio.to_thread(_read_log, Path(request.log_path))
    if not events:
        return MineSessionResponse(episodes=0, stored=0, merged=0, absorbed=0)
    commits = await asyncio.to_thread(session_commits, events)
    episodes = await asyncio.to_thread(mine, events, commits)
    records = await asyncio.to_thread(episode_records, episodes, request.project)
    index = FixIndex(fix_index_path(run.services.settings.data_dir))
    seen = seen_failures(events)
    change = await asyncio.to_thread(
        index.record_session,
        request.project,
        request.session_id,
        events[0].worktree,
        seen,
        records,
        attribute(events, episodes),
    )
    # Failures met without a fix of their own: the hook can name one meaning the same next time.
    await alias_by_meaning(run, index, request.project, [s.failure for s in seen])
    for experience_id in sorted(change.experiences):
        await _store(run, index, experience_id)
    # Where the agent's own experiences happened: the edits of the episodes each absorbed.
    anchors = await asyncio.to_thread(agent_anchors, episodes, request.project)
    await attach_agent_anchors(run, request.project, anchors)
    # Its edits and commits may have rewritten code that earlier experiences are anchored to.
    touched = edited_files(events, commits.values())
    await recheck_anchors(run, index, request.project, events[0].worktree, touched)
    await recheck_item_anchors(run, request.project, events[0].worktree, touched)
    if change.experiences:
        # <capture>/<project>/sessions/<session>.jsonl: the brief looks in <capture>/<project>.
        await asyncio.to_thread(write_recent, index, request.project, Path(request.log_path).parent.parent)
    log_path = Path(request.log_path)
    keep_days = run.services.settings.capture_keep_days
    await asyncio.to_thread(prune_logs, log_path.parent, keep_days, keep=log_path)
    response = _counts(records, change)
    log.info(
        "capture.session_mined",
        session_id=request.session_id,
        events=len(events),
        episodes=response.episodes,
        stored=response.stored,
        merged=response.merged,
        absorbed=response.absorbed,
        updated=len(change.experiences),
    )
    return response


async def _store(run: JobRun, index: FixIndex, experience_id: str) -> None:
    """Store the experience as its episodes now tell it, or forget it if none is left."""
    state = await asyncio.to_thread(index.experience, experience_id)
    if state is None:
        await forget_experience(run, experience_id)
        return
    entry = GhapEntry.model_validate_json(state.entry).model_copy(
        update={
            "occurrences": state.occurrences,
            "last_seen": state.last_seen,
            "created_at": state.first_seen,
        }
    )
    # The same code as the persist_experience job: deterministic point ids, so storing it again
    # replaces its points.
    await persist_experience(run, PersistExperienceRequest(entry=entry))


def _counts(records: list[EpisodeRecord], change: SessionChange) -> MineSessionResponse:
    added = set(change.added)
    new_counted: set[str] = set()
    merged = absorbed = 0
    for record in records:
        if record.episode_id not in added:
            continue
        if record.absorbed:
            absorbed += 1
        elif record.experience_id in change.new_experiences and record.experience_id not in new_counted:
            new_counted.add(record.experience_id)
        else:
            merged += 1
    return MineSessionResponse(
        episodes=len(records), stored=len(change.new_experiences), merged=merged, absorbed=absorbed
    )
