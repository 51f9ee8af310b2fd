"""Vectors filled in behind the index: what a failed round, a re-index and a deletion meanwhile leave."""
# The indexer tests' fixtures (run, spy) are imported, and so shadowed by the parameters using them.
# ruff: noqa: F811

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from learning_memory.shared.contracts.code import (
    DeleteProjectRequest,
    IndexCodebaseRequest,
    ListProjectsRequest,
    SearchCodeRequest,
)
from learning_memory.worker.code.index import unit_store
from learning_memory.worker.code.index.filler import VectorFiller
from learning_memory.worker.embedding.base import Embeddings
from learning_memory.worker.jobs.code import (
    delete_project_index,
    index_codebase,
    list_indexed_projects,
    search_code,
)
from learning_memory.worker.services import JobRun
from tests.helpers import job_run
from tests.unit.test_code_indexer import FILES, MATH, UNITS, make_tree, points, run, spy  # noqa: F401


async def index_only(run: JobRun, root: Path) -> int:
    done = await index_codebase(run, IndexCodebaseRequest(directory=str(root), project="proj"))
    return done.vectors_pending


@pytest.fixture
def by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rounds run when the test says, not in the background after each index."""
    monkeypatch.setattr(VectorFiller, "wake", lambda self: None)


def filler_of(run: JobRun) -> VectorFiller:
    filler = run.services.vector_filler()
    assert filler is not None
    return filler


async def test_a_failed_round_leaves_its_units_waiting_for_the_next(
    run: JobRun, spy: object, by_hand: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "src", FILES)
    store = await run.services.vectors()
    real = store.upsert

    async def refused(*args: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(store, "upsert", refused)
    await index_codebase(run, IndexCodebaseRequest(directory=str(root), project="proj"))
    with pytest.raises(RuntimeError, match="disk full"):
        await filler_of(run).fill_round()
    assert await unit_store.waiting(await run.services.metadata(), "proj") == UNITS
    monkeypatch.setattr(store, "upsert", real)
    assert await filler_of(run).fill_round() == UNITS
    assert await filler_of(run).fill_round() == 0
    assert len(await points(run)) == UNITS


async def test_units_replaced_or_deleted_while_embedded_do_not_come_back(
    run: JobRun, spy: object, by_hand: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "src", FILES)
    assert await index_only(run, root) == UNITS
    embedder = await run.services.embedder()
    real = embedder.embed
    edits = [lambda: (root / "util/math.py").write_text(MATH.replace("add_numbers", "sum_numbers"))]

    async def embed_while_edited(texts: Sequence[str]) -> Embeddings:
        vectors = await real(texts)
        if edits:  # the file changes, and is indexed again, while its old unit is embedded
            edits.pop()()
            await index_only(run, root)
        return vectors

    monkeypatch.setattr(embedder, "embed", embed_while_edited)
    assert await filler_of(run).fill_round() == UNITS - 1  # not the replaced add_numbers
    assert await filler_of(run).fill_round() == 1  # sum_numbers, written by the second index
    names = {p["qualified_name"] for p in await points(run, file_path="util/math.py")}
    assert names == {"sum_numbers"}

    async def embed_while_deleted(texts: Sequence[str]) -> Embeddings:
        vectors = await real(texts)
        await delete_project_index(run, DeleteProjectRequest(project="proj"))
        return vectors

    (root / "util/math.py").write_text(MATH)
    await index_only(run, root)
    monkeypatch.setattr(embedder, "embed", embed_while_deleted)
    assert await filler_of(run).fill_round() == 0
    assert await points(run) == []


async def test_without_code_vectors_search_is_keywords_alone(tmp_path: Path, spy: object) -> None:
    async with job_run(tmp_path, "hashing:256") as run:
        run.services.settings = run.services.settings.model_copy(update={"code_vectors": False})
        root = make_tree(tmp_path / "src", FILES)
        assert await index_only(run, root) == 0
        found = await search_code(run, SearchCodeRequest(query="add numbers", project="proj"))
        assert found.results[0].qualified_name == "add_numbers" and found.vectors_pending == 0
        semantic = await search_code(run, SearchCodeRequest(query="add numbers", mode="semantic"))
        assert semantic.results == []
        [project] = (await list_indexed_projects(run, ListProjectsRequest())).projects
        assert (project.units, project.vectors_pending) == (UNITS, 0)
        assert run.services._embedder.ready is None  # the model was never needed


async def test_rows_left_by_a_stopped_process_are_filled_after_the_next_search(
    tmp_path: Path, spy: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "src", FILES)
    with monkeypatch.context() as stopped:  # the first process ends before any round runs
        stopped.setattr(VectorFiller, "wake", lambda self: None)
        async with job_run(tmp_path, "hashing:256") as first:
            assert await index_only(first, root) == UNITS
    async with job_run(tmp_path, "hashing:256") as second:
        found = await search_code(second, SearchCodeRequest(query="add numbers", project="proj"))
        assert found.vectors_pending == UNITS
        await filler_of(second).wait_idle(timeout_s=30)
        assert len(await points(second)) == UNITS


async def test_no_round_starts_while_an_index_run_writes(
    run: JobRun, spy: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "src", FILES)
    filler = filler_of(run)
    rounds: list[bool] = []
    real = VectorFiller.fill_round

    async def noted(self: VectorFiller) -> int:
        rounds.append(self._free.is_set())
        return await real(self)

    monkeypatch.setattr(VectorFiller, "fill_round", noted)
    with filler.paused():
        assert await index_only(run, root) == UNITS  # its wake comes while paused
        with pytest.raises(TimeoutError):
            await filler.wait_idle(timeout_s=0.2)
        assert rounds == []
    await filler.wait_idle(timeout_s=30)
    assert rounds and all(rounds)
    assert len(await points(run)) == UNITS
