"""The learning tools through an MCP client, in-process (inline mode, hashing embedder, a real
journal and vector store in a temporary folder): the retro workflow after resolving GHAP entries,
and every bad input refused with a validation error the model can act on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from learning_memory.cli.samples import generated_entries
from learning_memory.shared.contracts.experiences import AXES
from tests.mcp_thread import ThreadedClient, error, inline_client, ok


@pytest.fixture
def mcp(tmp_path: Path) -> Iterator[ThreadedClient]:
    with inline_client(tmp_path) as client:
        yield client


def resolve_samples(mcp: ThreadedClient, count: int) -> None:
    for sample in generated_entries(count, seed=5):
        ok(mcp, "start_ghap", **sample.start)
        ok(mcp, "resolve_ghap", **sample.resolve)


def test_retro_workflow(mcp: ThreadedClient) -> None:
    assert error(mcp, "get_clusters", axis="full")["type"] == "not_found"
    resolve_samples(mcp, 10)
    too_few = error(mcp, "get_clusters", axis="full")
    assert too_few["type"] == "insufficient_data" and "10 experiences" in too_few["message"]
    resolve_samples(mcp, 70)

    clusters = ok(mcp, "get_clusters", axis="full")
    assert clusters["axis"] == "full" and clusters["count"] == len(clusters["clusters"]) >= 3
    assert {"clustering_id", "noise_count", "experience_count"} <= set(clusters)
    biggest = clusters["clusters"][0]
    assert biggest["cluster_id"] == "cluster_full_0" and biggest["label"] == 0
    assert set(biggest) == {"cluster_id", "label", "size", "avg_weight"}

    members = ok(mcp, "get_cluster_members", cluster_id="full_0", limit=5)
    assert members["cluster_id"] == "cluster_full_0" and members["count"] == 5
    member = members["members"][0]
    for key in ("id", "ghap_id", "goal", "hypothesis", "action", "prediction", "outcome_status"):
        assert member[key]
    for key in ("outcome_result", "surprise", "root_cause", "lesson", "confidence_tier", "created_at"):
        assert key in member
    assert 0 <= member["similarity_to_centroid"] <= 1

    # The most typical member's own story, as it was embedded: as close to the centroid as a text gets.
    typical = "\n".join(
        [
            f"Goal: {member['goal']}",
            f"Hypothesis: {member['hypothesis']}",
            f"Action: {member['action']}",
            f"Prediction: {member['prediction']}",
            f"Outcome: {member['outcome_status']}, {member['outcome_result']}",
        ]
    )[:500]
    refused = error(
        mcp, "store_value", text="Bake bread at 250 degrees", cluster_id="cluster_full_0", axis="full"
    )
    assert refused["type"] == "validation_error" and "threshold" in refused["message"]
    assert ok(mcp, "list_values")["count"] == 0

    checked = ok(mcp, "validate_value", text=typical, cluster_id="cluster_full_0")
    assert checked["valid"], checked
    assert checked["reason"] is None and checked["centroid_distance"] <= checked["threshold_distance"]
    stored = ok(mcp, "store_value", text=typical, cluster_id="cluster_full_0", axis="full")
    assert stored["cluster_id"] == "cluster_full_0" and stored["clustering_id"] == clusters["clustering_id"]
    assert set(stored) == {
        "id",
        "text",
        "axis",
        "cluster_id",
        "cluster_size",
        "similarity_to_centroid",
        "created_at",
        "clustering_id",
        "age_days",
        "support",
        "weight",
        "anchors",
    }
    assert (stored["age_days"], stored["support"], stored["weight"]) == (0.0, stored["cluster_size"], 1.0)
    listed = ok(mcp, "list_values", axis="full")
    assert [value["id"] for value in listed["results"]] == [stored["id"]]
    [value] = listed["results"]
    assert value["support"] == stored["cluster_size"] and 0.99 < value["weight"] <= 1.0
    assert 0.0 <= value["age_days"] < 1.0
    assert ok(mcp, "list_values", axis="strategy") == {"results": [], "count": 0}

    # A new experience on the axis makes a new clustering.
    resolve_samples(mcp, 1)
    assert ok(mcp, "get_clusters", axis="full")["clustering_id"] != clusters["clustering_id"]


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "cluster_",
        "cluster_full",
        "cluster_colour_1",
        "full-1",
        "cluster_full_-1",
        "cluster_full_x",
        "c_full_1",
    ],
)
def test_malformed_cluster_id_lists_the_valid_forms(mcp: ThreadedClient, bad: str) -> None:
    for tool, extra in (
        ("get_cluster_members", {}),
        ("validate_value", {"text": "a value"}),
        ("store_value", {"text": "a value", "axis": "full"}),
    ):
        found = error(mcp, tool, cluster_id=bad, **extra)
        assert found["type"] == "validation_error"
        assert "cluster_{axis}_{label}" in found["message"] and "{axis}_{label}" in found["message"]
        assert all(axis in found["message"] for axis in AXES)


def test_bad_axis_lists_the_axes(mcp: ThreadedClient) -> None:
    for tool, arguments in (
        ("get_clusters", {"axis": "colour"}),
        ("list_values", {"axis": "colour"}),
        ("store_value", {"text": "v", "cluster_id": "cluster_full_0", "axis": "colour"}),
    ):
        found = error(mcp, tool, **arguments)
        assert found["type"] == "validation_error"
        assert all(axis in found["message"] for axis in AXES), found


def test_value_text_and_limits_are_checked(mcp: ThreadedClient) -> None:
    for text, expected in (("   ", "must not be empty"), ("x" * 501, "limit is 500")):
        for tool, extra in (("validate_value", {}), ("store_value", {"axis": "full"})):
            found = error(mcp, tool, text=text, cluster_id="cluster_full_0", **extra)
            assert found["type"] == "validation_error" and expected in found["message"]
    mismatch = error(mcp, "store_value", text="v", cluster_id="cluster_root_cause_1", axis="full")
    assert mismatch["type"] == "validation_error" and "axis root_cause, not full" in mismatch["message"]
    for limit in (0, 101):
        assert (
            "between 1 and 100"
            in error(mcp, "get_cluster_members", cluster_id="full_0", limit=limit)["message"]
        )
        assert "between 1 and 100" in error(mcp, "list_values", limit=limit)["message"]


def test_unknown_cluster_is_not_found(mcp: ThreadedClient) -> None:
    resolve_samples(mcp, 24)
    found = error(mcp, "get_cluster_members", cluster_id="cluster_full_50")
    assert found["type"] == "not_found" and "get_clusters" in found["message"]
