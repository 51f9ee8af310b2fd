"""Scores against ``labels.json``: what should have been mined from each labelled transcript and
which failures come back, judged by hand (the file says how).

- Episode recall: labelled (non-optional) episodes that a stored record names, by one of the
  episode's failing runs (its tool_use id), or by its passing run together with a file of its fix;
  records and episodes are paired one to one. A record is a mined episode (``stored``) or an
  experience found by search, as text.
- Episode precision: labelled episodes (optional ones included) paired with a record, over the
  episodes the miner reported for the labelled sessions.
- Fix-hint recall@1: over labelled recurring failures, the hook answer at that failing run whose
  first hint (its first line) names one of the files that fixed it before (recall@any: any line).
- First-time failures with nothing: failing Bash runs of labelled sessions, not labelled as
  recurring, whose hook answer carried no context. Hints there are noise at best.

A transcript counts as labelled only when its sha256 is the labelled one.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.capture.runner import CallRecord

LABELS_JSON = Path(__file__).resolve().parent / "labels.json"
OUTCOME_TOOL = "hook_tool_outcome"
# A path with a folder, or a file name with an extension of two letters or more ("e.g" is no file).
_FILE = re.compile(r"(?:[\w@~+.-]*/)*[\w@~+-][\w@~+.-]*\.([A-Za-z]\w{0,7})\b")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_labels(path: Path) -> dict[str, dict[str, Any]]:
    """Labelled transcripts by session id."""
    if not path.exists():
        return {}
    document = json.loads(path.read_text())
    transcripts = document.get("transcripts", {})
    return transcripts if isinstance(transcripts, dict) else {}


def labelled(labels: dict[str, dict[str, Any]], session_id: str, digest: str) -> dict[str, Any] | None:
    label = labels.get(session_id)
    return label if label is not None and label.get("sha256") == digest else None


def same_file(mentioned: str, fix_file: str) -> bool:
    mentioned, fix_file = mentioned.replace("\\", "/").lstrip("./"), fix_file.lstrip("./")
    return mentioned == fix_file or mentioned.endswith("/" + fix_file)


def names_any(text: str, fix_files: list[str]) -> bool:
    return any(same_file(named, fix) for named in files_in(text) for fix in fix_files)


def files_in(text: str) -> list[str]:
    return [m.group(0) for m in _FILE.finditer(text) if "/" in m.group(0) or len(m.group(1)) >= 2]


def _ratio(hits: int, total: int) -> float | None:
    return hits / total if total else None


@dataclass
class Scores:
    episode_recall: float | None = None
    episode_precision: float | None = None
    episodes_labelled: int = 0
    episodes_found: int = 0
    fix_hint_recall_at_1: float | None = None
    fix_hint_recall_any: float | None = None
    recurring_failures: int = 0
    first_time_failures: int = 0
    first_time_nothing: float | None = None
    missed: list[str] = field(default_factory=list)  # "<session>:<red>" of labelled episodes not found
    notes: list[str] = field(default_factory=list)


def _found(episode: dict[str, Any], records: list[str]) -> bool:
    reds = {episode.get("red"), *episode.get("reds", [])} - {None}
    greens = {episode.get("green"), *episode.get("greens", [])} - {None}
    fix_files = episode.get("fix_files", [])
    for text in records:
        if any(_mentions(text, red) for red in reds):
            return True
        if any(_mentions(text, green) for green in greens) and names_any(text, fix_files):
            return True
    return False


def _assign(episodes: list[dict[str, Any]], records: list[str]) -> dict[int, int]:
    """Records matched one to one with the labelled episodes they name (a maximum matching: one
    mined episode that spans two labelled ones finds only one of them); record -> episode."""
    names = {i: [j for j, e in enumerate(episodes) if _found(e, [text])] for i, text in enumerate(records)}
    owner: dict[int, int] = {}  # episode -> record, while augmenting
    for i in names:

        def augment(record: int, seen: set[int]) -> bool:
            for j in names[record]:
                if j not in seen:
                    seen.add(j)
                    if j not in owner or augment(owner[j], seen):
                        owner[j] = record
                        return True
            return False

        augment(i, set())
    return {record: episode for episode, record in owner.items()}


def _mentions(text: str, tool_use_id: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(tool_use_id)}(?![\w-])", text) is not None


def score(
    session_labels: dict[str, dict[str, Any]],
    calls: list[CallRecord],
    records: list[str] | None,
    episodes_mined: int | None,
) -> Scores:
    """``session_labels``: the labels of the replayed, labelled sessions; ``records``: stored
    episodes as text (None: the server keeps none we can read); ``episodes_mined``: what the
    miner reported for those sessions (None: unknown)."""
    scores = Scores()
    episodes = [e for label in session_labels.values() for e in label.get("episodes", [])]
    required = [e for e in episodes if not e.get("optional")]
    scores.episodes_labelled = len(required)
    if records is not None:
        owner = _assign(episodes, records)
        found_required = sum(1 for j in owner.values() if not episodes[j].get("optional"))
        scores.episodes_found = found_required
        scores.episode_recall = _ratio(found_required, len(required))
        scores.missed = [
            f"{sid[:8]}:{e['red']}"
            for sid, label in session_labels.items()
            for e in label.get("episodes", [])
            if not e.get("optional") and episodes.index(e) not in owner.values()
        ]
        if episodes_mined:
            scores.episode_precision = min(1.0, len(owner) / episodes_mined)
    outcome_at = {c.tool_use_id: c for c in calls if c.tool == OUTCOME_TOOL and c.tool_use_id}
    recurring = [r for label in session_labels.values() for r in label.get("recurring_failures", [])]
    scores.recurring_failures = len(recurring)
    top = any_hit = 0
    for failure in recurring:
        call = outcome_at.get(failure["tool_use_id"])
        hints = [line for line in (call.context if call else "").splitlines() if line.strip()]
        fixes = failure.get("fix_files", [])
        top += bool(hints) and names_any(hints[0], fixes)
        any_hit += any(names_any(hint, fixes) for hint in hints)
    scores.fix_hint_recall_at_1 = _ratio(top, len(recurring))
    scores.fix_hint_recall_any = _ratio(any_hit, len(recurring))
    recurring_ids = {r["tool_use_id"] for r in recurring}
    first_time = [
        c
        for c in calls
        if c.tool == OUTCOME_TOOL
        and c.event == "PostToolUseFailure"
        and c.session_id in session_labels
        and c.tool_use_id not in recurring_ids
    ]
    scores.first_time_failures = len(first_time)
    scores.first_time_nothing = _ratio(sum(not c.context for c in first_time), len(first_time))
    if records is None:
        scores.notes.append("no stored episode records to match (no fix index, no auto experience found)")
    if not episodes_mined:
        scores.notes.append("the miner reported no episodes for the labelled sessions")
    return scores
