"""Short embedding calls on ONNX Runtime: exported from the real model, checked against torch."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shared.settings import load_settings
from worker.embedding import onnx_query
from worker.embedding.cache import CachingEmbedder
from worker.embedding.factory import open_embedder
from worker.embedding.onnx_query import build_encoder
from worker.embedding.sentence import FAST_PATH_MAX_TEXTS, SentenceTransformerEmbedder
from worker.metadata import MetadataStore

pytestmark = pytest.mark.slow

TEXTS = [
    "def retry(request, attempts=3):\n    for _ in range(attempts):\n        return request()",
    "parse a version string",
    "x",
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def embedder(models: Path) -> Iterator[SentenceTransformerEmbedder]:
    loaded = asyncio.run(SentenceTransformerEmbedder.load(onnx_dir=models))
    assert loaded.wait_for_fast_path(120)
    yield loaded


def torch_vectors(embedder: SentenceTransformerEmbedder, texts: list[str]) -> np.ndarray[Any, Any]:
    return embedder._encode(texts)


def test_the_export_is_one_whole_file_reused_by_later_starts(
    embedder: SentenceTransformerEmbedder, models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = sorted(path.name for path in models.iterdir())
    assert len(files) == 1 and files[0].startswith("all-MiniLM-L6-v2-") and files[0].endswith(".onnx")

    def no_export(*args: object) -> None:
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_query, "_export", no_export)
    assert build_encoder(embedder._model, embedder.model_name, models) is not None


async def test_short_calls_give_torchs_vectors(embedder: SentenceTransformerEmbedder) -> None:
    expected = torch_vectors(embedder, TEXTS)
    one_by_one = np.vstack([await embedder.embed([text]) for text in TEXTS])
    together = await embedder.embed(TEXTS)  # padded to the longest
    for got in (one_by_one, together):
        assert got.dtype == np.float32 and got.shape == (3, 384)
        assert np.min(np.sum(got * expected, axis=1)) > 0.9999


async def test_batches_stay_on_torch(
    embedder: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert embedder._fast is not None

    def refuse(texts: list[str]) -> None:
        raise AssertionError("a batch went to ONNX")

    monkeypatch.setattr(embedder._fast, "encode", refuse)
    texts = [f"def f{i}(): return {i}" for i in range(FAST_PATH_MAX_TEXTS + 1)]
    assert (await embedder.embed(texts)).shape == (len(texts), 384)


async def test_a_failing_session_falls_back_to_torch(models: Path) -> None:
    loaded = await SentenceTransformerEmbedder.load(onnx_dir=models)
    assert loaded.wait_for_fast_path(120)
    fast = loaded._fast
    assert fast is not None

    def broken(texts: list[str]) -> None:
        raise RuntimeError("session lost")

    fast.encode = broken  # type: ignore[method-assign]
    got = await loaded.embed([TEXTS[0]])
    assert float(got[0] @ torch_vectors(loaded, [TEXTS[0]])[0]) > 0.9999
    assert loaded._fast is None  # given up on for the rest of the process


def test_a_damaged_file_is_exported_again(embedder: SentenceTransformerEmbedder, tmp_path: Path) -> None:
    first = build_encoder(embedder._model, embedder.model_name, tmp_path)
    assert first is not None
    (path,) = tmp_path.iterdir()
    path.write_bytes(b"not an onnx graph")
    again = build_encoder(embedder._model, embedder.model_name, tmp_path)
    assert again is not None
    assert path.stat().st_size > 1_000_000
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no partial files left


def test_partial_files_of_dead_exports_are_removed(
    embedder: SentenceTransformerEmbedder, tmp_path: Path
) -> None:
    orphan = tmp_path / f".model.onnx.{_exited_pid()}.tmp"
    orphan.write_bytes(b"half an export")
    mine = tmp_path / f".model.onnx.{os.getpid()}.tmp"  # a live process's: left alone
    mine.write_bytes(b"being written")
    assert build_encoder(embedder._model, embedder.model_name, tmp_path) is not None
    assert not orphan.exists() and mine.exists()


def _exited_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_vectors_that_disagree_are_refused(
    embedder: SentenceTransformerEmbedder, models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(onnx_query, "MIN_PROBE_COSINE", 1.5)  # no vector can pass
    assert build_encoder(embedder._model, embedder.model_name, models) is None


def test_without_onnxruntime_torch_answers(
    embedder: SentenceTransformerEmbedder, models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    assert build_encoder(embedder._model, embedder.model_name, models) is None


def test_an_unwritable_folder_costs_only_the_fast_path(
    embedder: SentenceTransformerEmbedder, tmp_path: Path
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the models folder should be")
    assert build_encoder(embedder._model, embedder.model_name, blocked / "models") is None


@pytest.mark.parametrize(("runtime", "fast"), [("onnx", True), ("torch", False)])
async def test_the_setting_chooses_the_runtime(tmp_path: Path, runtime: str, fast: bool) -> None:
    settings = load_settings(data_dir=tmp_path, query_runtime=runtime)
    store = await MetadataStore.open(tmp_path / "metadata.sqlite3")
    try:
        cached = await open_embedder(settings, store)
        assert isinstance(cached, CachingEmbedder)
        inner = cached.inner
        assert isinstance(inner, SentenceTransformerEmbedder)
        assert await asyncio.to_thread(inner.wait_for_fast_path, 120) is fast
        assert (tmp_path / "models").is_dir() is fast
    finally:
        await store.close()
