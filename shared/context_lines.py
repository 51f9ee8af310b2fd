"""One-line summaries of experiences, values and memories, as the agent is shown them.

The worker renders search hits with these, and the SessionStart brief renders the journal's
entries and the values cache with them: one wording wherever the agent meets its past.
Standard library only: the SessionStart hook imports this in a process that must start fast.
"""

from __future__ import annotations

import math
from typing import Any

MAX_LINE_CHARS = 280
MAX_PART_CHARS = 140
# Claude's tokenizer averages about four characters a token on English prose; counting 3.5
# keeps a budget an upper bound on what is injected.
CHARS_PER_TOKEN = 3.5


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def one_line(text: str, limit: int = MAX_PART_CHARS) -> str:
    """Whitespace collapsed, cut at ``limit`` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _part(payload: dict[str, Any], key: str) -> str:
    value = payload.get(key)
    return one_line(value) if isinstance(value, str) and value.strip() else ""


STALE_NOTES = {"changed": "code changed since", "gone": "code gone since"}


def experience_line(data: dict[str, Any]) -> str:
    """``data`` holds the stored payload's fields (goal, outcome_status, root_cause, lesson, ...);
    one whose anchored code was rewritten or deleted since (``stale``) says so at the end."""
    return with_stale_note(_experience_line(data), data.get("stale"))


def with_stale_note(line: str, stale: object) -> str:
    """``line`` ending with what became of its anchored code, when something did (the line cut
    shorter to make room)."""
    note = STALE_NOTES.get(str(stale))
    if note is None:
        return line
    return f"{one_line(line, MAX_LINE_CHARS - len(note) - 3)} ({note})"


def _experience_line(data: dict[str, Any]) -> str:
    status = data.get("outcome_status") or "active"
    if data.get("source") == "auto":
        times = data.get("occurrences") or 1
        seen = f", {times} times" if isinstance(times, int) and times > 1 else ""
        head = f"{status} (captured from a session{seen}): {_part(data, 'goal')}"
        return one_line(" — ".join(p for p in (head, _part(data, "outcome_result")) if p), MAX_LINE_CHARS)
    head = f"{status} ({data.get('domain', '?')}): {_part(data, 'goal')}"
    parts = [head]
    cause = data.get("root_cause")
    if isinstance(cause, dict) and cause.get("description"):
        category = str(cause.get("category", "")).replace("-", " ")
        parts.append(f"root cause ({category}): {one_line(cause['description'])}")
    lesson = data.get("lesson")
    if isinstance(lesson, dict) and (lesson.get("takeaway") or lesson.get("what_worked")):
        parts.append(f"lesson: {one_line(lesson.get('takeaway') or lesson['what_worked'])}")
    elif len(parts) == 1 and _part(data, "outcome_result"):
        parts.append(f"result: {_part(data, 'outcome_result')}")
    return one_line(" — ".join(parts), MAX_LINE_CHARS)


def value_line(data: dict[str, Any]) -> str:
    size = data.get("cluster_size")
    where = f"value, {data.get('axis', '?')} axis" + (f", {size} experiences" if size else "")
    return with_stale_note(one_line(f"{where}: {data.get('text', '')}", MAX_LINE_CHARS), data.get("stale"))


def memory_line(data: dict[str, Any]) -> str:
    line = one_line(f"{data.get('category', 'memory')}: {data.get('content', '')}", MAX_LINE_CHARS)
    return with_stale_note(line, data.get("stale"))


def line_for(kind: str, data: dict[str, Any]) -> str:
    if kind == "experience":
        return experience_line(data)
    if kind == "value":
        return value_line(data)
    return memory_line(data)


def entry_data(entry: dict[str, Any]) -> dict[str, Any]:
    """A journal entry (``GhapEntry`` as JSON) in the stored payload's flat shape."""
    resolution = entry.get("resolution") or {}
    return {
        **entry,
        "outcome_status": resolution.get("status"),
        "outcome_result": resolution.get("result"),
        "surprise": resolution.get("surprise"),
        "root_cause": resolution.get("root_cause"),
        "lesson": resolution.get("lesson"),
    }
