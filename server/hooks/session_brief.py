"""The SessionStart brief: ``learning-memory hook session-start``, run by Claude Code as a command.

Claude Code runs SessionStart hooks before it connects to MCP servers, so this cannot be a tool
call. It reads only local files, with the standard library (no pydantic, no SDK, no asyncio:
the process must answer in tens of milliseconds):

- the project's GHAP journal: the active entry (continuity after ``/clear`` and compaction) and
  the newest resolved entries that carry a lesson or a root cause;
- the values cache the server keeps in the data folder (``values_cache.py``): the strongest
  validated lessons;
- the repository's latest fixes, captured from its sessions in any worktree (after the lessons
  agents wrote: those rank first).

Anything unreadable is left out: a brief with less in it, never an error. Nothing at all to say
prints nothing. The ids the brief showed are noted in the session's log (an ``injected`` event),
so that the miner can tell later whether the work that followed went green.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from learning_memory.server.hooks.answer import hook_answer
from learning_memory.shared.context_lines import (
    MAX_LINE_CHARS,
    entry_data,
    estimate_tokens,
    experience_line,
    one_line,
    value_line,
)
from learning_memory.shared.paths import (
    CURATED_FILE,
    RECENT_FIXES_FILE,
    capture_dir,
    capture_from_env,
    data_dir_from_env,
)

BUDGET_TOKENS = 400
MAX_VALUES = 3
MAX_LESSONS = 3
MAX_FIXES = 3
# Archive files are immutable and named by entry: the newest by mtime are the newest resolved.
ARCHIVE_SCAN = 40
VALUES_CACHE = Path("cache") / "values.json"
# An item's line: "- [exp:<id>] ...". At most the contract's MAX_INJECTED_ITEMS are logged.
_ITEM = re.compile(r"^- \[((?:exp|val|mem):[^\]\s]+)\]", re.MULTILINE)
MAX_LOGGED_ITEMS = 20


def journal_dir(cwd: Path) -> Path:
    configured = Path(os.environ.get("LMS_JOURNAL_DIR") or ".claude/journal").expanduser()
    return configured if configured.is_absolute() else cwd / configured


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def _active_lines(journal: Path) -> list[str]:
    entry = _read_json(journal / "active.json")
    if not isinstance(entry, dict) or entry.get("resolution") is not None or not entry.get("goal"):
        return []
    iteration = len(entry.get("iterations") or []) + 1
    lines = [
        f"Active GHAP entry (iteration {iteration}, started {str(entry.get('created_at', ''))[:16]}), "
        "still open from before:",
        f"  goal: {one_line(entry['goal'])}",
        f"  hypothesis: {one_line(entry.get('hypothesis', ''))}",
        f"  prediction: {one_line(entry.get('prediction', ''))}",
    ]
    evidence = entry.get("evidence") or []
    if evidence and isinstance(evidence[-1], dict):
        lines.append(f"  last run: {one_line(evidence[-1].get('summary', ''))}")
    lines.append(
        "  Carry on with it: update_ghap as you learn, resolve_ghap once the prediction holds or fails."
    )
    return lines


def _curated_out(data_dir: Path) -> frozenset[str]:
    """The context ids a person set aside (values retired, experiences marked wrong): the worker
    lists them after each curation change; the files read here may still name them."""
    data = _read_json(data_dir / CURATED_FILE)
    if not isinstance(data, dict):
        return frozenset()
    values = data.get("retired_values") or []
    experiences = data.get("wrong_experiences") or []
    return frozenset([*(f"val:{v}" for v in values), *(f"exp:{e}" for e in experiences)])


def _lesson_lines(journal: Path, skip: frozenset[str] = frozenset()) -> list[str]:
    try:
        files = [e for e in os.scandir(journal / "archive") if e.name.endswith(".json") and e.is_file()]
    except OSError:
        return []
    files.sort(key=lambda e: e.stat().st_mtime, reverse=True)
    lines: list[str] = []
    for item in files[:ARCHIVE_SCAN]:
        entry = _read_json(Path(item.path))
        resolution = entry.get("resolution") if isinstance(entry, dict) else None
        if not isinstance(resolution, dict) or not (resolution.get("lesson") or resolution.get("root_cause")):
            continue
        if f"exp:{entry.get('id')}" in skip:
            continue
        lines.append(f"- [exp:{entry.get('id')}] {experience_line(entry_data(entry))}")
        if len(lines) >= MAX_LESSONS:
            break
    return lines


def _value_lines(data_dir: Path, skip: frozenset[str] = frozenset()) -> list[str]:
    values = _read_json(data_dir / VALUES_CACHE)
    if not isinstance(values, list):
        return []
    kept = [v for v in values if isinstance(v, dict) and f"val:{v.get('id')}" not in skip]
    return [f"- [val:{v.get('id')}] {value_line(v)}" for v in kept[:MAX_VALUES]]


def _fix_lines(cwd: Path, data_dir: Path, skip: frozenset[str] = frozenset()) -> list[str]:
    """Fixes captured from past sessions of this repository (any worktree), newest first; the
    miner keeps the list (``recent.json``) next to the project's session logs."""
    if not capture_from_env():
        return []
    from learning_memory.server.capture.project import place_of

    items = _read_json(capture_dir(data_dir) / place_of(str(cwd)).project / RECENT_FIXES_FILE)
    if not isinstance(items, list):
        return []
    return [
        f"- [{i.get('id')}] {one_line(str(i.get('text', '')), MAX_LINE_CHARS)}"
        for i in [i for i in items if isinstance(i, dict) and i.get("id") not in skip][:MAX_FIXES]
    ]


def _within_budget(lines: list[str], budget: int = BUDGET_TOKENS) -> list[str]:
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = estimate_tokens(line + "\n")
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    return kept


def brief(cwd: Path, data_dir: Path) -> str:
    journal = journal_dir(cwd)
    lines = _active_lines(journal)
    skip = _curated_out(data_dir)
    values = _value_lines(data_dir, skip)
    if values:
        lines += ["Validated lessons (values) from past work:", *values]
    lessons = _lesson_lines(journal, skip)
    if lessons:
        lines += ["Recent lessons in this project:", *lessons]
    fixes = _fix_lines(cwd, data_dir, skip)
    if fixes:
        lines += ["Failures fixed lately in this repository (captured from sessions):", *fixes]
    if not lines:
        return ""
    header = "Learning memory brief (ids expand with expand_context):"
    return "\n".join(_within_budget([header, *lines]))


def record_shown(session_id: str, cwd: Path, text: str, data_dir: Path) -> bool:
    """Append the brief's ids to the session's log; True when a line was written."""
    items = list(dict.fromkeys(_ITEM.findall(text)))[:MAX_LOGGED_ITEMS]
    from learning_memory.server.capture.session_end import event_line

    if not session_id or not items or not capture_from_env():
        return False
    from learning_memory.server.capture.project import place_of
    from learning_memory.server.capture.session_log import SessionLog

    where = place_of(str(cwd))
    event_id, line = event_line("injected", session_id, where, items=items, via="brief")
    return SessionLog(capture_dir(data_dir)).append_line(where.project, session_id, event_id, line)


def main(stdin: Any = None, stdout: Any = None) -> int:
    """Read Claude Code's hook input, print the hook answer; never fail the session."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    try:
        event = json.loads(stdin.read() or "{}")
        cwd = Path(event.get("cwd") or os.getcwd()) if isinstance(event, dict) else Path.cwd()
        text = brief(cwd, data_dir_from_env())
    except Exception as exc:  # fail open: the session starts without a brief
        sys.stderr.write(json.dumps({"event": "hook.session_start_failed", "error": str(exc)}) + "\n")
        return 0
    if text:
        stdout.write(hook_answer("SessionStart", text) + "\n")
        session_id = str(event.get("session_id") or "") if isinstance(event, dict) else ""
        try:
            record_shown(session_id, cwd, text, data_dir_from_env())
        except Exception as exc:  # the brief was given: only its feedback is lost
            sys.stderr.write(json.dumps({"event": "hook.brief_not_logged", "error": str(exc)}) + "\n")
    return 0
