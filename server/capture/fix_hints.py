"""The line a failing run gets when its failure was met, and fixed, before in this repository.

Read from the fix index the miner keeps (a local SQLite file): no worker, no model, so it
answers within the hook's budget even when the queue is down. Nothing matches, nothing said.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from learning_memory.shared.anchored_items import AnchoredItem
from learning_memory.shared.context_lines import STALE_NOTES, estimate_tokens, one_line
from learning_memory.shared.contracts.capture import RunOutcome
from learning_memory.shared.contracts.context import item_id
from learning_memory.shared.fix_index import FixIndex, KnownFix, failures_of

MAX_HINTS = 2


@dataclass(frozen=True)
class Shown:
    """What a hook says, and the context ids in it (logged, so that the miner can tell later
    whether they helped)."""

    lines: list[str] = field(default_factory=list)
    items: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _when(at: datetime) -> str:
    days = (datetime.now(UTC) - at).days
    if days <= 0:
        return "earlier today"
    return "yesterday" if days == 1 else f"{days} days ago ({at:%Y-%m-%d})"


def _where(fix: KnownFix, worktree: Path) -> str:
    if Path(fix.worktree) == worktree:
        return "in this worktree"
    return f"in worktree {Path(fix.worktree).name}"


def _changed(stale: str | None) -> str:
    # Only "changed" is ever said: what is gone is not offered at all.
    return f" ({STALE_NOTES['changed']})" if stale == "changed" else ""


def hint_line(fix: KnownFix, worktree: Path) -> str:
    what = " ".join(part for part in (fix.error_type, fix.message) if part)
    failure = one_line(f"{fix.test_id}: {what}" if fix.test_id else what, 140)
    edited = ", ".join(fix.files[:3]) or "files"
    if fix.symbols:
        edited += f" ({', '.join(fix.symbols[:3])})"
    commit = f' in {fix.commit[:8]} "{one_line(fix.subject or "", 80)}"' if fix.commit else ""
    similar = "" if fix.similarity >= 1.0 else " (a close match)"
    times = f", fixed {fix.times_fixed} times" if fix.times_fixed > 1 else ""
    changed = _changed(fix.stale)
    return (
        f"Learning memory: seen before{similar}, {_when(fix.fixed_at)} {_where(fix, worktree)}: "
        f"{failure} — fixed by editing {edited}{commit}{times}{changed}. "
        f'expand_context(["{item_id("experience", fix.experience_id)}"]) for the whole record.'
    )


def fix_hints(index: FixIndex, project: str, worktree: Path, outcome: RunOutcome) -> Shown:
    """Lines for a failed run whose failures (or, unparsed, its last error line) were fixed before."""
    failures = failures_of(outcome)
    if outcome.passed or not failures:
        return Shown()
    fixes = index.fixes_for(project, failures, limit=MAX_HINTS)  # never those whose code is gone
    return Shown(
        [hint_line(fix, worktree) for fix in fixes],
        list(dict.fromkeys(item_id("experience", fix.experience_id) for fix in fixes)),
    )


FILE_HEADER = "Learning memory about {file}:"
FILE_BUDGET_TOKENS = 150


def _fix_item(fix: KnownFix, worktree: Path) -> tuple[str, str]:
    what = " ".join(part for part in (fix.error_type, fix.message) if part)
    failure = one_line(f"{fix.test_id}: {what}" if fix.test_id else what, 120)
    symbols = f" in {', '.join(fix.symbols[:2])}" if fix.symbols else ""
    commit = f' ({fix.commit[:8]} "{one_line(fix.subject or "", 60)}")' if fix.commit else ""
    when = f"{_when(fix.fixed_at)} {_where(fix, worktree)}"
    item = item_id("experience", fix.experience_id)
    changed = _changed(fix.stale)
    return f"- fixed {failure}{symbols}, {when}{commit}{changed} [{item}]", item


def _anchored_item(found: AnchoredItem) -> tuple[str, str]:
    kind = "memory" if found.item.startswith("mem:") else "lesson"
    about = f" (about {', '.join(found.symbols[:2])})" if found.symbols else ""
    changed = _changed(found.state)
    return f"- {kind}{about}: {one_line(found.text, 120)}{changed} [{found.item}]", found.item


def file_lessons(index: FixIndex, project: str, worktree: Path, file: str) -> Shown:
    """What was learned about ``file``: the failures edits to it fixed (newest first), then the
    memories and values that name it, within :data:`FILE_BUDGET_TOKENS`; nothing when there is
    nothing."""
    lines = [FILE_HEADER.format(file=file)]
    items: list[str] = []
    candidates = [_fix_item(fix, worktree) for fix in index.fixes_for_file(project, file, limit=MAX_HINTS)]
    candidates += [_anchored_item(found) for found in index.anchored_to(project, file, limit=MAX_HINTS)]
    for line, item in candidates:
        if estimate_tokens("\n".join([*lines, line])) > FILE_BUDGET_TOKENS:
            break
        lines.append(line)
        items.append(item)
    return Shown(lines, list(dict.fromkeys(items))) if items else Shown()
