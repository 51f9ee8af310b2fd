"""The embedder on ONNX Runtime: a sentence-transformers model exported once to an ONNX graph and
run without torch, transformers or sentence-transformers in the process.

torch alone held most of the worker's memory (docs/benchmarks.md has the figures). Here the
worker holds the ONNX session and a Rust tokenizer. An export lives in a folder of the models
cache (``LMS_MODELS_DIR``), shared by every data folder, named after the model and a fingerprint
of its files and of what reads the export:

- ``model.onnx``: the model's own modules (transformer, pooling, normalisation) as one graph;
- ``tokenizer.json``: the fast tokenizer sentence-transformers uses for the model, as it set it up;
- ``embedder.json``: dimension, max_seq_length, the graph's inputs, probe texts and torch's
  vectors for them.

The export is made by a subprocess, ``python -m learning_memory.worker.embedding.export`` (which
imports torch, checks the export's tokens and vectors against torch's, and renames the folder into
place), so the worker's memory never holds torch. Each open compares the session's vectors on the probes
with torch's stored ones (cosine >= 0.9999, one at a time and padded together): same vectors,
so the embedding cache and existing indexes stay valid.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from learning_memory.shared.errors import EmbeddingError
from learning_memory.shared.log import get_logger
from learning_memory.worker.embedding.base import Embeddings
from learning_memory.worker.embedding.source import ModelSource, resolve

log = get_logger(__name__)

# Bump when what an export folder holds changes, so folders of an older export are not reused.
EXPORT_VERSION = 1
# The session's vectors must match torch's this closely on every probe (float32 noise is ~1e-6).
MIN_PROBE_COSINE = 0.9999
# Texts per session run: a call is sorted by length and cut into runs of this many, so little is
# spent on padding. On code units, runs of one or two texts take the least CPU a unit (attention
# grows with the square of the length, and small runs stay in cache); larger runs cost more CPU
# and more memory.
SUB_BATCH = 2
# How long a start waits for the export subprocess (importing torch, exporting, checking).
EXPORT_TIMEOUT_S = 300.0
GRAPH = "model.onnx"
TOKENIZER = "tokenizer.json"
META = "embedder.json"
# What a model's folder holds that the export depends on (configuration, vocabulary, weights).
_FINGERPRINTED = frozenset({".json", ".txt", ".model", ".safetensors", ".bin"})
MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Where ``learning_memory`` is importable from, for the export subprocess: the checkout (this
# path unresolved runs through its learning_memory/ links) or site-packages.
_PACKAGE_ROOT = Path(__file__).absolute().parents[3]
PROBES = (
    "def add(a, b):\n    return a + b",
    "How do I retry an HTTP request with exponential backoff?",
    "class Cache:\n    '''A least-recently-used cache.'''\n    def get(self, key): ...",
    "  Leading and trailing spaces, UPPER case, accents (café, naïve) and an emoji 🚀  ",
    "x",
    # Longer than max_seq_length: truncation.
    "\n".join(
        f"def handler_{i}(request, retries={i}):\n    return request.send(timeout={i} * 1.5)"
        for i in range(40)
    ),
)


class OnnxUnavailable(Exception):
    """Why the model cannot run on ONNX Runtime here; the caller may fall back to torch."""


@dataclass(frozen=True)
class ExportMeta:
    dimension: int
    max_seq_length: int
    inputs: tuple[str, ...]
    pad_id: int
    probes: tuple[str, ...]
    reference: Embeddings  # torch's vectors for the probes

    @classmethod
    def read(cls, path: Path) -> ExportMeta:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw.get("format") != EXPORT_VERSION:
            raise ValueError(f"export format {raw.get('format')!r}, expected {EXPORT_VERSION}")
        return cls(
            dimension=int(raw["dimension"]),
            max_seq_length=int(raw["max_seq_length"]),
            inputs=tuple(raw["inputs"]),
            pad_id=int(raw["pad_id"]),
            probes=tuple(raw["probes"]),
            reference=np.asarray(raw["reference"], dtype=np.float32),
        )

    def write(self, path: Path, **extra: object) -> None:
        data = {
            "format": EXPORT_VERSION,
            "dimension": self.dimension,
            "max_seq_length": self.max_seq_length,
            "inputs": list(self.inputs),
            "pad_id": self.pad_id,
            "probes": list(self.probes),
            "reference": self.reference.tolist(),
            **extra,
        }
        path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


class OnnxEmbedder:
    """Embeds with an ONNX Runtime session (thread-safe) and a Rust tokenizer; build it with
    :meth:`open` (exporting first if needed) or :func:`load_export`."""

    def __init__(
        self,
        session: Any,
        tokenizer: Any,
        head_tokenizer: Any,
        meta: ExportMeta,
        model_name: str,
        release: Any = None,
    ) -> None:
        self._session = session
        # Run options for a call's last run: ONNX Runtime's arena keeps the memory of the largest
        # run for the process's life (a lasting rise after a batch of code units, on an idle worker);
        # this gives back what no run is using once a call is done.
        self._release = release
        # Both are only read after this point: concurrent calls are safe.
        self._tokenizer = tokenizer  # truncates at max_seq_length, adds the special tokens
        self._head_tokenizer = head_tokenizer  # neither
        self._meta = meta
        self._model_name = model_name

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        return self._meta.dimension

    @property
    def max_seq_length(self) -> int:
        return self._meta.max_seq_length

    @classmethod
    async def open(cls, model: str, models_dir: Path) -> OnnxEmbedder:
        """The embedder for ``model`` from its export in ``models_dir``, exported first (in a
        subprocess) when missing or unusable. Raises OnnxUnavailable with the reason."""
        started = time.perf_counter()
        source, folder = await asyncio.to_thread(_locate, model, models_dir)
        exported = False
        if not (folder / META).is_file():
            await run_export(model, models_dir)
            exported = True
        embedder, problem = await asyncio.to_thread(_load_checked, folder, source.name)
        if embedder is None and not exported:  # damaged, or written by a broken export: once more
            log.warning("onnx_export_unusable", model=source.name, path=str(folder), reason=problem)
            await run_export(model, models_dir, replace=True)
            exported = True
            embedder, problem = await asyncio.to_thread(_load_checked, folder, source.name)
        if embedder is None:
            raise OnnxUnavailable(problem)
        log.info(
            "onnx_embedder_ready",
            model=source.name,
            path=str(folder),
            exported=exported,
            seconds=round(time.perf_counter() - started, 2),
        )
        return embedder

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        if len(texts) <= SUB_BATCH:  # a query, a memory: one hop
            return await asyncio.to_thread(self.encode, list(texts))
        # One thread hop per run, so a cancelled job stops within a run.
        encodings = await asyncio.to_thread(self._tokenizer.encode_batch, list(texts))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        runs = _runs(encodings)
        for number, rows in enumerate(runs, 1):
            out[rows] = await asyncio.to_thread(self._run, [encodings[i] for i in rows], number == len(runs))
        return out

    def encode(self, texts: list[str]) -> Embeddings:
        """Embed on the calling thread."""
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if texts:
            encodings = self._tokenizer.encode_batch(texts)
            runs = _runs(encodings)
            for number, rows in enumerate(runs, 1):
                out[rows] = self._run([encodings[i] for i in rows], number == len(runs))
        return out

    def feed(self, encodings: Sequence[Any]) -> dict[str, np.ndarray[Any, Any]]:
        """The session's inputs for ``encodings``, padded to the longest (as sentence-transformers
        pads a batch)."""
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._meta.pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            length = len(encoding.ids)
            ids[row, :length] = encoding.ids
            mask[row, :length] = 1
            types[row, :length] = encoding.type_ids
        tensors = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return {name: tensors[name] for name in self._meta.inputs}

    def tokenize(self, texts: list[str]) -> dict[str, np.ndarray[Any, Any]]:
        """The session's inputs for ``texts``, in order, padded to the longest."""
        return self.feed(self._tokenizer.encode_batch(texts))

    def _run(self, encodings: list[Any], last: bool) -> Embeddings:
        try:
            (vectors,) = self._session.run(None, self.feed(encodings), self._release if last else None)
        except Exception as exc:
            raise EmbeddingError(f"Embedding with {self._model_name!r} failed: {exc}") from exc
        out = np.asarray(vectors, dtype=np.float32)
        if out.shape != (len(encodings), self.dimension):
            raise EmbeddingError(
                f"Model {self._model_name!r} returned shape {out.shape}, "
                f"expected ({len(encodings)}, {self.dimension})"
            )
        return out

    def head(self, text: str, max_tokens: int) -> str:
        if max_tokens <= 0:
            return text[:0]
        offsets = self._head_tokenizer.encode(text, add_special_tokens=False).offsets[:max_tokens]
        return text[: offsets[-1][1]] if offsets else text[:0]

    def check(self) -> str | None:
        """Why this session's vectors differ from torch's on the probes, or None when they agree."""
        probes = list(self._meta.probes)
        expected = self._meta.reference
        # One at a time (as queries come) and all together (sorted, padded).
        for got in (np.vstack([self.encode([text]) for text in probes]), self.encode(probes)):
            if got.shape != expected.shape:
                return f"ONNX vectors have shape {got.shape}, torch's {expected.shape}"
            worst = float(np.min(np.sum(got * expected, axis=1)))
            if worst < MIN_PROBE_COSINE:
                return f"ONNX vectors differ from torch's (cosine {worst:.6f} < {MIN_PROBE_COSINE})"
        return None


def _runs(encodings: Sequence[Any]) -> list[list[int]]:
    """Row numbers of ``encodings`` sorted by length, cut into runs of SUB_BATCH."""
    order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
    return [order[start : start + SUB_BATCH] for start in range(0, len(order), SUB_BATCH)]


def load_export(folder: Path, model_name: str) -> OnnxEmbedder:
    """The embedder of the export in ``folder`` (not checked: see :meth:`OnnxEmbedder.check`)."""
    import onnxruntime
    from tokenizers import Tokenizer

    meta = ExportMeta.read(folder / META)
    spec = (folder / TOKENIZER).read_text(encoding="utf-8")
    tokenizer = Tokenizer.from_str(spec)
    tokenizer.no_padding()  # padded per run, to the run's longest
    tokenizer.enable_truncation(meta.max_seq_length)
    head_tokenizer = Tokenizer.from_str(spec)
    head_tokenizer.no_padding()
    head_tokenizer.no_truncation()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    options.inter_op_num_threads = 1
    # Its threads sleep between calls instead of spinning: on 2 cores a spinning pool takes the
    # CPU from the event loop and from a concurrent call.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only: its warnings would go to stderr on every start
    session = onnxruntime.InferenceSession(str(folder / GRAPH), options, providers=["CPUExecutionProvider"])
    release = onnxruntime.RunOptions()
    release.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return OnnxEmbedder(session, tokenizer, head_tokenizer, meta, model_name, release)


def _load_checked(folder: Path, model_name: str) -> tuple[OnnxEmbedder | None, str | None]:
    """The checked embedder of the export in ``folder`` and None, or None and why not."""
    try:
        embedder = load_export(folder, model_name)
        problem = embedder.check()
    except Exception as exc:  # a damaged folder, or one this onnxruntime cannot read
        return None, f"{type(exc).__name__}: {exc}"
    return (None, problem) if problem else (embedder, None)


def _locate(model: str, models_dir: Path) -> tuple[ModelSource, Path]:
    """The model's source and the folder its export has (or will have) in ``models_dir``."""
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except Exception as exc:  # not installed, or a build this machine cannot load
        raise OnnxUnavailable(f"onnxruntime cannot be used: {type(exc).__name__}: {exc}") from exc
    source = resolve(model)
    if source.folder is None:
        raise OnnxUnavailable(f"no local folder holds model {model!r}")
    return source, export_folder(models_dir, source)


def export_folder(models_dir: Path, source: ModelSource) -> Path:
    assert source.folder is not None
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", source.name).strip("._")[-64:] or "model"
    return models_dir / f"{safe}-{fingerprint(source.folder)}"


def fingerprint(folder: Path) -> str:
    """Names an export: the model's files (every byte of its configuration, vocabulary and
    weights, hashed in a fraction of a second), the export's format, and the versions of what wrote
    the export (sentence-transformers decides the modules) and of what reads it."""
    digest = hashlib.sha256(f"export {EXPORT_VERSION}\0".encode())
    for package in ("sentence-transformers", "onnxruntime"):
        digest.update(f"{package} {_version(package)}\0".encode())
    for path in sorted(p for p in folder.rglob("*") if p.suffix in _FINGERPRINTED and p.is_file()):
        digest.update(f"{path.relative_to(folder).as_posix()}\0".encode())
        with path.open("rb") as file:
            while chunk := file.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()[:16]


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "none"


async def run_export(model: str, models_dir: Path, *, replace: bool = False) -> None:
    """Export ``model`` into ``models_dir`` in a subprocess (torch stays out of this process);
    raises OnnxUnavailable with the subprocess's last words."""
    argv = [
        sys.executable,
        "-m",
        "learning_memory.worker.embedding.export",
        "--model",
        model,
        "--models-dir",
        str(models_dir),
    ]
    if replace:
        argv.append("--replace")
    log.info("onnx_export_started", model=model, models_dir=str(models_dir))
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=_PACKAGE_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _, stderr = await asyncio.wait_for(proc.communicate(), EXPORT_TIMEOUT_S)
    except BaseException as exc:  # timed out, or cancelled: the export must not outlive the wait
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        if isinstance(exc, TimeoutError):
            raise OnnxUnavailable(f"the export of {model!r} took over {EXPORT_TIMEOUT_S:g} s") from exc
        raise
    if proc.returncode != 0:
        lines = stderr.decode(errors="replace").strip().splitlines() or ["no message"]
        raise OnnxUnavailable(f"the export of {model!r} failed (exit {proc.returncode}): {lines[-1]}")
    log.info("onnx_export_done", model=model, seconds=round(time.perf_counter() - started, 2))
