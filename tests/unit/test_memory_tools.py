"""The four memory tools through an MCP client, in-process (inline mode, hashing embedder,
the real embedded vector store)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from learning_memory.shared.contracts.memory import CATEGORIES, MAX_CONTENT_CHARS
from tests.mcp_thread import ThreadedClient, error, inline_client, ok


@pytest.fixture
def mcp(tmp_path: Path) -> Iterator[ThreadedClient]:
    with inline_client(tmp_path) as client:
        yield client


def test_store_returns_the_record(mcp: ThreadedClient) -> None:
    stored = ok(mcp, "store_memory", content="Use uv for Python installs", category="preference", tags=["py"])
    assert uuid.UUID(stored["id"])
    assert stored["content"] == "Use uv for Python installs"
    assert stored["category"] == "preference"
    assert stored["importance"] == 0.5
    assert stored["tags"] == ["py"]
    assert stored["created_at"].endswith("Z") or "+00:00" in stored["created_at"]


def test_retrieve_finds_the_closest_first(mcp: ThreadedClient) -> None:
    ok(mcp, "store_memory", content="The deploy script lives in ops/deploy.sh", category="fact")
    ok(mcp, "store_memory", content="Team lunch is on Fridays", category="event")
    found = ok(mcp, "retrieve_memories", query="where is the deploy script", limit=5)
    assert found["count"] == 2
    assert found["results"][0]["content"] == "The deploy script lives in ops/deploy.sh"
    scores = [hit["score"] for hit in found["results"]]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= score <= 1.0 for score in scores)


def test_retrieve_filters_by_category_and_importance(mcp: ThreadedClient) -> None:
    ok(mcp, "store_memory", content="tabs or spaces: spaces", category="preference", importance=0.9)
    ok(mcp, "store_memory", content="spaces are used in this repo", category="fact", importance=0.2)
    by_category = ok(mcp, "retrieve_memories", query="spaces", category="fact")
    assert [hit["category"] for hit in by_category["results"]] == ["fact"]
    important = ok(mcp, "retrieve_memories", query="spaces", min_importance=0.5)
    assert [hit["importance"] for hit in important["results"]] == [0.9]


def test_empty_query_is_empty_results_not_an_error(mcp: ThreadedClient) -> None:
    assert ok(mcp, "retrieve_memories", query="   ") == {"results": [], "count": 0}


def test_invalid_category_lists_the_valid_ones(mcp: ThreadedClient) -> None:
    for tool, arguments in [
        ("store_memory", {"content": "x", "category": "opinion"}),
        ("retrieve_memories", {"query": "x", "category": "opinion"}),
        ("list_memories", {"category": "opinion"}),
    ]:
        failure = error(mcp, tool, **arguments)
        assert failure["type"] == "validation_error"
        assert all(category in failure["message"] for category in CATEGORIES)
        assert "input_value" not in failure["message"]


def test_long_content_is_truncated_and_numbers_clamped(mcp: ThreadedClient) -> None:
    stored = ok(mcp, "store_memory", content="a" * (MAX_CONTENT_CHARS + 50), category="fact", importance=7)
    assert len(stored["content"]) == MAX_CONTENT_CHARS
    assert stored["importance"] == 1.0
    low = ok(mcp, "store_memory", content="b", category="fact", importance=-3)
    assert low["importance"] == 0.0
    assert ok(mcp, "retrieve_memories", query="a", limit=10**6)["count"] == 2  # limit clamped to 100
    assert ok(mcp, "list_memories", limit=-5, offset=-9)["count"] == 1  # limit 1, offset 0


def test_empty_content_is_refused(mcp: ThreadedClient) -> None:
    assert error(mcp, "store_memory", content="  \n", category="fact")["type"] == "validation_error"


def test_tags_are_cleaned(mcp: ThreadedClient) -> None:
    stored = ok(
        mcp,
        "store_memory",
        content="x",
        category="fact",
        tags=[" a ", "a", "", "b" * 300, *map(str, range(30))],
    )
    assert stored["tags"][:2] == ["a", "b" * 100]
    assert len(stored["tags"]) == 20


def test_list_is_newest_first_with_pages_that_never_overlap(mcp: ThreadedClient) -> None:
    ids = [ok(mcp, "store_memory", content=f"memory number {i}", category="fact")["id"] for i in range(7)]
    pages = [ok(mcp, "list_memories", limit=3, offset=offset) for offset in (0, 3, 6)]
    assert [page["total"] for page in pages] == [7, 7, 7]
    seen = [memory["id"] for page in pages for memory in page["results"]]
    assert seen == list(reversed(ids))
    assert ok(mcp, "list_memories", offset=100) == {"results": [], "count": 0, "total": 7}


def test_list_filters_by_category_and_any_tag(mcp: ThreadedClient) -> None:
    ok(mcp, "store_memory", content="one", category="fact", tags=["red"])
    ok(mcp, "store_memory", content="two", category="fact", tags=["blue", "green"])
    ok(mcp, "store_memory", content="three", category="workflow", tags=["green"])
    assert ok(mcp, "list_memories", category="workflow")["total"] == 1
    tagged = ok(mcp, "list_memories", tags=["red", "green"])
    assert sorted(memory["content"] for memory in tagged["results"]) == ["one", "three", "two"]
    assert ok(mcp, "list_memories", category="fact", tags=["green"])["total"] == 1


def test_delete(mcp: ThreadedClient) -> None:
    assert ok(mcp, "delete_memory", id=str(uuid.uuid4())) == {"deleted": False}  # nothing stored yet
    stored = ok(mcp, "store_memory", content="temporary", category="context")
    assert ok(mcp, "delete_memory", id=stored["id"]) == {"deleted": True}
    assert ok(mcp, "delete_memory", id=stored["id"]) == {"deleted": False}
    assert ok(mcp, "delete_memory", id="not-a-uuid") == {"deleted": False}
    assert ok(mcp, "list_memories")["total"] == 0
    assert ok(mcp, "retrieve_memories", query="temporary")["count"] == 0
