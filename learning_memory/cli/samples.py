"""A bundled sample set of realistic GHAP experiences in known themes (no model needed to read it).

Experiences are made by recombining the parts of a theme's stories (goal of one, hypothesis of
another, ...), so any number of distinct texts can be made, each labelled with its theme:
``make run`` resolves :func:`demo_entries` through the GHAP tools so that the learning tools
have real clusters to show, and the learning benchmark and tests check that clustering finds
the themes again.

The themes and their stories are data, ``sample_experiences.json`` beside this module. A story
is read as (goal, hypothesis, action, prediction, outcome); the outcome as ``("confirmed",
result, lesson)``, ``("falsified", result, surprise, root-cause category, root-cause
description, lesson)`` or ``("abandoned", result)``.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import resources
from typing import Any

from learning_memory.shared.contracts.experiences import (
    GhapEntry,
    Lesson,
    Resolution,
    RootCause,
    confidence_tier,
)

Story = tuple[str, str, str, str, tuple[str, ...]]

DATA_FILE = "sample_experiences.json"


@dataclass(frozen=True)
class Theme:
    name: str
    domain: str
    strategies: tuple[str, ...]
    stories: tuple[Story, ...]


def _outcome(outcome: dict[str, Any]) -> tuple[str, ...]:
    status, result = outcome["status"], outcome["result"]
    if status == "confirmed":
        return (status, result, outcome["lesson"])
    if status == "falsified":
        cause = outcome["root_cause"]
        return (
            status,
            result,
            outcome["surprise"],
            cause["category"],
            cause["description"],
            outcome["lesson"],
        )
    if status == "abandoned":
        return (status, result)
    raise ValueError(f"{DATA_FILE}: unknown outcome status {status!r}")


def _story(story: dict[str, Any]) -> Story:
    return (
        story["goal"],
        story["hypothesis"],
        story["action"],
        story["prediction"],
        _outcome(story["outcome"]),
    )


def _load_themes() -> tuple[Theme, ...]:
    """The themes of the bundled data file, in its order (the generated entries depend on it)."""
    document = json.loads(
        resources.files("learning_memory.cli").joinpath(DATA_FILE).read_text(encoding="utf-8")
    )
    return tuple(
        Theme(
            theme["name"],
            theme["domain"],
            tuple(theme["strategies"]),
            tuple(_story(story) for story in theme["stories"]),
        )
        for theme in document["themes"]
    )


THEMES: tuple[Theme, ...] = _load_themes()


def _resolve_arguments(outcome: tuple[str, ...], with_lesson: bool = True) -> dict[str, Any]:
    status, result = outcome[0], outcome[1]
    answer: dict[str, Any] = {"status": status, "result": result}
    if status == "falsified":
        _, _, surprise, category, description, lesson = outcome
        answer["surprise"] = surprise
        answer["root_cause"] = {"category": category, "description": description}
    elif status == "confirmed":
        lesson = outcome[2]
    else:
        return answer
    if with_lesson:
        answer["lesson"] = {"what_worked": lesson}
    return answer


@dataclass(frozen=True)
class SampleEntry:
    """One experience: the arguments of start_ghap and resolve_ghap, and its theme's index."""

    theme: int
    start: dict[str, Any]
    resolve: dict[str, Any]

    def resolved_entry(
        self, entry_id: str, session: str, created: datetime, *, orphaned: bool = False
    ) -> GhapEntry:
        """The resolved GHAP entry the journal would hand the persist job (tests and benchmarks
        store samples straight through the job, without a server)."""
        answer = self.resolve
        lesson = Lesson(**answer["lesson"]) if "lesson" in answer else None
        resolution = Resolution(
            status=answer["status"],
            result=answer["result"],
            surprise=answer.get("surprise"),
            root_cause=RootCause(**answer["root_cause"]) if "root_cause" in answer else None,
            lesson=lesson,
            confidence_tier=confidence_tier(answer["status"], lesson, orphaned),
            resolved_at=created + timedelta(minutes=20),
            resolved_in_session=session,
        )
        return GhapEntry(
            id=entry_id,
            session_id=session,
            created_at=created,
            updated_at=created,
            resolution=resolution,
            **self.start,
        )


def demo_entries() -> list[SampleEntry]:
    """What ``make run`` resolves: eight experiences per theme (64), enough for real clusters."""
    return generated_entries(8 * len(THEMES), seed=1)


def generated_entries(count: int, seed: int = 7) -> list[SampleEntry]:
    """``count`` experiences, each recombining the parts of its theme's stories (and numbered,
    so that no two texts are the same); themes take turns."""
    rng = random.Random(seed)
    entries = []
    for n in range(count):
        number = n % len(THEMES)
        theme = THEMES[number]
        parts = [rng.choice(theme.stories) for _ in range(5)]
        start = {
            "domain": theme.domain,
            "strategy": rng.choice(theme.strategies),
            "goal": f"{parts[0][0]} (ticket {1000 + n})",
            "hypothesis": parts[1][1],
            "action": parts[2][2],
            "prediction": parts[3][3],
        }
        entries.append(SampleEntry(number, start, _resolve_arguments(parts[4][4], rng.random() < 0.7)))
    return entries
