"""Failures matched to fixed ones by meaning at mining, so that the Bash hook (no model) can name
the fix the next time: the index's aliases, and the worker step with the real model."""

from __future__ import annotations

from pathlib import Path

import pytest

from learning_memory.shared.fix_index import FixIndex, SeenFailure, fix_index_path
from learning_memory.worker.capture.meaning import MEANING_CLOSE, alias_by_meaning
from tests.capture_sessions import LOGIN, T0, failure
from tests.helpers import job_run
from tests.unit.test_fix_index import PROJECT, episode, fix, record

YAML_MISSING = failure("tests/test_config.py::test_load", "No module named 'yaml'", "ModuleNotFoundError")
YAML_IMPORT = failure("tests/test_settings.py::test_read", "No module named yaml", "ImportError")
DB_LOCKED = failure("tests/test_store.py::test_write", "database is locked", "sqlite3.OperationalError")
NO_TABLE = failure("tests/test_store.py::test_read", "no such table: users", "sqlite3.OperationalError")


@pytest.fixture
def index(tmp_path: Path) -> FixIndex:
    return FixIndex(fix_index_path(tmp_path))


def test_an_alias_names_the_fix_as_a_close_match(index: FixIndex) -> None:
    record(index, "s1", episode("ep1", "x1", fix(YAML_MISSING, files=("pyproject.toml",), symbols=())))
    assert index.fixes_for(PROJECT, [YAML_IMPORT]) == []  # other words, another error type
    index.set_aliases(PROJECT, {YAML_IMPORT.signature: [(YAML_MISSING.signature, 0.91)]})
    [known] = index.fixes_for(PROJECT, [YAML_IMPORT])
    assert (known.signature, known.files, known.similarity) == (
        YAML_MISSING.signature,
        ("pyproject.toml",),
        0.91,
    )
    # An exact match comes first; an alias only fills what is left, never twice the same fix.
    record(index, "s2", episode("ep2", "x2", fix(LOGIN)))
    index.set_aliases(PROJECT, {LOGIN.signature: [(YAML_MISSING.signature, 0.99)]})
    found = index.fixes_for(PROJECT, [LOGIN, YAML_IMPORT], limit=3)
    assert [(k.signature, k.similarity) for k in found] == [
        (LOGIN.signature, 1.0),
        (YAML_MISSING.signature, 0.98),
    ]
    # Replaced, not added to: an alias found wrong at a later mining goes.
    index.set_aliases(PROJECT, {YAML_IMPORT.signature: [], LOGIN.signature: []})
    assert index.fixes_for(PROJECT, [YAML_IMPORT]) == []
    assert set(index.fix_texts(PROJECT)) == {
        (LOGIN.signature, "AssertionError: assert <n> == <n>"),
        (YAML_MISSING.signature, "ModuleNotFoundError: No module named 'yaml'"),
    }
    index.set_aliases(PROJECT, {})  # nothing to write: no file touched


def test_a_fix_whose_code_is_gone_is_named_by_no_alias(index: FixIndex) -> None:
    record(index, "s1", episode("ep1", "x1", fix(YAML_MISSING)))
    index.set_aliases(PROJECT, {YAML_IMPORT.signature: [(YAML_MISSING.signature, 0.9)]})
    index.mark_stale({"x1": "gone"})
    assert index.fixes_for(PROJECT, [YAML_IMPORT]) == []
    assert index.fix_texts(PROJECT) == []


@pytest.mark.slow
async def test_mining_matches_a_failure_to_the_fix_that_means_the_same(tmp_path: Path) -> None:
    async with job_run(tmp_path, embedding_model="all-MiniLM-L6-v2") as run:
        index = FixIndex(fix_index_path(run.services.settings.data_dir))
        record(index, "s1", episode("ep1", "x1", fix(YAML_MISSING), fix(DB_LOCKED)))
        seen = [SeenFailure(f, T0) for f in (YAML_IMPORT, NO_TABLE, YAML_MISSING)]
        index.record_session(PROJECT, "s2", "/work/app", seen, [])

        matched = await alias_by_meaning(run, index, PROJECT, [s.failure for s in seen])
        assert matched == 1
        [known] = index.fixes_for(PROJECT, [YAML_IMPORT])
        assert known.signature == YAML_MISSING.signature and MEANING_CLOSE <= known.similarity < 1.0
        # A locked database is not a missing table, though the words of one library are alike.
        assert index.fixes_for(PROJECT, [NO_TABLE]) == []
        # Matched already: the next mining leaves it; nothing fixed yet in a new project: nothing.
        assert await alias_by_meaning(run, index, PROJECT, [YAML_IMPORT]) == 0
        assert await alias_by_meaning(run, index, "github.com/acme/other", [YAML_IMPORT]) == 0
        index.close()
