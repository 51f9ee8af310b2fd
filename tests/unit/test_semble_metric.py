"""NDCG@10 of ``bench semble`` on hand-computed cases: our figure must mean what the published ones mean."""

from __future__ import annotations

import math

import pytest

from bench.semble_data import Hit, Target, hits_of, mean_by_category, ndcg_at_10, parse_target, path_matches

LOG3 = math.log2(3)  # the discount at rank 2


def hit(path: str, start: int = 1, end: int = 10) -> Hit:
    return Hit(path, start, end)


def test_first_hit_is_the_target() -> None:
    assert ndcg_at_10([hit("a.py"), hit("b.py")], [Target("a.py")]) == 1.0


def test_nothing_found_and_no_targets_score_zero() -> None:
    assert ndcg_at_10([hit("x.py")], [Target("a.py")]) == 0.0
    assert ndcg_at_10([hit("a.py")], []) == 0.0


def test_ranks_are_over_hits_so_duplicates_of_one_file_push_the_target_down() -> None:
    # b.py is the third hit: 1 / log2(4) = 0.5, the ideal being 1.
    hits = [hit("a.py", 1, 5), hit("a.py", 6, 9), hit("b.py")]
    assert ndcg_at_10(hits, [Target("b.py")]) == pytest.approx(0.5)


def test_a_file_found_twice_counts_once() -> None:
    hits = [hit("a.py", 1, 5), hit("a.py", 6, 9)]
    assert ndcg_at_10(hits, [Target("a.py")]) == 1.0


def test_a_secondary_target_has_the_same_gain() -> None:
    # relevant a.py at rank 2, secondary c.py at rank 3; ideal: two gains at ranks 1 and 2.
    hits = [hit("x.py"), hit("a.py"), hit("c.py")]
    expected = (1 / LOG3 + 1 / 2) / (1 + 1 / LOG3)
    assert ndcg_at_10(hits, [Target("a.py"), Target("c.py")]) == pytest.approx(expected)
    assert expected == pytest.approx(0.69343, abs=1e-5)


def test_two_targets_first_found_at_one_rank_count_once() -> None:
    # Both spans overlap the first hit: one gain at rank 1 against an ideal of two.
    targets = [Target("lib/r.js", 10, 20), Target("lib/r.js", 30, 40)]
    assert ndcg_at_10([hit("lib/r.js", 1, 50)], targets) == pytest.approx(1 / (1 + 1 / LOG3))


def test_a_line_span_needs_an_overlapping_hit() -> None:
    target = Target("lib/response.js", 125, 230)
    # The first hit is in the file but ends before the span; the second overlaps its start.
    hits = [hit("lib/response.js", 1, 124), hit("lib/response.js", 100, 125)]
    assert ndcg_at_10(hits, [target]) == pytest.approx(1 / LOG3)
    assert ndcg_at_10([hit("lib/response.js", 231, 300)], [target]) == 0.0
    assert ndcg_at_10([hit("lib/response.js", 230, 231)], [target]) == 1.0


def test_paths_match_when_equal_or_one_is_below_a_folder_of_the_other() -> None:
    assert path_matches("src/flask/app.py", "src/flask/app.py")
    assert path_matches("app.py", "src/flask/app.py")
    assert path_matches("/tmp/x/src/flask/app.py", "src/flask/app.py")
    assert not path_matches("src/flask/sansio/app.py", "src/flask/app.py")
    assert not path_matches("src/flask/myapp.py", "app.py")
    assert path_matches("src\\flask\\app.py", "flask/app.py")


def test_the_ideal_is_ten_gains_when_there_are_more_than_ten_targets() -> None:
    targets = [Target(f"t{i}.py") for i in range(12)]
    all_ten = [hit(f"t{i}.py") for i in range(10)]
    assert ndcg_at_10(all_ten, targets) == pytest.approx(1.0)
    five = [hit(f"t{i}.py") for i in range(5)] + [hit(f"x{i}.py") for i in range(5)]
    ideal = sum(1 / math.log2(r + 1) for r in range(1, 11))
    found = sum(1 / math.log2(r + 1) for r in range(1, 6))
    assert ndcg_at_10(five, targets) == pytest.approx(found / ideal)


def test_hits_beyond_ten_do_not_count() -> None:
    hits = [hit(f"x{i}.py") for i in range(10)] + [hit("a.py")]
    assert ndcg_at_10(hits, [Target("a.py")]) == 0.0


def test_targets_parse_with_and_without_spans() -> None:
    assert parse_target("a.py") == Target("a.py")
    assert parse_target({"path": "a.py", "start_line": 3, "end_line": 9}) == Target("a.py", 3, 9)


def test_hit_paths_are_made_relative_to_the_repository_root() -> None:
    found = [{"file_path": "sansio/app.py", "start_line": 1, "end_line": 2}]
    assert hits_of(found, "src/flask") == [Hit("src/flask/sansio/app.py", 1, 2)]
    assert hits_of(found, None) == [Hit("sansio/app.py", 1, 2)]


def test_category_means_are_over_the_repositories_that_have_the_category() -> None:
    per_repo = {
        "a": {"ndcg10": 0.5, "by_category": {"semantic": 0.4, "symbol": 1.0}},
        "b": {"ndcg10": 0.7, "by_category": {"semantic": 0.6}},
    }
    summary = mean_by_category(per_repo)
    assert summary["all"] == pytest.approx(0.6)
    assert summary["semantic"] == pytest.approx(0.5)
    assert summary["symbol"] == pytest.approx(1.0)
    assert math.isnan(summary["architecture"])
