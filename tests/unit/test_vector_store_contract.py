"""One contract for every vector store engine: Qdrant Edge (in tmp_path) and the Qdrant server
store (through qdrant-client's ":memory:" mode, which shares the server's API).

The data set is small and exact (brute force in both engines), so expected answers are computed
with numpy and plain Python next to each query.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytest_asyncio

from learning_memory.shared.errors import StorageError
from learning_memory.shared.settings import Settings
from learning_memory.worker.vectors.base import (
    CollectionSpec,
    Filter,
    MatchAny,
    MatchValue,
    PointData,
    Range,
    VectorStore,
)
from learning_memory.worker.vectors.edge import EdgeVectorStore
from learning_memory.worker.vectors.factory import open_vector_store
from learning_memory.worker.vectors.server import QdrantServerStore

DIM = 12
N = 40
COLLECTION = "items"
TAGS = ("red", "green", "blue")
CATEGORIES = ("alpha", "beta", "gamma")
SPEC = CollectionSpec(
    COLLECTION,
    DIM,
    {"category": "keyword", "rank": "integer", "score": "float", "flag": "bool", "tags": "keyword"},
)
REPO_ROOT = Path(__file__).resolve().parents[2]
SUBPROCESS_TIMEOUT_S = 60
# One event loop for the module, so the read-only tests can share one filled store per engine.
pytestmark = pytest.mark.asyncio(loop_scope="module")


def _payload(i: int) -> dict[str, Any]:
    return {
        "category": CATEGORIES[i % 3],
        "rank": i,
        # Distinct, and in another order than rank and id.
        "score": ((i * 7) % N) / 4 + 0.125,
        "flag": i % 4 == 0,
        "tags": [tag for bit, tag in enumerate(TAGS) if (i >> bit) & 1],
        "size": 100 - i,  # numeric but not indexed
    }


IDS = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"lms-test/{i}")) for i in range(N)]
PAYLOADS = [_payload(i) for i in range(N)]
VECTORS = np.random.default_rng(7).standard_normal((N, DIM)).astype(np.float32)
UNIT = VECTORS / np.linalg.norm(VECTORS, axis=1, keepdims=True)


def _points() -> list[PointData]:
    return [PointData(IDS[i], VECTORS[i], PAYLOADS[i]) for i in range(N)]


async def _open(engine: str, folder: Path) -> VectorStore:
    if engine == "edge":
        return await EdgeVectorStore.open(folder / "vectors")
    return QdrantServerStore(":memory:")


@pytest_asyncio.fixture(params=["edge", "server"], loop_scope="module")
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VectorStore]:
    engine = await _open(request.param, tmp_path)
    yield engine
    await engine.close()


@pytest_asyncio.fixture(loop_scope="module")
async def filled(store: VectorStore) -> VectorStore:
    """A store of its own, for tests that write."""
    await store.ensure_collection(SPEC)
    await store.upsert(COLLECTION, _points())
    return store


@pytest_asyncio.fixture(params=["edge", "server"], scope="module", loop_scope="module")
async def shared(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[VectorStore]:
    """One filled store per engine for the module: tests that take it must not write."""
    engine = await _open(request.param, tmp_path_factory.mktemp("shared"))
    await engine.ensure_collection(SPEC)
    await engine.upsert(COLLECTION, _points())
    yield engine
    await engine.close()


# --- collections ---------------------------------------------------------------------------


async def test_ensure_creates_once_and_is_idempotent(store: VectorStore) -> None:
    assert not await store.collection_exists(COLLECTION)
    await store.ensure_collection(SPEC)
    assert await store.collection_exists(COLLECTION)
    await store.upsert(COLLECTION, _points()[:3])
    await store.ensure_collection(SPEC)
    assert await store.count(COLLECTION) == 3


async def test_dimension_mismatch_says_how_to_reindex(filled: VectorStore) -> None:
    with pytest.raises(StorageError) as caught:
        await filled.ensure_collection(CollectionSpec(COLLECTION, DIM + 4))
    message = caught.value.message
    assert str(DIM) in message and str(DIM + 4) in message
    assert "delete" in message and "re-index" in message
    assert await filled.count(COLLECTION) == N  # nothing was lost


async def test_unknown_collection_is_a_storage_error(shared: VectorStore) -> None:
    with pytest.raises(StorageError):
        await shared.count("missing")
    with pytest.raises(StorageError):
        await shared.search("missing", VECTORS[0], limit=3)


# --- points ----------------------------------------------------------------------------------


async def test_get_keeps_the_order_asked_and_skips_missing_ids(shared: VectorStore) -> None:
    asked = [IDS[5], str(uuid.uuid4()), IDS[1], IDS[30]]
    records = await shared.get(COLLECTION, asked)
    assert [r.id for r in records] == [IDS[5], IDS[1], IDS[30]]
    assert records[0].payload == PAYLOADS[5]
    assert all(r.vector is None for r in records)
    assert await shared.get(COLLECTION, []) == []


async def test_get_with_vectors_returns_the_normalised_vector(shared: VectorStore) -> None:
    (record,) = await shared.get(COLLECTION, [IDS[2]], with_vectors=True)
    assert record.vector is not None
    np.testing.assert_allclose(record.vector, UNIT[2], atol=1e-5)


async def test_upsert_replaces_by_id(filled: VectorStore) -> None:
    again = [PointData(IDS[i], VECTORS[(i + 1) % N], {**PAYLOADS[i], "rank": 1000 + i}) for i in range(5)]
    await filled.upsert(COLLECTION, again)
    await filled.upsert(COLLECTION, again)  # a retried job
    assert await filled.count(COLLECTION) == N
    (record,) = await filled.get(COLLECTION, [IDS[3]], with_vectors=True)
    assert record.payload["rank"] == 1003
    assert record.vector is not None
    np.testing.assert_allclose(record.vector, UNIT[4], atol=1e-5)


async def test_delete_ignores_unknown_ids(filled: VectorStore) -> None:
    await filled.delete(COLLECTION, [IDS[0], str(uuid.uuid4()), IDS[7]])
    await filled.delete(COLLECTION, [])
    assert await filled.count(COLLECTION) == N - 2
    assert [r.id for r in await filled.get(COLLECTION, [IDS[0], IDS[7], IDS[8]])] == [IDS[8]]


async def test_bad_points_are_storage_errors(filled: VectorStore) -> None:
    with pytest.raises(StorageError):
        await filled.upsert(COLLECTION, [PointData("not-a-uuid", VECTORS[0], {})])
    with pytest.raises(StorageError):
        await filled.upsert(
            COLLECTION, [PointData(str(uuid.uuid4()), np.ones(DIM + 1, dtype=np.float32), {})]
        )
    with pytest.raises(StorageError):
        await filled.count(COLLECTION, Filter((MatchAny("rank", (1, "one")),)))


# --- search ----------------------------------------------------------------------------------


async def test_search_ranks_by_cosine_similarity(shared: VectorStore) -> None:
    query = np.random.default_rng(11).standard_normal(DIM).astype(np.float32)
    expected = UNIT @ (query / np.linalg.norm(query))
    hits = await shared.search(COLLECTION, query, limit=5)
    assert len(hits) == 5
    best = np.argsort(-expected)[:5]
    assert [h.id for h in hits] == [IDS[i] for i in best]
    np.testing.assert_allclose([h.score for h in hits], expected[best], atol=1e-5)
    assert hits[0].payload == PAYLOADS[best[0]]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    bare = await shared.search(COLLECTION, query, limit=5, with_payload=False)
    assert [(h.id, h.payload) for h in bare] == [(h.id, {}) for h in hits]


async def test_search_finds_a_stored_vector_first_with_score_one(shared: VectorStore) -> None:
    hits = await shared.search(COLLECTION, list(map(float, VECTORS[9] * 3)), limit=1)
    assert [h.id for h in hits] == [IDS[9]]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert len(await shared.search(COLLECTION, VECTORS[0], limit=100)) == N


async def test_a_half_precision_collection_ranks_as_a_full_one(store: VectorStore) -> None:
    await store.ensure_collection(replace(SPEC, half_precision=True))
    await store.upsert(COLLECTION, _points())
    query = np.random.default_rng(11).standard_normal(DIM).astype(np.float32)
    expected = UNIT @ (query / np.linalg.norm(query))
    hits = await store.search(COLLECTION, query, limit=5)
    best = np.argsort(-expected)[:5]
    assert [h.id for h in hits] == [IDS[i] for i in best]
    # 16-bit floats: scores within a few thousandths of the exact ones.
    np.testing.assert_allclose([h.score for h in hits], expected[best], atol=3e-3)
    (record,) = await store.get(COLLECTION, [IDS[3]], with_vectors=True)
    assert record.vector is not None
    np.testing.assert_allclose(record.vector, UNIT[3], atol=3e-3)


# --- filters ---------------------------------------------------------------------------------

Predicate = Callable[[dict[str, Any]], bool]
FILTERS: dict[str, tuple[Filter, Predicate]] = {
    "string equality": (Filter((MatchValue("category", "beta"),)), lambda p: p["category"] == "beta"),
    "bool true": (Filter((MatchValue("flag", True),)), lambda p: p["flag"] is True),
    "bool false": (Filter((MatchValue("flag", False),)), lambda p: p["flag"] is False),
    "int equality": (Filter((MatchValue("rank", 7),)), lambda p: p["rank"] == 7),
    "list contains": (Filter((MatchValue("tags", "red"),)), lambda p: "red" in p["tags"]),
    "any of strings": (
        Filter((MatchAny("category", ("alpha", "gamma")),)),
        lambda p: p["category"] in ("alpha", "gamma"),
    ),
    "any of list": (
        Filter((MatchAny("tags", ("green", "blue")),)),
        lambda p: bool({"green", "blue"} & set(p["tags"])),
    ),
    "any of ints": (Filter((MatchAny("rank", (1, 2, 3, 99)),)), lambda p: p["rank"] in (1, 2, 3)),
    "any of nothing": (Filter((MatchAny("category", ()),)), lambda p: False),
    "gte": (Filter((Range("score", gte=2.625),)), lambda p: p["score"] >= 2.625),
    "gt": (Filter((Range("score", gt=2.625),)), lambda p: p["score"] > 2.625),
    "lte": (Filter((Range("score", lte=3.375),)), lambda p: p["score"] <= 3.375),
    "lt": (Filter((Range("score", lt=3.375),)), lambda p: p["score"] < 3.375),
    "between": (Filter((Range("score", gte=1.5, lt=6.125),)), lambda p: 1.5 <= p["score"] < 6.125),
    "int range": (Filter((Range("rank", gt=5, lte=10),)), lambda p: 5 < p["rank"] <= 10),
    "combined": (
        Filter((MatchValue("category", "alpha"), Range("score", lt=7.0), MatchAny("tags", ("red",)))),
        lambda p: p["category"] == "alpha" and p["score"] < 7.0 and "red" in p["tags"],
    ),
    "empty": (Filter(), lambda p: True),
}


@pytest.mark.parametrize("name", list(FILTERS))
async def test_filters_agree_in_count_scroll_and_search(shared: VectorStore, name: str) -> None:
    flt, predicate = FILTERS[name]
    expected = {IDS[i] for i in range(N) if predicate(PAYLOADS[i])}
    assert await shared.count(COLLECTION, flt) == len(expected)
    assert {r.id for r in await shared.scroll(COLLECTION, limit=N, filter=flt)} == expected
    hits = await shared.search(COLLECTION, VECTORS[0], limit=N, filter=flt)
    assert {h.id for h in hits} == expected


async def test_count_without_filter(shared: VectorStore) -> None:
    assert await shared.count(COLLECTION) == N
    assert await shared.count(COLLECTION, None) == N


# --- scroll ----------------------------------------------------------------------------------


async def test_scroll_pages_by_id_cover_everything_once(shared: VectorStore) -> None:
    pages = [await shared.scroll(COLLECTION, limit=7, offset=offset) for offset in range(0, N + 7, 7)]
    seen = [r.id for page in pages for r in page]
    assert seen == sorted(IDS)
    assert pages[-1] == []
    assert pages[0][0].payload == PAYLOADS[IDS.index(seen[0])]


@pytest.mark.parametrize(("field", "descending"), [("rank", True), ("rank", False), ("score", True)])
async def test_scroll_order_by_with_offset(shared: VectorStore, field: str, descending: bool) -> None:
    ordered = sorted(range(N), key=lambda i: PAYLOADS[i][field], reverse=descending)
    page = await shared.scroll(COLLECTION, limit=5, offset=3, order_by=field, descending=descending)
    assert [r.id for r in page] == [IDS[i] for i in ordered[3:8]]
    pages = [
        await shared.scroll(COLLECTION, limit=6, offset=o, order_by=field, descending=descending)
        for o in range(0, N, 6)
    ]
    assert [r.id for p in pages for r in p] == [IDS[i] for i in ordered]


async def test_scroll_order_by_with_filter_leaves_out_points_without_the_field(filled: VectorStore) -> None:
    await filled.upsert(COLLECTION, [PointData(str(uuid.uuid4()), VECTORS[0], {"category": "beta"})])
    flt = Filter((MatchValue("category", "beta"),))
    page = await filled.scroll(COLLECTION, limit=N, filter=flt, order_by="rank", descending=False)
    assert [r.payload["rank"] for r in page] == sorted(p["rank"] for p in PAYLOADS if p["category"] == "beta")


async def test_scroll_order_by_needs_a_numeric_index(shared: VectorStore) -> None:
    with pytest.raises(StorageError, match="index"):
        await shared.scroll(COLLECTION, limit=3, order_by="size")


# --- Qdrant Edge only -------------------------------------------------------------------------

LOCK_SNIPPET = """
import sys
from learning_memory.shared.errors import StorageError
from learning_memory.worker.vectors.edge import EdgeVectorStore
try:
    EdgeVectorStore(sys.argv[1])
except StorageError as exc:
    print(exc.message)
    sys.exit(3)
print("locked")
"""


async def _open_in_another_process(root: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        LOCK_SNIPPET,
        str(root),
        cwd=REPO_ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(), SUBPROCESS_TIMEOUT_S)
    assert proc.returncode is not None
    return proc.returncode, stdout.decode() + stderr.decode()


async def test_edge_lock_keeps_other_processes_out_until_close(tmp_path: Path) -> None:
    root = tmp_path / "vectors"
    store = await EdgeVectorStore.open(root)
    try:
        code, output = await _open_in_another_process(root)
        assert code == 3, output
        assert "LMS_QDRANT_URL" in output and str(os.getpid()) in output and str(root) in output
        with pytest.raises(StorageError, match="LMS_QDRANT_URL"):
            EdgeVectorStore(root)  # a second store in this process is refused too
    finally:
        await store.close()
    code, output = await _open_in_another_process(root)
    assert code == 0 and "locked" in output, output
    reopened = EdgeVectorStore(root)
    await reopened.close()


async def test_edge_keeps_points_across_close_and_reopen(tmp_path: Path) -> None:
    store = await EdgeVectorStore.open(tmp_path / "vectors")
    await store.ensure_collection(SPEC)
    await store.upsert(COLLECTION, _points())
    await store.delete(COLLECTION, [IDS[0]])
    await store.close()

    store = await EdgeVectorStore.open(tmp_path / "vectors")
    try:
        assert await store.collection_exists(COLLECTION)
        assert await store.count(COLLECTION) == N - 1
        assert [r.id for r in await store.get(COLLECTION, [IDS[0], IDS[1]])] == [IDS[1]]
        assert (await store.search(COLLECTION, VECTORS[5], limit=1))[0].id == IDS[5]
        page = await store.scroll(COLLECTION, limit=2, order_by="rank")
        assert [r.payload["rank"] for r in page] == [N - 1, N - 2]  # the payload index survived
    finally:
        await store.close()


async def test_edge_reopens_a_half_precision_collection_as_it_was_made(tmp_path: Path) -> None:
    store = await EdgeVectorStore.open(tmp_path / "vectors")
    await store.ensure_collection(replace(SPEC, half_precision=True))
    await store.ensure_collection(replace(SPEC, name="full"))
    await store.upsert(COLLECTION, _points())
    await store.upsert("full", _points())
    await store.close()

    # Each is loaded with its stored vector type (Edge refuses a shard of another type), and a
    # collection made with 32-bit vectors keeps them when half precision is asked for later.
    store = await EdgeVectorStore.open(tmp_path / "vectors")
    try:
        await store.ensure_collection(replace(SPEC, name="full", half_precision=True))
        for name in (COLLECTION, "full"):
            assert (await store.search(name, VECTORS[5], limit=1))[0].id == IDS[5]
        stored = {
            name: json.loads((tmp_path / "vectors" / name / "edge_config.json").read_text())["vectors"][""]
            for name in (COLLECTION, "full")
        }
        assert stored[COLLECTION]["datatype"] == "float16"
        assert stored["full"].get("datatype", "float32") == "float32"
    finally:
        await store.close()


async def test_edge_optimises_in_the_background_after_enough_writes(tmp_path: Path) -> None:
    # HNSW on for segments over 4 KiB of vectors, and a pass after every 300 writes.
    store = await EdgeVectorStore.open(tmp_path / "vectors", optimize_every=300, hnsw_threshold=4096)
    try:
        await store.ensure_collection(SPEC)
        vectors = np.random.default_rng(3).standard_normal((700, DIM)).astype(np.float32)
        ids = [str(uuid.uuid4()) for _ in range(700)]
        await store.upsert(COLLECTION, [PointData(ids[i], vectors[i], {"rank": i}) for i in range(700)])
        await store.wait_for_background()
        shard = store._collections[COLLECTION].shard
        assert shard.info().indexed_vectors_count > 0
        assert await store.count(COLLECTION) == 700
        assert [h.id for h in await store.search(COLLECTION, vectors[123], limit=1)] == [ids[123]]
    finally:
        await store.close()


async def test_edge_default_keeps_search_exact_without_hnsw(tmp_path: Path) -> None:
    store = await EdgeVectorStore.open(tmp_path / "vectors", optimize_every=100)
    try:
        await store.ensure_collection(SPEC)
        await store.upsert(COLLECTION, _points() * 3)  # replaced twice over: 120 writes
        await store.delete(COLLECTION, IDS[:10])
        await store.wait_for_background()
        await store.optimize(COLLECTION)
        assert store._collections[COLLECTION].shard.info().indexed_vectors_count == 0
        assert await store.count(COLLECTION) == N - 10
    finally:
        await store.close()


async def test_closed_edge_store_refuses_work(tmp_path: Path) -> None:
    store = await EdgeVectorStore.open(tmp_path / "vectors")
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(StorageError, match="closed"):
        await store.count(COLLECTION)


async def test_factory_picks_the_engine_from_settings(tmp_path: Path) -> None:
    edge = await open_vector_store(Settings(data_dir=tmp_path, qdrant_url=None))
    try:
        assert isinstance(edge, EdgeVectorStore) and edge.root == tmp_path / "vectors"
    finally:
        await edge.close()
    server = await open_vector_store(Settings(data_dir=tmp_path, qdrant_url=":memory:"))
    try:
        assert isinstance(server, QdrantServerStore)
    finally:
        await server.close()


# --- delete by filter ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["string equality", "any of strings", "combined", "any of nothing", "empty"])
async def test_delete_by_filter_removes_exactly_the_matches(filled: VectorStore, name: str) -> None:
    flt, predicate = FILTERS[name]
    kept = {IDS[i] for i in range(N) if not predicate(PAYLOADS[i])}
    await filled.delete_by_filter(COLLECTION, flt)
    assert await filled.count(COLLECTION) == len(kept)
    assert {r.id for r in await filled.scroll(COLLECTION, limit=N)} == kept
    await filled.delete_by_filter(COLLECTION, flt)  # a retried job: nothing more goes
    assert await filled.count(COLLECTION) == len(kept)


async def test_delete_by_filter_then_upsert_brings_points_back(filled: VectorStore) -> None:
    flt = Filter((MatchValue("category", "beta"),))
    await filled.delete_by_filter(COLLECTION, flt)
    await filled.upsert(COLLECTION, _points())
    assert await filled.count(COLLECTION) == N
    assert await filled.count(COLLECTION, flt) == sum(p["category"] == "beta" for p in PAYLOADS)


async def test_delete_by_filter_on_a_missing_collection_is_a_storage_error(shared: VectorStore) -> None:
    with pytest.raises(StorageError):
        await shared.delete_by_filter("missing", Filter((MatchValue("category", "beta"),)))


@pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")
async def test_a_server_behind_an_api_key_gets_it_with_every_request(tmp_path: Path) -> None:
    """A stand-in Qdrant server that records the headers it is sent."""
    seen: list[str | None] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("api-key"))
            result: dict[str, object] = (
                {"exists": False} if self.path.endswith("/exists") else {"collections": []}
            )
            body = json.dumps({"result": result, "status": "ok", "time": 0}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        settings = Settings(data_dir=tmp_path, qdrant_url=url, qdrant_api_key="s3cret")
        assert settings.to_env()["LMS_QDRANT_API_KEY"] == "s3cret"  # an autostarted worker gets it too
        store = await open_vector_store(settings)
        try:
            assert not await store.collection_exists(COLLECTION)
        finally:
            await store.close()
    finally:
        server.shutdown()
        server.server_close()
    assert seen and all(key == "s3cret" for key in seen)


async def test_pages_read_everything_once_by_cursor(shared: VectorStore) -> None:
    pages = [page async for page in shared.pages(COLLECTION, size=7)]
    assert [r.id for page in pages for r in page] == sorted(IDS)
    assert all(0 < len(page) <= 7 for page in pages)
    flt, predicate = FILTERS[next(iter(FILTERS))]
    chosen = [
        r
        async for page in shared.pages(
            COLLECTION, size=3, filter=flt, with_vectors=True, payload_fields=["rank"]
        )
        for r in page
    ]
    assert {r.id for r in chosen} == {IDS[i] for i in range(N) if predicate(PAYLOADS[i])}
    assert all(r.vector is not None and set(r.payload) <= {"rank"} for r in chosen)
