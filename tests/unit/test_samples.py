"""The bundled sample experiences, read from their data file: every story makes a valid GHAP
entry, and the generated sets are the same on every read."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from learning_memory.cli import samples
from learning_memory.cli.samples import THEMES, SampleEntry, demo_entries, generated_entries
from learning_memory.shared.contracts.experiences import DOMAINS, STRATEGIES


def test_the_data_file_holds_eight_themes_of_known_domains_and_strategies() -> None:
    assert len(THEMES) == 8
    assert len({theme.name for theme in THEMES}) == len(THEMES)
    for theme in THEMES:
        assert theme.domain in DOMAINS
        assert set(theme.strategies) <= set(STRATEGIES)
        assert theme.stories


def test_every_story_resolves_into_a_valid_entry() -> None:
    created = datetime(2025, 1, 1, tzinfo=UTC)
    for number, theme in enumerate(THEMES):
        for n, (goal, hypothesis, action, prediction, outcome) in enumerate(theme.stories):
            start = {
                "domain": theme.domain,
                "strategy": theme.strategies[0],
                "goal": goal,
                "hypothesis": hypothesis,
                "action": action,
                "prediction": prediction,
            }
            sample = SampleEntry(number, start, samples._resolve_arguments(outcome))
            entry = sample.resolved_entry(f"sample-{number}-{n}", "session", created)
            assert entry.resolution is not None and entry.resolution.status == outcome[0]


def test_reading_the_file_again_gives_the_same_themes_and_entries() -> None:
    assert samples._load_themes() == THEMES
    assert len(demo_entries()) == 8 * len(THEMES)
    assert generated_entries(100) == generated_entries(100)
    assert demo_entries() == generated_entries(64, seed=1)


def test_outcomes_are_read_in_each_shape() -> None:
    abandoned = samples._outcome({"status": "abandoned", "result": "gave up"})
    assert abandoned == ("abandoned", "gave up")
    assert samples._resolve_arguments(abandoned) == {"status": "abandoned", "result": "gave up"}
    with pytest.raises(ValueError, match="unknown outcome status"):
        samples._outcome({"status": "postponed", "result": "later"})
