"""assemble_context, get_premortem_warnings, expand_context and start_ghap's warnings through an
MCP client, in-process (inline mode, hashing embedder: texts sharing words are similar)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_thread import ThreadedClient, error, inline_client, ok

MIGRATION = {
    "domain": "debugging",
    "strategy": "read-the-error",
    "goal": "run the database migration on the staging server",
    "hypothesis": "the migration fails because the alembic head is stale",
    "action": "regenerate the alembic head",
    "prediction": "the migration applies cleanly",
}
FALSIFIED = {
    "status": "falsified",
    "result": "the migration still failed",
    "surprise": "the staging database had a manual column added",
    "root_cause": {"category": "environment-issue", "description": "staging schema drifted by hand"},
    "lesson": {"what_worked": "diff the schema before migrating", "takeaway": "check for schema drift"},
}


@pytest.fixture
def mcp(tmp_path: Path) -> Iterator[ThreadedClient]:
    with inline_client(tmp_path, "hashing:256") as client:
        yield client


def resolve(mcp: ThreadedClient, start: dict[str, Any], resolution: dict[str, Any]) -> str:
    ok(mcp, "start_ghap", **start)
    ghap_id: str = ok(mcp, "resolve_ghap", **resolution)["id"]
    return ghap_id


def test_experiences_and_memories_rank_together_with_ids_that_expand(mcp: ThreadedClient) -> None:
    ghap_id = resolve(mcp, MIGRATION, FALSIFIED)
    memory = ok(
        mcp, "store_memory", content="staging database migrations run from the ops box", category="fact"
    )
    ok(mcp, "store_memory", content="the user prefers tabs in makefiles", category="preference")

    found = ok(mcp, "assemble_context", query="staging database migration fails", budget_tokens=400)
    ids = [item["id"] for item in found["items"]]
    assert f"exp:{ghap_id}" in ids and f"mem:{memory['id']}" in ids
    assert "mem:" + ok(mcp, "list_memories", category="preference")["results"][0]["id"] not in ids
    scores = [item["score"] for item in found["items"]]
    assert scores == sorted(scores, reverse=True)
    assert found["tokens"] == sum(item["tokens"] for item in found["items"]) <= 400
    experience = next(item for item in found["items"] if item["kind"] == "experience")
    assert "root cause (environment issue): staging schema drifted by hand" in experience["text"]
    assert found["text"].splitlines()[1].startswith(f"- [{ids[0]}] ")

    expanded = ok(mcp, "expand_context", ids=[f"exp:{ghap_id}", f"mem:{memory['id']}", "exp:nope", "x:1"])
    assert [item["kind"] for item in expanded["items"]] == ["experience", "memory"]
    assert expanded["items"][0]["record"]["surprise"] == FALSIFIED["surprise"]
    assert "created_ts" not in expanded["items"][0]["record"]
    assert expanded["missing"] == ["exp:nope", "x:1"]


def test_the_budget_and_the_bar_cut_what_is_assembled(mcp: ThreadedClient) -> None:
    for n in range(6):
        ok(
            mcp,
            "store_memory",
            content=f"deploy note {n}: the deploy script needs the vpn up " * 3,
            category="fact",
        )
    small = ok(mcp, "assemble_context", query="deploy script vpn", budget_tokens=60)
    assert 1 <= small["count"] < 6 and small["tokens"] <= 60
    nothing = ok(mcp, "assemble_context", query="deploy script vpn", min_score=1.0)
    assert nothing == {"items": [], "count": 0, "tokens": 0, "text": ""}
    assert ok(mcp, "assemble_context", query="   ")["count"] == 0


def test_near_duplicates_are_shown_once(mcp: ThreadedClient) -> None:
    text = "always pin the numpy version in the lock file"
    ok(mcp, "store_memory", content=text, category="workflow")
    ok(mcp, "store_memory", content=text + ".", category="workflow")
    found = ok(mcp, "assemble_context", query="pin the numpy version")
    assert found["count"] == 1


def test_bad_arguments_are_validation_errors(mcp: ThreadedClient) -> None:
    assert error(mcp, "assemble_context", query="x", budget_tokens=10)["type"] == "validation_error"
    assert error(mcp, "assemble_context", query="x", min_score=2)["type"] == "validation_error"
    assert error(mcp, "get_premortem_warnings", goal="  ")["type"] == "validation_error"
    assert error(mcp, "get_premortem_warnings", goal="x", limit=0)["type"] == "validation_error"
    assert error(mcp, "expand_context", ids=[])["type"] == "validation_error"


def test_premortem_warns_of_falsified_attempts_only(mcp: ThreadedClient) -> None:
    falsified = resolve(mcp, MIGRATION, FALSIFIED)
    confirmed_start = {**MIGRATION, "hypothesis": "the migration needs a lock timeout"}
    resolve(mcp, confirmed_start, {"status": "confirmed", "result": "applied"})
    # Displaced by a newer start: abandoned with nothing learned, which is no warning.
    displaced = ok(mcp, "start_ghap", **{**MIGRATION, "goal": "run the database migration on staging again"})

    started = ok(mcp, "start_ghap", **MIGRATION)
    assert "warning" in started  # the displaced entry
    assert [w["ghap_id"] for w in started["warnings"]] == [falsified]
    warning = started["warnings"][0]
    assert warning["root_cause"] == FALSIFIED["root_cause"] and warning["outcome_status"] == "falsified"

    # Nor is it context: it would only echo an old task back.
    shown = [item["id"] for item in ok(mcp, "assemble_context", query=MIGRATION["goal"])["items"]]
    assert f"exp:{falsified}" in shown and f"exp:{displaced['id']}" not in shown

    found = ok(mcp, "get_premortem_warnings", goal=MIGRATION["goal"], domain="debugging")
    assert [w["ghap_id"] for w in found["warnings"]] == [falsified]
    assert ok(mcp, "get_premortem_warnings", goal=MIGRATION["goal"], domain="security")["count"] == 0


def test_start_ghap_with_no_history_has_no_warnings(mcp: ThreadedClient) -> None:
    assert ok(mcp, "start_ghap", **MIGRATION)["warnings"] == []
