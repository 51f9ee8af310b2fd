"""LoCoMo (snap-research/locomo): ten long conversations, each turn stored as one memory.

The data is read from where ``--locomo`` points: the repository's ``data/locomo10.zip`` itself,
the ``locomo10_v2`` folder it holds (one JSON file per conversation), or a ``locomo10.json`` list. Each turn
becomes a memory as an agent would store it, ``"<speaker>: <text>"`` (with the shared photo's
caption when there is one), created at its session's date. Questions of categories 1-4 (multi-hop,
temporal, open-domain, single-hop) with evidence are asked of their own conversation's memories
(each conversation is one project); a question's recall@k is the share of its evidence turns
in the first k.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass(frozen=True)
class Turn:
    id: str  # "<conversation>:<dia_id>"
    conversation: str
    speaker: str
    text: str
    created_at: datetime


@dataclass(frozen=True)
class Question:
    conversation: str
    text: str
    category: str
    evidence: frozenset[str]


def _session_time(text: str) -> datetime:
    # "1:56 pm on 8 May, 2023"
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def _number(stem: str) -> int:
    return int(stem) if stem.isdigit() else 0


def _conversations(path: Path) -> list[tuple[str, dict[str, Any]]]:
    if path.is_dir():
        files = sorted(path.glob("*.json"), key=lambda p: _number(p.stem))
        return [(p.stem, json.loads(p.read_text())) for p in files]
    if zipfile.is_zipfile(path):  # the zip as the repository ships it: .../locomo10_v2/<n>.json
        with zipfile.ZipFile(path) as archive:
            members = [Path(n) for n in archive.namelist() if "locomo10_v2/" in n and n.endswith(".json")]
            members.sort(key=lambda member: _number(member.stem))
            return [(member.stem, json.loads(archive.read(member.as_posix()))) for member in members]
    items = json.loads(path.read_text())
    return [(str(item.get("sample_id", n)), item) for n, item in enumerate(items)]


def load(path: Path) -> tuple[list[Turn], list[Question]]:
    turns: list[Turn] = []
    questions: list[Question] = []
    for name, data in _conversations(path):
        conversation = data.get("conversation", data)
        number = 1
        while f"session_{number}" in conversation or f"session_{number}_date_time" in conversation:
            when_text = conversation.get(f"session_{number}_date_time")
            for turn in conversation.get(f"session_{number}") or []:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                when = _session_time(when_text) if when_text else datetime(2023, 1, 1, tzinfo=UTC)
                turns.append(Turn(f"{name}:{turn['dia_id']}", name, str(turn["speaker"]), text, when))
            number += 1
        for qa in data.get("qa", []):
            category = CATEGORIES.get(int(qa.get("category", 0)))
            evidence = frozenset(f"{name}:{e.strip()}" for e in qa.get("evidence", []) if e.strip())
            if category and evidence:
                questions.append(Question(name, str(qa["question"]), category, evidence))
    return turns, questions
