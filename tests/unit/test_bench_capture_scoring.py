"""Scores of ``bench capture`` against labels: episodes found, fix hints, silent first failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.capture.runner import CallRecord
from bench.capture.scoring import LABELS_JSON, files_in, labelled, load_labels, score, sha256

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
LABELS: dict[str, dict[str, Any]] = {
    "s1": {
        "episodes": [
            {"red": "t-red", "green": "t-green", "fix_files": ["src/app/totals.py"]},
            {"red": "t-lint", "green": "t-lint-ok", "fix_files": ["src/app/x.py"], "optional": True},
        ]
    },
    "s2": {
        "episodes": [
            {"red": "u-red", "reds": ["u-red2"], "green": "u-green", "fix_files": ["src/app/totals.py"]}
        ],
        "recurring_failures": [{"tool_use_id": "u-red", "fix_files": ["src/app/totals.py"]}],
    },
}


def _outcome(session: str, tool_use_id: str, context: str = "", failed: bool = True) -> CallRecord:
    event = "PostToolUseFailure" if failed else "PostToolUse"
    return CallRecord(session, event, "hook_tool_outcome", tool_use_id, 0.01, context=context)


def test_episodes_are_found_by_a_failing_run_or_by_the_passing_run_with_a_fix_file() -> None:
    records = [
        "{'red': 'u-red2', 'green': 'u-green'}",  # a later failing run of the span is enough
        "{'run': 't-green', 'files': '/tmp/w/wt0/src/app/totals.py'}",
        "{'run': 't-lint-ok', 'files': 'README.md'}",  # the passing run alone is not
    ]

    scores = score(LABELS, [], records, episodes_mined=4)

    assert (scores.episodes_found, scores.episodes_labelled, scores.episode_recall) == (2, 2, 1.0)
    assert scores.episode_precision == 0.5  # 2 labelled episodes among 4 mined


def test_without_records_or_mined_episodes_those_scores_are_not_given() -> None:
    scores = score(LABELS, [], None, None)

    assert scores.episode_recall is None and scores.episode_precision is None
    assert len(scores.notes) == 2


def test_fix_hint_recall_reads_the_first_hint_then_any() -> None:
    first = "Learning memory: seen before: tests/test_totals.py::test_x — fixed by editing src/app/totals.py"
    second = "Learning memory: seen before: something else — fixed by editing src/app/other.py"
    calls = [_outcome("s2", "u-red", f"{second}\n{first}")]

    scores = score(LABELS, calls, None, None)

    assert (scores.recurring_failures, scores.fix_hint_recall_at_1, scores.fix_hint_recall_any) == (
        1,
        0.0,
        1.0,
    )
    assert score(LABELS, [_outcome("s2", "u-red", first)], None, None).fix_hint_recall_at_1 == 1.0


def test_first_time_failures_of_labelled_sessions_that_got_nothing() -> None:
    calls = [
        _outcome("s1", "t-red"),
        _outcome("s1", "t-lint", "Learning memory: a hint nobody asked for"),
        _outcome("s2", "u-red", "a hint"),  # recurring: not a first-time failure
        _outcome("s1", "t-green", failed=False),  # not a failure
        _outcome("other", "v-red"),  # not labelled
    ]

    scores = score(LABELS, calls, None, None)

    assert (scores.first_time_failures, scores.first_time_nothing) == (2, 0.5)


def test_paths_in_text() -> None:
    text = (
        "fixed by editing config/test.exs (lib/a_b/c.ex:42) e.g. in /tmp/x/wt1/mix.exs, 1.5s; see README.md"
    )

    assert files_in(text) == ["config/test.exs", "lib/a_b/c.ex", "/tmp/x/wt1/mix.exs", "README.md"]


def test_the_fixtures_are_labelled_as_they_are() -> None:
    labels = load_labels(LABELS_JSON)
    for path in FIXTURES.glob("*.jsonl"):
        session_id = {"rounding-fix": "7d3f0c2e-5b1a-4c8e-9f42-1a6b3c9d0e11"}.get(
            path.stem, "c41e9a77-2f0d-4b6a-8e13-5d2c7b8a9f30"
        )
        assert labelled(labels, session_id, sha256(path)) is not None, path
    assert labelled(labels, "7d3f0c2e-5b1a-4c8e-9f42-1a6b3c9d0e11", "0" * 64) is None


def test_one_mined_episode_that_spans_two_labelled_ones_finds_one() -> None:
    labels = {
        "s": {
            "episodes": [
                {"red": "a-red", "green": "a-green", "fix_files": ["a.py"]},
                {"red": "b-red", "green": "b-green", "fix_files": ["src/b.py"]},
            ]
        }
    }
    spanning = "episode e1 first a-red last b-green files src/b.py"

    scores = score(labels, [], [spanning], episodes_mined=1)

    assert (scores.episodes_found, scores.episode_precision) == (1, 1.0)
    assert scores.missed == ["s:b-red"]  # the first red claims it; the second episode is left
    both = score(labels, [], [spanning, "episode e2 first b-red last b-green files src/b.py"], 2)
    assert (both.episodes_found, both.episode_precision, both.missed) == (2, 1.0, [])
