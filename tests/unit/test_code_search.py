"""Hybrid code search: the BM25 side kept in step with the index, and the fusion of both rankings.

The hashing embedder has no sense of meaning, so what the dense side finds here is arbitrary; the
tests check what each side and the fusion promise, not semantic quality (bench/code_quality.py
measures that with the real model on labelled questions).
"""
# The indexer tests' fixtures (run, spy) are imported, and so shadowed by the parameters using them.
# ruff: noqa: F811

from __future__ import annotations

from pathlib import Path

from learning_memory.shared.contracts.code import (
    COLLECTION,
    CodeHit,
    DeleteProjectRequest,
    IndexCodebaseRequest,
    ListProjectsRequest,
    SearchCodeRequest,
)
from learning_memory.worker.code.index.units import spelled_identifiers
from learning_memory.worker.code.search.bm25 import match_expression
from learning_memory.worker.code.search.hybrid import FUSION, Scope, hybrid_candidates
from learning_memory.worker.code.search.query import query_terms, read_query
from learning_memory.worker.code.search.search_code import search_code as hybrid_search
from learning_memory.worker.code.search.similar import find_similar
from learning_memory.worker.jobs.code import (
    delete_project_index,
    index_codebase,
    list_indexed_projects,
    search_code,
)
from learning_memory.worker.metadata.store import MetadataStore
from learning_memory.worker.services import JobRun, WorkerServices
from tests.unit.test_code_indexer import FILES, UNITS, index, make_tree, run, spy  # noqa: F401


def test_query_terms_drop_stopwords_and_spell_identifiers() -> None:
    terms = query_terms("How does the client wait before retrying a 429 in calculateRetryDelay?")
    assert terms[:4] == ["client", "wait", "before", "retrying"]
    assert "429" in terms and "calculateretrydelay" in terms
    assert {"calculate", "retry", "delay"} <= set(terms)
    assert not {"how", "does", "the", "a", "in"} & set(terms)
    assert query_terms("how is the") == []
    assert read_query("retry calculateRetryDelay").terms == (
        "retry",
        "calculateretrydelay",
        "calculate",
        "delay",
    )
    assert match_expression(["or", "not"]) == '"or" OR "not"'


def test_only_mixed_case_identifiers_are_spelled_out() -> None:
    assert spelled_identifiers("x = HTTPServerError(parse_url) + plain") == "http server error"


async def fused(
    services: WorkerServices,
    query: str,
    *,
    dense: bool = True,
    limit: int = 10,
    project: str | None = None,
    language: str | None = None,
) -> list[CodeHit]:
    """The fused ranking before search_code's reordering (``dense=False``: BM25 alone), composed
    from the search room's pieces as bench/search_modes.py composes its baselines."""
    found = await hybrid_candidates(
        services,
        read_query(query),
        Scope(project, language),
        depth=max(FUSION.candidates, limit),
        dense=dense,
    )
    candidates, _ = await found.load(found.top(limit))
    return await found.hits(candidates[:limit])


async def lexical_rows(run: JobRun, project: str = "proj") -> list[tuple[str, str]]:
    metadata: MetadataStore = await run.services.metadata()
    rows = await metadata.fetchall(
        "SELECT file_path, point_id FROM code_lexical WHERE project = ? ORDER BY file_path", (project,)
    )
    return [(str(row[0]), str(row[1])) for row in rows]


async def test_keyword_rows_follow_every_change_to_the_index(
    run: JobRun, spy: object, tmp_path: Path
) -> None:
    root = make_tree(tmp_path / "src", FILES)
    await index(run, root)
    assert len(await lexical_rows(run)) == UNITS
    (root / "util/math.py").unlink()
    (root / "config/parsing.py").write_text("def only_one():\n    return 1\n")
    await index(run, root)
    files = [path for path, _ in await lexical_rows(run)]
    assert files.count("util/math.py") == 0 and files.count("config/parsing.py") == 1
    assert len(files) == UNITS - 3 + 1
    await delete_project_index(run, DeleteProjectRequest(project="proj"))
    assert await lexical_rows(run) == []


async def test_bm25_alone_finds_exact_words_without_the_model(
    run: JobRun, spy: object, tmp_path: Path
) -> None:
    await index(run, make_tree(tmp_path / "src", FILES))
    hits = await fused(run.services, "what honours Retry-After on a 429?", dense=False, project="proj")
    assert hits[0].qualified_name == "calculate_retry_delay"
    assert hits[0].score == 1.0 and hits[0].similarity is None
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert await fused(run.services, "retry", dense=False, project="proj", language="go") == []


async def test_hybrid_fuses_both_rankings(run: JobRun, spy: object, tmp_path: Path) -> None:
    await index(run, make_tree(tmp_path / "src", FILES))
    query = "merge_settings override"
    semantic = await find_similar(run.services, SearchCodeRequest(query=query, mode="semantic", limit=50))
    words = await fused(run.services, query, dense=False, limit=50)
    hybrid = await hybrid_search(run.services, SearchCodeRequest(query=query, limit=50))
    # The fusion as it stands before search_code's reordering (worker.code.search.ranking, which
    # moves scores: hits of a file already answered cost some relevance).
    fusion = await fused(run.services, query, limit=50)
    assert {hit.id for hit in hybrid} == {hit.id for hit in semantic} | {hit.id for hit in words}
    assert {hit.id for hit in fusion} == {hit.id for hit in hybrid}
    rank = {
        side: {hit.id: i for i, hit in enumerate(hits, start=1)}
        for side, hits in (("semantic", semantic), ("lexical", words))
    }
    weight, k = {"semantic": 1.0, "lexical": FUSION.lexical_weight}, FUSION.rrf_k
    for hit in fusion:
        score = sum(weight[side] / (k + ranks[hit.id]) for side, ranks in rank.items() if hit.id in ranks)
        assert abs(hit.score - score / ((1 + weight["lexical"]) / (k + 1))) < 1e-9
    for hits in (fusion, hybrid):
        assert all(hit.similarity is not None for hit in hits)  # cosine to the query, keyword-only hits too
        assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    # find_similar_code reports the cosine similarity as its score.
    assert all(hit.score == hit.similarity for hit in semantic if hit.similarity and hit.similarity > 0)


async def test_a_unit_is_found_by_its_keywords_before_its_vector_is_written(
    run: JobRun, spy: object, tmp_path: Path
) -> None:
    filler = run.services.vector_filler()
    assert filler is not None
    # Held until the keywords have answered: on a fast embedder the filler could finish first.
    with filler.paused():
        done = await index_codebase(
            run, IndexCodebaseRequest(directory=str(make_tree(tmp_path / "src", FILES)), project="proj")
        )
        assert done.units_indexed == UNITS and done.vectors_pending == UNITS
        found = await search_code(run, SearchCodeRequest(query="add numbers", project="proj"))
        assert found.results[0].qualified_name == "add_numbers" and found.results[0].similarity is None
        assert found.vectors_pending == UNITS
    await filler.wait_idle(timeout_s=30)
    found = await search_code(run, SearchCodeRequest(query="add numbers", project="proj"))
    assert found.results[0].qualified_name == "add_numbers" and found.results[0].similarity is not None
    assert found.vectors_pending == 0
    [project] = (await list_indexed_projects(run, ListProjectsRequest())).projects
    assert (project.units, project.vectors_pending) == (UNITS, 0)


async def test_a_row_from_before_payloads_answers_with_its_point_or_not_at_all(
    run: JobRun, spy: object, tmp_path: Path
) -> None:
    await index(run, make_tree(tmp_path / "src", FILES))
    [(_, point)] = [row for row in await lexical_rows(run) if row[0] == "util/math.py"]
    metadata = await run.services.metadata()
    await metadata.execute("UPDATE code_lexical SET payload = NULL")  # as migration 7 left them
    hits = await fused(run.services, "add numbers", dense=False, limit=50)
    assert hits[0].id == point and hits[0].qualified_name == "add_numbers"
    store = await run.services.vectors()
    await store.delete(COLLECTION, [point])  # as if a crash fell between the two deletes
    hits = await hybrid_search(run.services, SearchCodeRequest(query="add numbers", limit=50))
    assert point not in {hit.id for hit in hits}


async def test_no_collection_no_results(run: JobRun) -> None:
    assert await hybrid_search(run.services, SearchCodeRequest(query="anything")) == []
    done = await delete_project_index(run, DeleteProjectRequest(project="nothing"))
    assert done.units_deleted == 0


async def test_upgrading_forgets_file_hashes_so_the_next_index_refills(tmp_path: Path) -> None:
    import sqlite3

    from learning_memory.worker.metadata.migrations import MIGRATIONS

    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in MIGRATIONS[0].split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("INSERT INTO indexed_files VALUES ('proj', 'a.py', 'abc', 1.0)")
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    store = await MetadataStore.open(path)
    try:
        row = await store.fetchone("SELECT content_hash FROM indexed_files WHERE path = 'a.py'")
        assert row is not None and row[0] is None
    finally:
        await store.close()
