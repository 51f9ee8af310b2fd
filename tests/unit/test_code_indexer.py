"""Code indexing end to end in one process: inline settings, the hashing embedder, Qdrant Edge in
tmp_path. The parser is faked (tests/unit/code_fakes.py) except in the tests marked real_parser."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from learning_memory.shared.contracts.code import (
    COLLECTION,
    DELETE_PROJECT,
    INDEX_CODEBASE,
    DeleteProjectRequest,
    IndexCodebaseRequest,
    IndexCodebaseResponse,
    ListProjectsRequest,
    SearchCodeRequest,
)
from learning_memory.shared.errors import ValidationError
from learning_memory.worker.code.index import indexer as indexer_module
from learning_memory.worker.code.index import parser
from learning_memory.worker.code.index.units import embedding_text, split_identifier
from learning_memory.worker.code.search.query import query_text
from learning_memory.worker.embedding.base import Embeddings
from learning_memory.worker.embedding.cache import CachingEmbedder
from learning_memory.worker.jobs.code import (
    delete_project_index,
    index_codebase,
    list_indexed_projects,
    search_code,
)
from learning_memory.worker.registry import execute
from learning_memory.worker.services import JobRun
from learning_memory.worker.vectors.base import Filter, MatchValue, VectorStore
from tests.helpers import job_run
from tests.unit.code_fakes import fake_language_for, fake_parse_source

RETRY = '''"""HTTP client helpers."""


def calculate_retry_delay(attempt, retry_after=None):
    """How long to wait before retrying a 429: Retry-After if given, else exponential backoff."""
    if retry_after is not None:
        return float(retry_after)
    return min(2 ** attempt, 60)


class HttpClient:
    """Sends requests and retries them."""

    def send(self, request):
        """Send one request over the connection pool."""
        return self.pool.urlopen(request)
'''
PARSING = '''def parse_config(path):
    """Read the TOML configuration file into a dict."""
    return toml.load(path)


def merge_settings(base, override):
    """Merge two settings dicts, the override winning."""
    return {**base, **override}
'''
MATH = '''def add_numbers(a, b):
    """Add two numbers."""
    return a + b
'''
FILES = {"client/retry.py": RETRY, "config/parsing.py": PARSING, "util/math.py": MATH}
UNITS = 6  # calculate_retry_delay, HttpClient, HttpClient.send, parse_config, merge_settings, add_numbers


class Spy:
    """Counts what reaches the model behind the embedding cache."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.parsed: list[str] = []


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[JobRun]:
    async with job_run(tmp_path, "hashing:256") as run:
        yield run


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    spy = Spy()

    def parse(source: bytes, **kwargs: Any) -> Any:
        spy.parsed.append(kwargs["file_path"])
        return fake_parse_source(source, **kwargs)

    monkeypatch.setattr(parser, "language_for", fake_language_for)
    monkeypatch.setattr(parser, "parse_source", parse)
    return spy


async def watch_model(run: JobRun, spy: Spy, monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = await run.services.embedder()
    assert isinstance(embedder, CachingEmbedder)
    inner = embedder.inner
    real = inner.embed

    async def embed(texts: Sequence[str]) -> Embeddings:
        spy.texts.extend(texts)
        return await real(texts)

    monkeypatch.setattr(inner, "embed", embed)


def make_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


async def index(run: JobRun, root: Path, project: str = "proj", **kw: Any) -> IndexCodebaseResponse:
    """Index, then wait for the vectors filled in behind it (as most of these tests look at points)."""
    done = await index_codebase(run, IndexCodebaseRequest(directory=str(root), project=project, **kw))
    await filled(run)
    return done


async def filled(run: JobRun) -> None:
    filler = run.services.vector_filler()
    assert filler is not None
    await filler.wait_idle(timeout_s=30)


async def points(run: JobRun, project: str = "proj", **match: str) -> list[dict[str, Any]]:
    store: VectorStore = await run.services.vectors()
    where = Filter((MatchValue("project", project), *(MatchValue(k, v) for k, v in match.items())))
    return [r.payload for r in await store.scroll(COLLECTION, limit=10_000, filter=where)]


async def test_first_index_then_unchanged_reindex_parses_and_embeds_nothing(
    run: JobRun, spy: Spy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "src", {**FILES, "README.md": "# hi\n", "node_modules/x/a.py": "x = 1\n"})
    reports: list[tuple[float, float | None, str | None]] = []

    async def report(current: float, total: float | None = None, message: str | None = None) -> None:
        reports.append((current, total, message))

    run.report = report
    first = await index(run, root)
    assert (first.files_indexed, first.files_unchanged, first.files_removed) == (3, 0, 0)
    assert (first.files_skipped, first.units_indexed, first.errors) == (1, UNITS, [])
    assert len(await points(run)) == UNITS
    assert reports[-1] == (3, 3, f"{UNITS} units indexed")

    await watch_model(run, spy, monkeypatch)
    spy.parsed.clear()
    again = await index(run, root)
    assert (again.files_indexed, again.files_unchanged, again.units_indexed) == (0, 3, 0)
    assert spy.parsed == [] and spy.texts == []
    assert len(await points(run)) == UNITS


async def test_a_new_parser_version_parses_every_file_again(
    run: JobRun, spy: Spy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "src", FILES)
    await index(run, root)
    monkeypatch.setattr("learning_memory.worker.code.index.parser.PARSE_VERSION", b"a later parser\0")
    spy.parsed.clear()
    again = await index(run, root)
    assert (again.files_indexed, again.files_unchanged, again.units_indexed) == (3, 0, UNITS)
    assert len(spy.parsed) == 3
    assert len(await points(run)) == UNITS  # replaced, not duplicated


async def test_a_changed_file_alone_is_reindexed_and_its_old_units_go(
    run: JobRun, spy: Spy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "src", FILES)
    await index(run, root)
    await watch_model(run, spy, monkeypatch)
    spy.parsed.clear()
    (root / "util/math.py").write_text(MATH.replace("add_numbers", "sum_numbers"))
    result = await index(run, root)
    assert (result.files_indexed, result.files_unchanged, result.units_indexed) == (1, 2, 1)
    assert spy.parsed == ["util/math.py"]
    assert len(spy.texts) == 1 and "sum numbers" in spy.texts[0]
    names = {p["qualified_name"] for p in await points(run, file_path="util/math.py")}
    assert names == {"sum_numbers"}
    assert len(await points(run)) == UNITS


async def test_deleted_and_renamed_files(
    run: JobRun, spy: Spy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "src", FILES)
    await index(run, root)
    await watch_model(run, spy, monkeypatch)

    (root / "util/math.py").unlink()
    gone = await index(run, root)
    assert (gone.files_removed, gone.files_indexed, gone.files_unchanged) == (1, 0, 2)
    assert await points(run, file_path="util/math.py") == []
    assert len(await points(run)) == UNITS - 1

    (root / "config/parsing.py").rename(root / "config/loading.py")
    renamed = await index(run, root)
    assert (renamed.files_removed, renamed.files_indexed, renamed.units_indexed) == (1, 1, 2)
    assert await points(run, file_path="config/parsing.py") == []
    assert len(await points(run, file_path="config/loading.py")) == 2
    assert spy.texts == []  # same units, same texts: the embedding cache answered
    metadata = await run.services.metadata()
    rows = await metadata.fetchall("SELECT path FROM indexed_files WHERE repo = 'proj' ORDER BY path")
    assert [r["path"] for r in rows] == ["client/retry.py", "config/loading.py"]


async def unit_rows(run: JobRun, project: str = "proj") -> int:
    metadata = await run.services.metadata()
    row = await metadata.fetchone("SELECT count(*) FROM code_lexical WHERE project = ?", (project,))
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("fail_at", ["rows", "record"])
async def test_an_interrupted_index_is_finished_by_the_rerun_without_duplicates(
    run: JobRun, spy: Spy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_at: str
) -> None:
    files = {f"pkg/m{i:02d}.py": MATH.replace("add_numbers", f"add_{i}") + RETRY for i in range(12)}
    root = make_tree(tmp_path / "src", files)
    # Small groups, so the failure lands half-way with some groups written.
    monkeypatch.setattr(indexer_module, "FILES_PER_READ", 2)
    monkeypatch.setattr(indexer_module, "WRITE_BATCH", 8)
    metadata = await run.services.metadata()
    method = "transaction" if fail_at == "rows" else "executemany"
    real = getattr(metadata, method)
    calls = 0

    async def failing(*args: Any) -> Any:
        nonlocal calls
        # The embedding cache writes through executemany too: count only the hash records.
        if fail_at == "rows" or "indexed_files" in args[0]:
            calls += 1
            if calls == 3:
                raise RuntimeError("worker killed")
        return await real(*args)

    monkeypatch.setattr(metadata, method, failing)
    with pytest.raises(RuntimeError, match="worker killed"):
        await index_codebase(run, IndexCodebaseRequest(directory=str(root), project="proj"))
    written = await unit_rows(run)
    assert 0 < written < 12 * 4
    monkeypatch.setattr(metadata, method, real)

    rerun = await index(run, root)
    assert rerun.files_unchanged + rerun.files_indexed == 12
    assert rerun.files_unchanged > 0 and rerun.files_indexed > 0
    assert await unit_rows(run) == 12 * 4  # MATH's one unit and RETRY's three, per file
    assert len(await points(run)) == 12 * 4
    assert rerun.units_indexed == 4 * rerun.files_indexed
    assert (await index(run, root)).files_unchanged == 12


async def test_undecodable_files_are_reported_and_not_retried(run: JobRun, spy: Spy, tmp_path: Path) -> None:
    root = make_tree(tmp_path / "src", FILES)
    (root / "latin1.py").write_bytes(b"def caf\xe9():\n    pass\n")
    result = await index(run, root)
    assert result.files_indexed == 3
    assert [(e.file_path, e.error_type) for e in result.errors] == [("latin1.py", "encoding_error")]
    again = await index(run, root)
    assert again.files_unchanged == 4 and again.errors == []


async def test_search_finds_the_right_unit_first_with_filters(run: JobRun, spy: Spy, tmp_path: Path) -> None:
    assert (await search_code(run, SearchCodeRequest(query="retry"))).results == []
    assert run.services._embedder.ready is None  # an empty index answers without the model

    await index(run, make_tree(tmp_path / "a", FILES), project="alpha")
    await index(run, make_tree(tmp_path / "b", {"m.py": MATH}), project="beta")
    query = "how long to wait before retrying a 429 retry delay"
    hits = (await search_code(run, SearchCodeRequest(query=query, project="alpha"))).results
    assert hits[0].qualified_name == "calculate_retry_delay"
    assert hits[0].file_path == "client/retry.py" and hits[0].language == "python"
    assert hits[0].start_line == 4 and hits[0].has_docstring
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert {h.project for h in hits} == {"alpha"}

    beta = (await search_code(run, SearchCodeRequest(query="add numbers", project="beta"))).results
    assert [h.qualified_name for h in beta] == ["add_numbers"]
    python = await search_code(run, SearchCodeRequest(query="send request", language="python", limit=50))
    assert {h.project for h in python.results} == {"alpha", "beta"}
    assert (await search_code(run, SearchCodeRequest(query="send", language="go"))).results == []


async def test_list_and_delete_projects(run: JobRun, spy: Spy, tmp_path: Path) -> None:
    assert (await list_indexed_projects(run, ListProjectsRequest())).projects == []
    await index(run, make_tree(tmp_path / "a", FILES), project="alpha")
    await index(run, make_tree(tmp_path / "b", {"m.py": MATH}), project="beta")
    listed = (await list_indexed_projects(run, ListProjectsRequest())).projects
    assert [(p.project, p.units) for p in listed] == [("alpha", UNITS), ("beta", 1)]

    deleted = await delete_project_index(run, DeleteProjectRequest(project="alpha"))
    assert deleted.units_deleted == UNITS
    listed = (await list_indexed_projects(run, ListProjectsRequest())).projects
    assert [(p.project, p.units) for p in listed] == [("beta", 1)]
    assert (await delete_project_index(run, DeleteProjectRequest(project="alpha"))).units_deleted == 0
    # Through the registry too, and a deleted project indexes from scratch again.
    envelope = await execute(DELETE_PROJECT, {"project": "beta"}, run)
    assert envelope == {"ok": {"project": "beta", "units_deleted": 1}}
    assert (await index(run, tmp_path / "b", project="beta")).files_indexed == 1


async def test_parallel_runs_of_one_project_take_turns(run: JobRun, spy: Spy, tmp_path: Path) -> None:
    root = make_tree(tmp_path / "src", FILES)
    first, second = await asyncio.gather(index(run, root), index(run, root))
    assert (first.files_indexed, second.files_unchanged) == (3, 3)
    assert len(await points(run)) == UNITS


async def test_non_recursive_index(run: JobRun, spy: Spy, tmp_path: Path) -> None:
    root = make_tree(tmp_path / "src", {**FILES, "top.py": MATH})
    result = await index(run, root, recursive=False)
    assert (result.files_indexed, result.units_indexed) == (1, 1)


async def test_directory_validation(
    run: JobRun, spy: Spy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_file = tmp_path / "file.py"
    a_file.write_text("x = 1\n")
    cases = {
        str(tmp_path / "missing"): "does not exist",
        str(a_file): "is not a directory",
        str(a_file / "below"): "does not exist",
        "relative/dir": "absolute",
    }
    for directory, message in cases.items():
        with pytest.raises(ValidationError, match=message):
            await index(run, Path(directory))
        envelope = await execute(INDEX_CODEBASE, {"directory": directory, "project": "p"}, run)
        assert envelope["error"]["type"] == "validation_error"
    (tmp_path / "locked").mkdir()
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(ValidationError, match="not readable"):
        await index(run, tmp_path / "locked")


def test_embedding_text_spells_identifiers_out() -> None:
    assert split_identifier("Outer.calculateRetryDelay") == "outer calculate retry delay"
    assert split_identifier("parse_HTTPResponse2") == "parse http response 2"
    assert query_text("where is calculateRetryDelay") == "where is calculateRetryDelay\ncalculate retry delay"
    assert query_text("plain words") == "plain words"
    (unit,) = fake_parse_source(MATH.encode(), language="python", project="p", file_path="m.py").units
    text = embedding_text(unit)
    assert text.startswith("add numbers\ndef add_numbers(a, b)\nAdd two numbers.\n")
    assert "return a + b" in text


# --- with the real parser (tree-sitter) ------------------------------------------------------


async def test_real_parser_indexes_python_and_search_finds_it(run: JobRun, tmp_path: Path) -> None:
    root = make_tree(tmp_path / "src", FILES)
    result = await index(run, root)
    assert result.files_indexed == 3 and result.errors == []
    names = {p["qualified_name"] for p in await points(run)}
    assert {"calculate_retry_delay", "HttpClient", "HttpClient.send", "add_numbers"} <= names
    hits = (
        await search_code(run, SearchCodeRequest(query="retry delay after a 429", language="python"))
    ).results
    assert hits[0].qualified_name == "calculate_retry_delay"
    assert (await index(run, root)).files_unchanged == 3
