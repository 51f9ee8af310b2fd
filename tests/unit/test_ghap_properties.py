"""Property tests: arbitrary input to every GHAP tool and search_experiences is either
accepted or refused as a validation (or not-found) error, never an internal error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learning_memory.shared.contracts.experiences import (
    AXES,
    DOMAINS,
    OUTCOME_STATUSES,
    ROOT_CAUSE_CATEGORIES,
    STRATEGIES,
)
from tests.mcp_thread import ThreadedClient, inline_client

text = st.text(max_size=1200) | st.text(alphabet=st.characters(categories=["Cs", "Cc", "Zs"]), max_size=20)
maybe_text = text | st.none() | st.integers()
numbers = st.integers() | st.floats() | st.none() | text


def enum(values: tuple[str, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(values) | text | st.none()


root_cause = st.none() | st.fixed_dictionaries(
    {"category": enum(ROOT_CAUSE_CATEGORIES), "description": maybe_text}
)
lesson = st.none() | st.fixed_dictionaries({"what_worked": maybe_text}, optional={"takeaway": maybe_text})
ALLOWED = {"validation_error", "not_found"}
SETTINGS = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedClient]:
    with inline_client(tmp_path_factory.mktemp("ghap-props"), "hashing:64") as client:
        yield client


def _check(client: ThreadedClient, tool: str, **arguments: Any) -> None:
    result = client.call(tool, {key: value for key, value in arguments.items() if value is not None})
    if result.is_error:
        error = json.loads(result.content[0].text)["error"]  # type: ignore[union-attr]
        assert error["type"] in ALLOWED, error


@SETTINGS
@given(
    domain=enum(DOMAINS),
    strategy=enum(STRATEGIES),
    goal=maybe_text,
    hypothesis=maybe_text,
    action=text,
    prediction=text,
)
def test_start_ghap(mcp: ThreadedClient, **arguments: Any) -> None:
    _check(mcp, "start_ghap", **arguments)


@SETTINGS
@given(
    hypothesis=maybe_text,
    action=maybe_text,
    prediction=maybe_text,
    strategy=enum(STRATEGIES),
    note=maybe_text,
)
def test_update_ghap(mcp: ThreadedClient, **arguments: Any) -> None:
    _check(mcp, "update_ghap", **arguments)


@SETTINGS
@given(
    status=enum(OUTCOME_STATUSES),
    result=maybe_text,
    surprise=maybe_text,
    root_cause=root_cause,
    lesson=lesson,
)
def test_resolve_ghap(mcp: ThreadedClient, **arguments: Any) -> None:
    _check(mcp, "resolve_ghap", **arguments)


@SETTINGS
@given(limit=numbers, domain=enum(DOMAINS), outcome=enum(OUTCOME_STATUSES), since=maybe_text)
def test_list_ghap_entries(mcp: ThreadedClient, **arguments: Any) -> None:
    _check(mcp, "list_ghap_entries", **arguments)


@SETTINGS
@given(query=maybe_text, axis=enum(AXES), domain=enum(DOMAINS), outcome=enum(OUTCOME_STATUSES), limit=numbers)
def test_search_experiences(mcp: ThreadedClient, **arguments: Any) -> None:
    _check(mcp, "search_experiences", **arguments)


def test_still_usable_afterwards(mcp: ThreadedClient) -> None:
    start = {
        "domain": "testing",
        "strategy": "ask-user",
        "goal": "g",
        "hypothesis": "h",
        "action": "a",
        "prediction": "p",
    }
    assert not mcp.call("start_ghap", start).is_error
    assert not mcp.call("resolve_ghap", {"status": "confirmed", "result": "fine"}).is_error
    assert not mcp.call("get_active_ghap", {}).is_error
