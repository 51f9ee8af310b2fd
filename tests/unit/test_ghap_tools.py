"""The GHAP tools and search_experiences through an MCP client, in-process (inline mode,
hashing embedder, a real journal and vector store in a temporary folder)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from learning_memory.shared.contracts.experiences import DOMAINS, OUTCOME_STATUSES, ROOT_CAUSE_CATEGORIES
from tests.helpers import wait_for
from tests.mcp_thread import ThreadedClient, error, inline_client, ok

START = {
    "domain": "debugging",
    "strategy": "read-the-error",
    "goal": "make the flaky login test pass",
    "hypothesis": "the session cookie expires between steps",
    "action": "freeze time in the test",
    "prediction": "the test passes ten times in a row",
}
FALSIFIED = {
    "status": "falsified",
    "result": "still flaky with time frozen",
    "surprise": "the failure came from a shared database fixture",
    "root_cause": {"category": "test-isolation", "description": "tests shared one database row"},
    "lesson": {"what_worked": "a fresh fixture per test", "takeaway": "suspect shared state first"},
}


@pytest.fixture
def mcp(tmp_path: Path) -> Iterator[ThreadedClient]:
    with inline_client(tmp_path, "hashing:256") as client:
        yield client


def test_full_cycle_is_found_on_the_right_axis_with_its_tier(mcp: ThreadedClient) -> None:
    assert ok(mcp, "get_active_ghap")["has_active"] is False
    started = ok(mcp, "start_ghap", **START)
    assert started["goal"] == START["goal"] and "warning" not in started
    assert (
        ok(mcp, "update_ghap", hypothesis="a race in the fixture", note="cookie was fine")["iteration_count"]
        == 2
    )
    assert (
        ok(mcp, "update_ghap", action="run the test alone", strategy="divide-and-conquer")["iteration_count"]
        == 3
    )
    active = ok(mcp, "get_active_ghap")
    assert active["has_active"] and active["id"] == started["id"] and active["iteration_count"] == 3
    assert active["strategy"] == "divide-and-conquer"

    resolved = ok(mcp, "resolve_ghap", **FALSIFIED)
    assert resolved["id"] == started["id"]
    assert resolved["status"] == "falsified" and resolved["confidence_tier"] == "gold"
    assert ok(mcp, "get_active_ghap")["has_active"] is False

    found = ok(mcp, "search_experiences", query="shared database fixture", axis="surprise")
    assert found["count"] == 1
    hit = found["results"][0]
    assert hit["ghap_id"] == started["id"] and hit["confidence_tier"] == "gold"
    assert hit["root_cause"] == FALSIFIED["root_cause"] and 0 <= hit["score"] <= 1
    assert (
        ok(mcp, "search_experiences", query="tests shared one database row", axis="root_cause")["count"] == 1
    )
    assert ok(mcp, "search_experiences", query="login", domain="security")["count"] == 0
    assert ok(mcp, "search_experiences", query="login", outcome="falsified")["count"] == 1

    listed = ok(mcp, "list_ghap_entries")
    assert listed["count"] == 1
    entry = listed["results"][0]
    assert entry["outcome_status"] == "falsified" and entry["confidence_tier"] == "gold"


def test_tiers(mcp: ThreadedClient) -> None:
    ok(mcp, "start_ghap", **START)
    assert ok(mcp, "resolve_ghap", status="confirmed", result="it passed")["confidence_tier"] == "silver"
    ok(mcp, "start_ghap", **START)
    assert ok(mcp, "resolve_ghap", status="abandoned", result="no time")["confidence_tier"] == "abandoned"


def test_starting_over_an_active_entry_archives_it_as_abandoned(mcp: ThreadedClient) -> None:
    first = ok(mcp, "start_ghap", **START)
    second = ok(mcp, "start_ghap", **{**START, "goal": "another goal"})
    assert first["id"] in second["warning"]
    listed = {e["id"]: e for e in ok(mcp, "list_ghap_entries")["results"]}
    assert listed[first["id"]]["outcome_status"] == "abandoned"
    assert listed[second["id"]]["outcome_status"] is None
    assert ok(mcp, "list_ghap_entries", outcome="abandoned")["count"] == 1


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"domain": "gardening"}, DOMAINS),
        ({"strategy": "luck"}, ("read-the-error", "ask-user")),
        ({"goal": "   "}, ("goal",)),
        ({"action": "x" * 1001}, ("action", "1,000")),
    ],
)
def test_start_validation(mcp: ThreadedClient, changes: dict[str, Any], words: tuple[str, ...]) -> None:
    failure = error(mcp, "start_ghap", **{**START, **changes})
    assert failure["type"] == "validation_error"
    assert all(word in failure["message"] for word in words)


def test_update_and_resolve_need_an_active_entry(mcp: ThreadedClient) -> None:
    failure = error(mcp, "update_ghap", note="x")
    assert failure["type"] == "not_found" and "start_ghap" in failure["message"]
    assert error(mcp, "resolve_ghap", status="confirmed", result="x")["type"] == "not_found"


def test_update_validation(mcp: ThreadedClient) -> None:
    ok(mcp, "start_ghap", **START)
    assert error(mcp, "update_ghap")["type"] == "validation_error"
    assert error(mcp, "update_ghap", note="n" * 1001)["type"] == "validation_error"
    assert error(mcp, "update_ghap", hypothesis="")["type"] == "validation_error"
    assert error(mcp, "update_ghap", strategy="hope")["type"] == "validation_error"


def test_resolve_validation(mcp: ThreadedClient) -> None:
    ok(mcp, "start_ghap", **START)
    no_surprise = error(
        mcp, "resolve_ghap", status="falsified", result="x", root_cause=FALSIFIED["root_cause"]
    )
    assert no_surprise["type"] == "validation_error" and "surprise" in no_surprise["message"]
    assert (
        error(mcp, "resolve_ghap", status="falsified", result="x", surprise="y")["type"] == "validation_error"
    )
    bad_cause = error(
        mcp, "resolve_ghap", **{**FALSIFIED, "root_cause": {"category": "bad-luck", "description": "d"}}
    )
    assert all(category in bad_cause["message"] for category in ROOT_CAUSE_CATEGORIES)
    assert "2,000" in error(mcp, "resolve_ghap", status="confirmed", result="r" * 2001)["message"]
    bad_status = error(mcp, "resolve_ghap", status="maybe", result="x")
    assert all(status in bad_status["message"] for status in OUTCOME_STATUSES)
    assert ok(mcp, "get_active_ghap")["has_active"]  # nothing was resolved by the refused calls


def test_list_and_search_validation(mcp: ThreadedClient) -> None:
    for limit in (0, 101):
        assert "between 1 and 100" in error(mcp, "list_ghap_entries", limit=limit)["message"]
    assert "ISO 8601" in error(mcp, "list_ghap_entries", since="last tuesday")["message"]
    assert error(mcp, "list_ghap_entries", domain="cooking")["type"] == "validation_error"
    assert "between 1 and 50" in error(mcp, "search_experiences", query="x", limit=51)["message"]
    assert error(mcp, "search_experiences", query="x", axis="mood")["type"] == "validation_error"
    assert ok(mcp, "search_experiences", query="  ") == {"results": [], "count": 0}
    assert ok(mcp, "search_experiences", query="nothing stored yet") == {"results": [], "count": 0}


def test_list_filters_since_and_limit(mcp: ThreadedClient) -> None:
    for domain in ("debugging", "testing", "testing"):
        ok(mcp, "start_ghap", **{**START, "domain": domain})
        ok(mcp, "resolve_ghap", status="confirmed", result="done")
    assert ok(mcp, "list_ghap_entries", domain="testing")["count"] == 2
    assert ok(mcp, "list_ghap_entries", limit=1)["count"] == 1
    assert ok(mcp, "list_ghap_entries", since="2000-01-01")["count"] == 3
    assert ok(mcp, "list_ghap_entries", since="2999-01-01T00:00:00Z")["count"] == 0


def test_an_unusable_journal_folder_fails_only_the_ghap_tools(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    journal = blocker / "journal"
    with inline_client(tmp_path, "hashing:64", journal_dir=journal) as client:
        assert ok(client, "ping")["status"] == "ok"
        failure = error(client, "start_ghap", **START)
        assert failure["type"] == "storage_error" and "journal" in failure["message"]
        assert ok(client, "search_experiences", query="anything") == {"results": [], "count": 0}


def test_resolve_answers_at_once_when_storing_outlasts_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import learning_memory.server.tools.ghap as ghap_tools

    # No time at all: the job is still running as the tool answers, and finishes by itself.
    monkeypatch.setattr(ghap_tools, "RESOLVE_BUDGET_S", 0.0)
    with inline_client(tmp_path, "hashing:256") as mcp:
        started = ok(mcp, "start_ghap", **START)
        resolved = ok(mcp, "resolve_ghap", **FALSIFIED)
        assert resolved["id"] == started["id"] and resolved["stored"] is False
        assert "Do not resolve it again" in resolved["note"]

        async def marked_stored() -> bool:
            return not list((tmp_path / "journal").rglob("outbox/*"))

        # The job finishes by itself, and the entry leaves the outbox once it has.
        asyncio.run(wait_for(marked_stored, timeout=30, what="the entry to leave the outbox"))
        assert ok(mcp, "search_experiences", query="shared database fixture", axis="surprise")["count"] == 1
