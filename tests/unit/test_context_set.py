"""The labelled sets of `python -m bench context` and `python -m bench recall` are well formed, so
a mistake in one fails here in milliseconds instead of minutes into a benchmark run (or, worse,
skews its recall silently)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from learning_memory.shared.contracts.experiences import (
    DOMAINS,
    MAX_GHAP_FIELD_CHARS,
    MAX_RESOLUTION_FIELD_CHARS,
    OUTCOME_STATUSES,
    ROOT_CAUSE_CATEGORIES,
    STRATEGIES,
)
from learning_memory.shared.contracts.memory import CATEGORIES

DATA = Path(__file__).resolve().parents[2] / "bench" / "data"
PROMPT_KINDS = {"related", "unrelated", "near_miss"}


@pytest.fixture(scope="module", params=["context_set.json", "recall_set.json"])
def labelled(request: pytest.FixtureRequest) -> dict[str, Any]:
    labelled: dict[str, Any] = json.loads((DATA / request.param).read_text())
    return labelled


def test_ids_are_unique_across_the_whole_set(labelled: dict[str, Any]) -> None:
    ids = [item["id"] for part in ("experiences", "memories", "prompts") for item in labelled[part]]
    assert [i for i, n in Counter(ids).items() if n > 1] == []


def test_experiences_pass_resolve_ghap_validation(labelled: dict[str, Any]) -> None:
    for e in labelled["experiences"]:
        assert e["domain"] in DOMAINS, e["id"]
        assert e["strategy"] in STRATEGIES, e["id"]
        assert e["status"] in OUTCOME_STATUSES, e["id"]
        for name in ("goal", "hypothesis", "action", "prediction"):
            assert 0 < len(e[name].strip()) <= MAX_GHAP_FIELD_CHARS, (e["id"], name)
        assert 0 < len(e["result"].strip()) <= MAX_RESOLUTION_FIELD_CHARS, e["id"]
        if e["status"] == "falsified":
            # resolve_ghap refuses a falsified outcome without both.
            assert e.get("surprise"), e["id"]
            assert e.get("root_cause", {}).get("category") in ROOT_CAUSE_CATEGORIES, e["id"]
            assert e["root_cause"].get("description"), e["id"]
        if e["status"] == "abandoned":
            assert "lesson" not in e, e["id"]
        if "lesson" in e:
            assert e["lesson"]["what_worked"], e["id"]


def test_the_history_is_varied(labelled: dict[str, Any]) -> None:
    experiences = labelled["experiences"]
    assert 20 <= len(experiences) <= 70
    assert set(Counter(e["status"] for e in experiences)) == set(OUTCOME_STATUSES)
    assert len({e["domain"] for e in experiences}) == len(DOMAINS)


def test_memories_are_storable(labelled: dict[str, Any]) -> None:
    for m in labelled["memories"]:
        assert m["category"] in CATEGORIES, m["id"]
        assert 0.0 <= m["importance"] <= 1.0, m["id"]
        assert m["content"].strip(), m["id"]


def test_every_expected_id_is_seeded(labelled: dict[str, Any]) -> None:
    seeded = {item["id"] for part in ("experiences", "memories") for item in labelled[part]}
    for prompt in labelled["prompts"]:
        assert set(prompt["expected"]) <= seeded, prompt["id"]


def test_related_prompts_expect_something_and_the_others_nothing(labelled: dict[str, Any]) -> None:
    for prompt in labelled["prompts"]:
        assert prompt["kind"] in PROMPT_KINDS, prompt["id"]
        assert prompt["text"].strip(), prompt["id"]
        if prompt["kind"] == "related":
            assert 1 <= len(prompt["expected"]) <= 3, prompt["id"]
        else:
            assert prompt["expected"] == [], prompt["id"]
    kinds = Counter(prompt["kind"] for prompt in labelled["prompts"])
    assert kinds["related"] >= 40
    assert kinds["unrelated"] >= 30


def test_prompts_do_not_copy_the_stored_text(labelled: dict[str, Any]) -> None:
    """A prompt that repeats its target's goal would measure string matching, not recall."""
    items = {item["id"]: item for part in ("experiences", "memories") for item in labelled[part]}
    for prompt in labelled["prompts"]:
        for expected in prompt["expected"]:
            stored = items[expected].get("goal") or items[expected]["content"]
            assert prompt["text"].lower() != stored.lower(), prompt["id"]
            assert stored.lower() not in prompt["text"].lower(), prompt["id"]


def test_dates_are_told_before_the_prompts_are_typed(labelled: dict[str, Any]) -> None:
    """``bench recall`` dates the records in the set's stretch of time (or at their own
    ``created``) and reads "yesterday" at the set's ``now`` (or a prompt's own ``asked``)."""
    dated = {end: datetime.fromisoformat(labelled["dated"][end]) for end in ("from", "to", "now")}
    assert all(when.tzinfo is not None for when in dated.values())
    assert dated["from"] < dated["to"] <= dated["now"]
    records = [item for part in ("experiences", "memories") for item in labelled[part]]
    for record in (r for r in records if "created" in r):
        assert dated["from"] <= datetime.fromisoformat(record["created"]) <= dated["to"], record["id"]
    for prompt in (p for p in labelled["prompts"] if "asked" in p):
        assert datetime.fromisoformat(prompt["asked"]) >= dated["now"], prompt["id"]


def test_the_second_set_names_only_bundled_themes() -> None:
    from learning_memory.cli.samples import THEMES

    second = json.loads((DATA / "context_themes.json").read_text())
    prompts = second["prompts"]
    assert len({p["id"] for p in prompts}) == len(prompts)
    named = Counter(p["theme"] for p in prompts if p["theme"] is not None)
    assert set(named) == {theme.name for theme in THEMES}  # every theme asked about, none invented
    assert sum(p["theme"] is None for p in prompts) >= 10
