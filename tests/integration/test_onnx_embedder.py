"""The model on ONNX Runtime: exported by a subprocess from the real model, torch's vectors, and no
torch in the worker."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from learning_memory.shared.errors import EmbeddingError
from learning_memory.shared.settings import load_settings
from learning_memory.worker.embedding import export as export_module
from learning_memory.worker.embedding import onnx_embedder
from learning_memory.worker.embedding.cache import CachingEmbedder
from learning_memory.worker.embedding.export import _remove_orphans, export
from learning_memory.worker.embedding.factory import open_embedder
from learning_memory.worker.embedding.onnx_embedder import META, SUB_BATCH, OnnxEmbedder, OnnxUnavailable
from learning_memory.worker.embedding.sentence import SentenceTransformerEmbedder
from learning_memory.worker.embedding.source import DEFAULT_MODEL
from learning_memory.worker.metadata import MetadataStore

pytestmark = pytest.mark.slow

LONG_CODE = "\n".join(
    f"    def method_{i}(self, value: int) -> int:\n        '''Scale by {i}.'''\n        return {i} * value"
    for i in range(60)
)  # ~1,500 tokens: cut at 256
TEXTS = [
    "def retry(request, attempts=3):\n    for _ in range(attempts):\n        return request()",
    "How do I undo the last git commit?",
    "x",
    "",
    "   padded with spaces, tabs\tand a newline\n",
    "ÜNÏCÖDÉ text, 日本語のテキスト, emoji 🎉 and math ∑ x²",
    "class Repo:\n" + LONG_CODE,
    "word " * 300,
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models folder of its own, exported into by two processes at once (as two workers' first
    starts would): both succeed, and they leave one whole export."""
    folder = tmp_path_factory.mktemp("models")
    argv = [
        sys.executable,
        "-m",
        "learning_memory.worker.embedding.export",
        "--model",
        DEFAULT_MODEL,
        "--models-dir",
        str(folder),
    ]
    procs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=600) for proc in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    printed = {out.strip() for out, _ in outputs}
    exports = [path for path in folder.iterdir() if not path.name.startswith(".")]
    assert len(exports) == 1 and printed == {str(exports[0])}
    assert not list(folder.glob(".*.tmp"))  # no partial folder left
    return folder


@pytest.fixture(scope="module")
def onnx(models: Path) -> OnnxEmbedder:
    return asyncio.run(OnnxEmbedder.open(DEFAULT_MODEL, models))


@pytest.fixture(scope="module")
def torch_model() -> SentenceTransformerEmbedder:
    return asyncio.run(SentenceTransformerEmbedder.load(DEFAULT_MODEL))


def assert_same_vectors(got: np.ndarray[Any, Any], expected: np.ndarray[Any, Any]) -> None:
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-4)
    assert float(np.min(np.sum(got * expected, axis=1))) >= 0.9999


async def test_torchs_vectors_one_at_a_time_and_in_batches(
    onnx: OnnxEmbedder, torch_model: SentenceTransformerEmbedder
) -> None:
    assert onnx.model_name == torch_model.model_name == DEFAULT_MODEL  # the same cache entries
    assert onnx.dimension == 384 and onnx.max_seq_length == 256
    expected = await torch_model.embed(TEXTS)
    assert_same_vectors(np.vstack([await onnx.embed([text]) for text in TEXTS]), expected)
    assert_same_vectors(await onnx.embed(TEXTS), expected)
    # More than a run, lengths mixed: sorted, cut into runs and padded per run, yet in input order.
    mixed = [
        ("token " * ((i * 37) % 400)) + f"{i} " + TEXTS[i % len(TEXTS)] for i in range(5 * SUB_BATCH + 3)
    ]
    assert_same_vectors(await onnx.embed(mixed), await torch_model.embed(mixed))
    assert (await onnx.embed([])).shape == (0, 384)


async def test_concurrent_calls_agree_with_single_ones(onnx: OnnxEmbedder) -> None:
    texts = [f"note {i}: the worker embeds text number {i} " + "x " * (i % 50) for i in range(70)]
    whole = await onnx.embed(texts)
    halves = await asyncio.gather(onnx.embed(texts[:35]), onnx.embed(texts[35:]), onnx.embed(texts[:3]))
    np.testing.assert_allclose(whole, np.concatenate(halves[:2]), atol=1e-5)
    np.testing.assert_allclose(whole[:3], halves[2], atol=1e-5)


async def test_head_is_where_the_tokenizer_cuts(
    onnx: OnnxEmbedder, torch_model: SentenceTransformerEmbedder
) -> None:
    text = "class Repo:\n" + LONG_CODE
    for max_tokens in (1, 17, 128, 254, 1000):
        assert onnx.head(text, max_tokens) == torch_model.head(text, max_tokens)
    head = onnx.head(text, onnx.max_seq_length - 2)  # what the model sees, between [CLS] and [SEP]
    assert text.startswith(head) and len(head) < len(text)
    np.testing.assert_allclose(await onnx.embed([head]), await onnx.embed([text]), atol=1e-6)
    assert onnx.head("short text", 128) == "short text"
    assert onnx.head("", 128) == "" and onnx.head("text", 0) == ""


def _export_of(models: Path) -> Path:
    (folder,) = (path for path in models.iterdir() if not path.name.startswith("."))
    return folder


def test_the_export_holds_what_the_worker_reads(models: Path) -> None:
    folder = _export_of(models)
    assert folder.name.startswith(f"{DEFAULT_MODEL}-")
    assert sorted(path.name for path in folder.iterdir()) == ["embedder.json", "model.onnx", "tokenizer.json"]
    meta = json.loads((folder / META).read_text())
    assert meta["max_seq_length"] == 256 and meta["dimension"] == 384
    assert len(meta["reference"]) == len(meta["probes"])


async def test_an_export_is_reused_not_made_again(models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_export(*args: object, **kwargs: object) -> None:
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_embedder, "run_export", no_export)
    assert (await OnnxEmbedder.open(DEFAULT_MODEL, models)).dimension == 384

    def no_export_here(*args: object) -> None:
        raise AssertionError("exported again")

    monkeypatch.setattr(export_module, "_export_into", no_export_here)
    assert export(DEFAULT_MODEL, models) == _export_of(models)


async def test_a_damaged_export_is_made_again(models: Path, tmp_path: Path) -> None:
    copy = tmp_path / "models"
    shutil.copytree(models, copy)
    folder = _export_of(copy)
    (folder / "model.onnx").write_bytes(b"not an onnx graph")
    embedder = await OnnxEmbedder.open(DEFAULT_MODEL, copy)
    assert (folder / "model.onnx").stat().st_size > 1_000_000
    assert embedder.check() is None
    assert not list(copy.glob(".*.tmp"))


def test_partial_folders_of_dead_exports_are_removed(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    orphans = [tmp_path / f".m-1.{dead.pid}.tmp", tmp_path / f".m-1.{dead.pid}.old.tmp"]
    mine = tmp_path / f".m-1.{os.getpid()}.tmp"  # a live process's: left alone
    for folder in (*orphans, mine):
        folder.mkdir()
        (folder / "model.onnx").write_bytes(b"half an export")
    _remove_orphans(tmp_path)
    assert not any(path.exists() for path in orphans) and mine.exists()


async def test_vectors_that_disagree_mean_torch(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exports: list[bool] = []

    async def counted(model: str, models_dir: Path, *, replace: bool = False) -> None:
        exports.append(replace)

    monkeypatch.setattr(onnx_embedder, "run_export", counted)
    monkeypatch.setattr(onnx_embedder, "MIN_PROBE_COSINE", 1.5)  # no vector can pass
    with pytest.raises(OnnxUnavailable, match="differ from torch's"):
        await OnnxEmbedder.open(DEFAULT_MODEL, models)
    assert exports == [True]  # exported again once, then given up on
    inner = await _open_inner(tmp_path, models_dir=models)
    assert isinstance(inner, SentenceTransformerEmbedder)


async def test_without_onnxruntime_torch_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(OnnxUnavailable, match="onnxruntime cannot be used"):
        await OnnxEmbedder.open(DEFAULT_MODEL, tmp_path / "models")
    assert isinstance(
        await _open_inner(tmp_path, models_dir=tmp_path / "models"), SentenceTransformerEmbedder
    )


async def test_a_failed_export_says_why_and_torch_says_it_too(tmp_path: Path) -> None:
    not_a_model = tmp_path / "not-a-model"
    not_a_model.mkdir()
    (not_a_model / "config.json").write_text("{}")
    with pytest.raises(OnnxUnavailable, match=r"export of .* failed .*cannot load model"):
        await OnnxEmbedder.open(str(not_a_model), tmp_path / "models")
    with pytest.raises(EmbeddingError, match="Cannot load embedding model"):
        await _open_inner(tmp_path, embedding_model=str(not_a_model), models_dir=tmp_path / "models")


async def test_the_wait_for_an_export_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnx_embedder, "EXPORT_TIMEOUT_S", 0.05)
    with pytest.raises(OnnxUnavailable, match="took over"):
        await OnnxEmbedder.open(DEFAULT_MODEL, tmp_path / "models")


@pytest.mark.parametrize(
    ("runtime", "kind"), [("onnx", OnnxEmbedder), ("torch", SentenceTransformerEmbedder)]
)
async def test_the_setting_chooses_the_runtime(
    models: Path, tmp_path: Path, runtime: str, kind: type
) -> None:
    assert isinstance(await _open_inner(tmp_path, models_dir=models, embedding_runtime=runtime), kind)


async def _open_inner(data: Path, **overrides: Any) -> Any:
    store = await MetadataStore.open(data / "metadata.sqlite3")
    try:
        cached = await open_embedder(load_settings(data_dir=data, **overrides), store)
        assert isinstance(cached, CachingEmbedder)
        return cached.inner
    finally:
        await store.close()


def test_the_worker_never_imports_torch(models: Path, tmp_path: Path) -> None:
    """The worker's modules, its services started, the model used for a query, a batch and a
    head: torch, transformers, sentence-transformers and hdbscan stay out of the process."""
    script = textwrap.dedent(
        """
        import asyncio, sys
        import learning_memory.worker.main  # what `learning-memory worker` imports
        from learning_memory.shared.settings import get_settings
        from learning_memory.worker.services import WorkerServices

        async def main():
            services = WorkerServices(get_settings())
            await services.start()
            embedder = await services.embedder()
            await embedder.embed(["a query"])
            await embedder.embed([f"def f{i}(): return {i}" for i in range(40)])
            embedder.head("some text", 2)
            await services.close()
            print(type(getattr(embedder, "inner", embedder)).__name__)
            # hdbscan (scikit-learn, scipy) runs in a child process per clustering: not here either.
            heavy = {"torch", "transformers", "sentence_transformers", "hdbscan", "sklearn"}
            print(sorted({m.split(".")[0] for m in sys.modules} & heavy))

        asyncio.run(main())
        """
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("LMS_")}
    env.update(LMS_DATA_DIR=str(tmp_path / "data"), LMS_MODELS_DIR=str(models), LMS_QUEUE="arq")
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-2:] == ["OnnxEmbedder", "[]"], done.stdout
