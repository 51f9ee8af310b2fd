"""The refinement-loop tools through an MCP client, in-process (inline mode, a real state
folder in a temporary directory): the workflow, the limits from the environment, a restart,
retention, and every invalid input."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from learning_memory.composition import build_server
from learning_memory.shared.loop_settings import LOOP_TYPES
from learning_memory.shared.settings import Settings, load_settings
from tests.mcp_thread import ThreadedClient, error, inline_settings, ok, threaded_client


@pytest.fixture(autouse=True)
def _no_loop_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in list(os.environ):
        if var.startswith("FSDD_LOOP_"):
            monkeypatch.delenv(var)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return inline_settings(tmp_path, "hashing:8")


@pytest.fixture
def mcp(settings: Settings) -> Iterator[ThreadedClient]:
    with threaded_client(build_server(settings)) as client:
        yield client


def test_the_seeds_workflow_with_status_and_listing(mcp: ThreadedClient) -> None:
    started = ok(mcp, "initialize_refinement_loop", loop_type="spec")
    assert re.fullmatch(r"[0-9a-f]{8}", started["id"]) and started["status"] == "initialized"
    assert started["threshold"] == 85 and started["max_iterations"] == 5

    refine = ok(mcp, "decide_loop_next_action", loop_id=started["id"], current_score=70)
    assert refine["id"] == started["id"] and refine["status"] == "refine" and refine["iteration"] == 1
    assert "below the threshold 85" in refine["reason"]
    done = ok(mcp, "decide_loop_next_action", loop_id=started["id"], current_score=90)
    assert done["status"] == "completed"

    status = ok(mcp, "get_loop_status", loop_id=started["id"])
    assert status["loop_type"] == "spec" and status["threshold"] == 85
    assert status["iteration"] == 1 and status["current_score"] == 90
    assert status["score_history"] == [70, 90] and status["status"] == "completed"
    assert status["created_at"] <= status["updated_at"]

    other = ok(mcp, "initialize_refinement_loop", loop_type="build_code")
    listed = ok(mcp, "list_active_loops")
    assert listed["count"] == 2
    assert [(loop["id"], loop["status"]) for loop in listed["loops"]] == [
        (other["id"], "initialized"),
        (started["id"], "completed"),
    ]


def test_stagnation_escalates_and_a_finished_loop_refuses_scores(mcp: ThreadedClient) -> None:
    loop_id = ok(mcp, "initialize_refinement_loop", loop_type="plan")["id"]
    statuses = [
        ok(mcp, "decide_loop_next_action", loop_id=loop_id, current_score=score)["status"]
        for score in (50, 65, 70, 73, 75)
    ]
    assert statuses == ["refine", "refine", "refine", "refine", "user_input"]
    refused = error(mcp, "decide_loop_next_action", loop_id=loop_id, current_score=99)
    assert refused["type"] == "validation_error" and "already user_input" in refused["message"]
    assert ok(mcp, "get_loop_status", loop_id=loop_id)["score_history"] == [50, 65, 70, 73, 75]


@pytest.mark.parametrize("loop_type", LOOP_TYPES)
def test_each_threshold_and_limit_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, settings: Settings, loop_type: str
) -> None:
    monkeypatch.setenv(f"FSDD_LOOP_{loop_type.upper()}_THRESHOLD", "60")
    monkeypatch.setenv(f"FSDD_LOOP_{loop_type.upper()}_MAX_ITERATIONS", "2")
    with threaded_client(build_server(settings)) as mcp:
        loop_id = ok(mcp, "initialize_refinement_loop", loop_type=loop_type)["id"]
        status = ok(mcp, "get_loop_status", loop_id=loop_id)
        assert (status["threshold"], status["max_iterations"]) == (60, 2)
        decided = [
            ok(mcp, "decide_loop_next_action", loop_id=loop_id, current_score=s)["status"]
            for s in (10, 30, 50)
        ]
        assert decided == ["refine", "refine", "user_input"]  # the limit, not stagnation
        again = ok(mcp, "initialize_refinement_loop", loop_type=loop_type)["id"]
        assert ok(mcp, "decide_loop_next_action", loop_id=again, current_score=60)["status"] == "completed"


def test_loops_survive_a_server_restart(settings: Settings) -> None:
    with threaded_client(build_server(settings)) as first:
        loop_id = ok(first, "initialize_refinement_loop", loop_type="build_plan")["id"]
        ok(first, "decide_loop_next_action", loop_id=loop_id, current_score=40)
    with threaded_client(build_server(settings)) as second:
        status = ok(second, "get_loop_status", loop_id=loop_id)
        assert status["status"] == "refine" and status["score_history"] == [40]
        assert (
            ok(second, "decide_loop_next_action", loop_id=loop_id, current_score=80)["status"] == "completed"
        )
        assert [loop["id"] for loop in ok(second, "list_active_loops")["loops"]] == [loop_id]
    assert (settings.state_folder / "loops.json").exists()


def test_the_ten_most_recent_loops_are_kept(mcp: ThreadedClient) -> None:
    ids = [ok(mcp, "initialize_refinement_loop", loop_type="plan")["id"] for _ in range(12)]
    listed = ok(mcp, "list_active_loops")
    assert listed["count"] == 10 and [loop["id"] for loop in listed["loops"]] == ids[::-1][:10]
    assert error(mcp, "get_loop_status", loop_id=ids[0])["type"] == "not_found"


def test_no_loops_yet(mcp: ThreadedClient) -> None:
    assert ok(mcp, "list_active_loops") == {"loops": [], "count": 0}


@pytest.mark.parametrize("loop_type", ["", "code", "plans", "build-plan", "planx"])
def test_an_invalid_loop_type_lists_the_options(mcp: ThreadedClient, loop_type: str) -> None:
    refused = error(mcp, "initialize_refinement_loop", loop_type=loop_type)
    assert refused["type"] == "validation_error"
    assert all(option in refused["message"] for option in LOOP_TYPES)


def test_loop_type_forgives_case_and_spaces(mcp: ThreadedClient) -> None:
    assert ok(mcp, "initialize_refinement_loop", loop_type=" Build_Code ")["threshold"] == 95


@pytest.mark.parametrize("score", [-1, 101, 1000])
def test_a_score_outside_0_to_100_gives_the_range(mcp: ThreadedClient, score: int) -> None:
    loop_id = ok(mcp, "initialize_refinement_loop", loop_type="plan")["id"]
    refused = error(mcp, "decide_loop_next_action", loop_id=loop_id, current_score=score)
    assert refused["type"] == "validation_error" and "between 0 and 100" in refused["message"]
    assert ok(mcp, "get_loop_status", loop_id=loop_id)["score_history"] == []  # nothing changed


@pytest.mark.parametrize("score", ["high", 72.5, None, [70]])
def test_a_score_that_is_not_an_integer_is_refused(mcp: ThreadedClient, score: object) -> None:
    loop_id = ok(mcp, "initialize_refinement_loop", loop_type="plan")["id"]
    refused = error(mcp, "decide_loop_next_action", loop_id=loop_id, current_score=score)
    assert refused["type"] == "validation_error" and "current_score" in refused["message"]


@pytest.mark.parametrize("tool", ["decide_loop_next_action", "get_loop_status"])
@pytest.mark.parametrize("loop_id", ["deadbeef", "nope", ""])
def test_an_unknown_loop_is_not_found(mcp: ThreadedClient, tool: str, loop_id: str) -> None:
    arguments: dict[str, object] = {"loop_id": loop_id} | ({"current_score": 50} if "decide" in tool else {})
    refused = error(mcp, tool, **arguments)
    assert refused["type"] == "not_found" and "initialize_refinement_loop" in refused["message"]


def test_missing_arguments_are_validation_errors(mcp: ThreadedClient) -> None:
    assert error(mcp, "initialize_refinement_loop")["type"] == "validation_error"
    assert error(mcp, "decide_loop_next_action", loop_id="deadbeef")["type"] == "validation_error"
    assert error(mcp, "get_loop_status", loop_id="x" * 65)["type"] == "validation_error"


def test_an_unusable_state_folder_fails_only_the_loop_tools(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "state").write_text("not a folder")
    settings = load_settings(queue="inline", data_dir=data, journal_dir=tmp_path / "journal")
    with threaded_client(build_server(settings)) as mcp:
        refused = error(mcp, "initialize_refinement_loop", loop_type="plan")
        assert refused["type"] == "storage_error" and str(data / "state") in refused["message"]
        assert error(mcp, "list_active_loops")["type"] == "storage_error"
