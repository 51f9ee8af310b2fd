"""Short embedding calls run by ONNX Runtime, on the same weights as the torch model.

A search embeds one text and waits for it. On 2 cores ONNX Runtime runs MiniLM on a
find_similar_code snippet's 128-token head in 20 / 26 ms (p50 / p95) where torch takes
31 / 38 ms (``python -m bench code``, same process, same texts): most of that tool's time.
Batches (indexing) stay on torch: ONNX Runtime was only ~12 % faster there, not worth a
second engine's memory under the indexer's peak.

The ONNX graph is exported once from the loaded model into ``<data dir>/models/`` (a second or
two) and reused by later starts. Before the session is used, its vectors are compared with
torch's on probe texts, padded batch included; any doubt (no onnxruntime, an export the tracer
got wrong, a stale file) and the embedder simply keeps torch, saying why in the log.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import re
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from shared.log import get_logger
from worker.embedding.base import Embeddings

log = get_logger(__name__)

# Bump when the exported graph changes shape, so files from an older export are not reused.
EXPORT_VERSION = 1
# ONNX vectors must match torch's this closely on every probe (float32 noise is ~1e-6).
MIN_PROBE_COSINE = 0.9999
PROBES = (
    "def add(a, b):\n    return a + b",
    "How do I retry an HTTP request with exponential backoff?",
    "class Cache:\n    '''A least-recently-used cache.'''\n    def get(self, key): ...",
)


class OnnxQueryEncoder:
    """Embeds a few texts at a time with an ONNX Runtime session; thread-safe."""

    def __init__(self, session: Any, tokenizer: Any, max_length: int, inputs: tuple[str, ...]) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._max_length = max_length
        self._inputs = inputs
        # The fast tokenizer raises "Already borrowed" when two threads call it at once; it
        # takes well under a millisecond, the session's run (thread-safe) is what takes time.
        self._tokenize_lock = threading.Lock()

    def encode(self, texts: list[str]) -> Embeddings:
        with self._tokenize_lock:
            encoded = self._tokenizer(
                texts, padding=True, truncation=True, max_length=self._max_length, return_tensors="np"
            )
        feed = {name: np.asarray(encoded[name], dtype=np.int64) for name in self._inputs}
        (vectors,) = self._session.run(None, feed)
        return np.asarray(vectors, dtype=np.float32)


def build_encoder(st: Any, model_name: str, folder: Path) -> OnnxQueryEncoder | None:
    """An ONNX encoder for the loaded SentenceTransformer ``st``, or None (logged) if it cannot be
    trusted to give torch's vectors."""
    started = time.perf_counter()
    try:
        import onnxruntime
    except ImportError as exc:
        log.warning("onnx_queries_unavailable", reason=f"onnxruntime is not installed: {exc}")
        return None
    try:
        path = folder / f"{_safe(model_name)}-{_fingerprint(st, model_name)}.onnx"
        inputs = _input_names(st)
        exported = False
        encoder: OnnxQueryEncoder | None = None
        problem: str | None = "not exported yet"
        if path.is_file():
            encoder, problem = _open_checked(onnxruntime, st, path, inputs)
        if encoder is None:  # none yet, or a stale or damaged file: export afresh
            if path.is_file():
                log.info("onnx_queries_reexport", model=model_name, path=str(path), reason=problem)
            _export(st, inputs, path)
            exported = True
            encoder, problem = _open_checked(onnxruntime, st, path, inputs)
    except Exception as exc:  # any failure only costs the fast path
        encoder, problem = None, f"{type(exc).__name__}: {exc}"
    if encoder is None:
        log.warning("onnx_queries_unavailable", model=model_name, reason=problem)
        return None
    log.info(
        "onnx_queries_ready",
        model=model_name,
        path=str(path),
        exported=exported,
        seconds=round(time.perf_counter() - started, 2),
    )
    return encoder


def _input_names(st: Any) -> tuple[str, ...]:
    names = tuple(getattr(st.tokenizer, "model_input_names", ("input_ids", "attention_mask")))
    return tuple(name for name in ("input_ids", "attention_mask", "token_type_ids") if name in names)


def _export(st: Any, inputs: tuple[str, ...], path: Path) -> None:
    import torch

    # The tracer warns about Python conditions it freezes (all hold for any batch and length,
    # which _check then proves on real inputs): noise in the worker's log on a first start.
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)  # type: ignore[attr-defined]
    warnings.filterwarnings("ignore", module=r"torch\.onnx")
    warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX", category=DeprecationWarning)

    class Pipeline(torch.nn.Module):
        """The SentenceTransformer's own modules (transformer, pooling, ...), then normalisation."""

        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: Any) -> Any:
            features = dict(zip(inputs, tensors, strict=True))
            pooled = self.model(features)["sentence_embedding"]
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    example = st.tokenizer(["def warm_up(): pass", "x"], padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in inputs}
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_orphans(path.parent)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with torch.no_grad():
            torch.onnx.export(
                Pipeline(st).eval(),
                tuple(example[name] for name in inputs),
                str(partial),
                input_names=list(inputs),
                output_names=["embedding"],
                dynamic_axes={**axes, "embedding": {0: "batch"}},
                opset_version=17,
                dynamo=False,  # the tracing exporter: no onnxscript, and it handles this model
            )
        os.replace(partial, path)  # readers see no file or a whole one
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()


def _remove_orphans(folder: Path) -> None:
    """Delete partial exports (~90 MB each) left by processes killed mid-export; a live
    process's own partial file is left alone."""
    for partial in folder.glob(".*.tmp"):
        pid = partial.name.rsplit(".", 2)[-2]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                partial.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _open_checked(
    onnxruntime: Any, st: Any, path: Path, inputs: tuple[str, ...]
) -> tuple[OnnxQueryEncoder | None, str | None]:
    """The encoder for the file at ``path`` and None, or None and why it cannot be used."""
    try:
        encoder = _open(onnxruntime, st, path, inputs)
        problem = _check(st, encoder)
    except Exception as exc:  # a damaged file, or one this onnxruntime cannot read
        return None, f"{type(exc).__name__}: {exc}"
    return (None, problem) if problem else (encoder, None)


def _open(onnxruntime: Any, st: Any, path: Path, inputs: tuple[str, ...]) -> OnnxQueryEncoder:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    # Its threads sleep between calls instead of spinning: on 2 cores a spinning pool takes
    # the CPU from the event loop and from an indexing batch (search p95 ~24 -> ~18 ms here).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only: its warnings would go to stderr on every start
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    # A private tokenizer: the model's own is called by torch's encode on other threads.
    return OnnxQueryEncoder(session, copy.deepcopy(st.tokenizer), int(st.max_seq_length), inputs)


def _check(st: Any, encoder: OnnxQueryEncoder) -> str | None:
    """Why the encoder's vectors differ from torch's, or None when they agree."""
    texts = list(PROBES)
    expected = st.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    # One at a time (as queries come) and all together (padded to the longest).
    for got in (np.vstack([encoder.encode([text]) for text in texts]), encoder.encode(texts)):
        if got.shape != expected.shape:
            return f"ONNX vectors have shape {got.shape}, torch's {expected.shape}"
        worst = float(np.min(np.sum(got * expected, axis=1)))
        if worst < MIN_PROBE_COSINE:
            return f"ONNX vectors differ from torch's (cosine {worst:.6f} < {MIN_PROBE_COSINE})"
    return None


def _fingerprint(st: Any, model_name: str) -> str:
    """Names the export: model, weights, and the versions of what wrote and reads it."""
    import onnxruntime
    import torch

    digest = hashlib.sha256(f"{model_name}\0{EXPORT_VERSION}\0{torch.__version__}\0".encode())
    digest.update(onnxruntime.__version__.encode())
    for name, tensor in sorted(st.state_dict().items()):
        # Shapes and a few values of each tensor: cheap, and different weights differ here.
        flat = tensor.detach().reshape(-1)
        digest.update(f"{name}{tuple(tensor.shape)}".encode())
        digest.update(flat[:: max(1, flat.numel() // 16)].float().numpy().tobytes())
    return digest.hexdigest()[:16]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")[-64:] or "model"
