"""Property tests: arbitrary strings, numbers and tags to every memory tool never cause an
internal error or a crash, and the server stays usable afterwards."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learning_memory.shared.contracts.memory import CATEGORIES
from tests.mcp_thread import ThreadedClient, inline_client

# Lone surrogates and control characters too: JSON can carry them, UTF-8 cannot.
text = st.text(max_size=300) | st.text(
    alphabet=st.characters(categories=["Cs", "Cc", "Zs", "Lo"]), max_size=50
)
numbers = st.integers() | st.floats(allow_nan=False) | st.floats() | st.none()
anything = text | numbers | st.booleans() | st.lists(text, max_size=5)
category = st.sampled_from(CATEGORIES) | text | st.none()
tags = st.lists(text, max_size=30) | st.none() | text
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedClient]:
    with inline_client(tmp_path_factory.mktemp("props"), "hashing:64") as client:
        yield client


def _args(**arguments: Any) -> dict[str, Any]:
    return {key: value for key, value in arguments.items() if value is not None}


def _check(client: ThreadedClient, tool: str, arguments: dict[str, Any]) -> None:
    result = client.call(tool, arguments)
    if result.is_error:
        error = json.loads(result.content[0].text)["error"]  # type: ignore[union-attr]
        assert error["type"] == "validation_error", error
    else:
        assert isinstance(result.structured_content, dict)


@SETTINGS
@given(content=text, category=category, importance=numbers, tags=tags)
def test_store_memory(mcp: ThreadedClient, content: Any, category: Any, importance: Any, tags: Any) -> None:
    _check(mcp, "store_memory", _args(content=content, category=category, importance=importance, tags=tags))


@SETTINGS
@given(query=text, limit=numbers, category=category, min_importance=numbers)
def test_retrieve_memories(
    mcp: ThreadedClient, query: Any, limit: Any, category: Any, min_importance: Any
) -> None:
    _check(
        mcp,
        "retrieve_memories",
        _args(query=query, limit=limit, category=category, min_importance=min_importance),
    )


@SETTINGS
@given(category=category, tags=tags, limit=numbers, offset=numbers)
def test_list_memories(mcp: ThreadedClient, category: Any, tags: Any, limit: Any, offset: Any) -> None:
    _check(mcp, "list_memories", _args(category=category, tags=tags, limit=limit, offset=offset))


@SETTINGS
@given(memory_id=anything)
def test_delete_memory(mcp: ThreadedClient, memory_id: Any) -> None:
    _check(mcp, "delete_memory", _args(id=memory_id))


def test_still_usable_afterwards(mcp: ThreadedClient) -> None:
    stored = mcp.call("store_memory", {"content": "still works", "category": "fact"})
    assert not stored.is_error
    found = mcp.call("retrieve_memories", {"query": "still works"})
    assert not found.is_error and found.structured_content is not None
    assert found.structured_content["results"][0]["content"] == "still works"
    assert not mcp.call("ping", {}).is_error
