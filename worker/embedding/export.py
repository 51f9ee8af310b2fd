"""``python -m learning_memory.worker.embedding.export [--model NAME] [--models-dir DIR] [--replace]``:
export a sentence-transformers model for :mod:`worker.embedding.onnx_embedder`.

Run by the worker in a subprocess when an export is missing (so torch never enters the worker's
memory), and by ``make install`` so a fresh machine has the default model's export before first
use. Defaults: ``LMS_EMBEDDING_MODEL`` into ``LMS_MODELS_DIR``. Prints the export's folder.

The export is built in a temporary folder, checked against torch (the tokenizer's ids against
sentence-transformers' on the probes, then the session's vectors against torch's, read back as
the worker reads them) and renamed into place: readers see no folder or a whole one. A lock file
per export makes concurrent first starts export once; partial folders of processes killed
mid-export are removed. Exit status 0 when the export is in place (made now or before), 1 if
not, with the reason on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from learning_memory.worker.embedding.onnx_embedder import (
    GRAPH,
    META,
    MODEL_INPUTS,
    PROBES,
    TOKENIZER,
    ExportMeta,
    export_folder,
    load_export,
)
from learning_memory.worker.embedding.source import resolve


class ExportError(Exception):
    pass


def export(model: str, models_dir: Path, *, replace: bool = False) -> Path:
    """The folder of ``model``'s export in ``models_dir``, made now unless it is there (or, with
    ``replace``, made again)."""
    source = resolve(model)  # also keeps huggingface_hub offline
    if source.folder is None:
        raise ExportError(f"no local folder holds model {model!r} (nothing is downloaded)")
    target = export_folder(models_dir, source)
    models_dir.mkdir(parents=True, exist_ok=True)
    with (models_dir / f".{target.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process exporting the same: wait for it
        if (target / META).is_file() and not replace:
            return target
        _remove_orphans(models_dir)
        partial = models_dir / f".{target.name}.{os.getpid()}.tmp"
        try:
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            _export_into(source.load_as, source.name, partial)
            if target.exists():  # replaced: set aside first, as a rename cannot overwrite a folder
                aside = models_dir / f".{target.name}.{os.getpid()}.old.tmp"
                os.rename(target, aside)
                shutil.rmtree(aside, ignore_errors=True)
            os.rename(partial, target)
            _fsync(models_dir)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return target


def _export_into(load_as: str, name: str, folder: Path) -> None:
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise ExportError(f"sentence-transformers is not installed: {exc}") from exc
    from learning_memory.worker.embedding.sentence import dimension_of

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        st = SentenceTransformer(load_as, device="cpu", local_files_only=True)
    except Exception as exc:
        raise ExportError(f"cannot load model {name!r}: {exc}") from exc
    backend = getattr(st.tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ExportError(
            f"model {name!r} has no fast tokenizer (tokenizer.json) to run without transformers"
        )
    if not st.max_seq_length:
        raise ExportError(f"model {name!r} has no max_seq_length")
    names = tuple(getattr(st.tokenizer, "model_input_names", ("input_ids", "attention_mask")))
    inputs = tuple(name for name in MODEL_INPUTS if name in names)
    # torch's vectors as the model runs by default, before the export changes how it attends.
    reference = st.encode(
        list(PROBES), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    _export_graph(st, inputs, folder / GRAPH)
    backend.save(str(folder / TOKENIZER))
    meta = ExportMeta(
        dimension=dimension_of(st),
        max_seq_length=int(st.max_seq_length),
        inputs=inputs,
        pad_id=int(st.tokenizer.pad_token_id or 0),
        probes=PROBES,
        reference=np.asarray(reference, dtype=np.float32),
    )
    meta.write(folder / META, model=name)
    # Read back as the worker reads it: the same tokens as sentence-transformers, torch's vectors.
    embedder = load_export(folder, name)
    ours = embedder.tokenize(list(PROBES))
    preprocess = getattr(st, "preprocess", None) or st.tokenize  # preprocess since v6
    theirs = preprocess(list(PROBES))
    for key in ("input_ids", "attention_mask"):
        if not np.array_equal(ours[key], np.asarray(theirs[key])):
            raise ExportError(f"the tokenizer's {key} differ from sentence-transformers' on the probes")
    problem = embedder.check()
    if problem:
        raise ExportError(problem)
    for path in folder.iterdir():
        _fsync(path)


def _export_graph(st: Any, inputs: tuple[str, ...], path: Path) -> None:
    import torch

    # The tracer warns about Python conditions it freezes (all hold for any batch and length,
    # which the check then proves on real inputs).
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

    # Attention as plain matrix products, not torch's fused kernel (which the tracer spells with
    # NaN guards): ONNX Runtime then runs MiniLM on code units with less CPU than on the fused
    # kernel's graph, as little as torch itself. Same vectors.
    for module in st.modules():
        if callable(getattr(module, "set_attn_implementation", None)):
            with contextlib.suppress(Exception):  # a model without the choice keeps its own
                module.set_attn_implementation("eager")
    example = st.tokenizer(["def warm_up(): pass", "x"], padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in inputs}
    with torch.no_grad():
        torch.onnx.export(
            Pipeline(st).eval(),
            tuple(example[name] for name in inputs),
            str(path),
            input_names=list(inputs),
            output_names=["embedding"],
            dynamic_axes={**axes, "embedding": {0: "batch"}},
            opset_version=17,
            dynamo=False,  # the tracing exporter: no onnxscript, and it handles these models
        )


def _remove_orphans(models_dir: Path) -> None:
    """Delete partial exports (each the size of the model) left by processes killed mid-export; a live
    process's own is left alone."""
    for partial in models_dir.glob(".*.tmp"):
        pid = partial.name.removesuffix(".tmp").removesuffix(".old").rsplit(".", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(partial, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _fsync(path: Path) -> None:
    flags = os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0)
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m learning_memory.worker.embedding.export", description=__doc__
    )
    parser.add_argument("--model", default=None, help="default: LMS_EMBEDDING_MODEL")
    parser.add_argument("--models-dir", type=Path, default=None, help="default: LMS_MODELS_DIR")
    parser.add_argument("--replace", action="store_true", help="export again even if an export is there")
    args = parser.parse_args(argv)
    if args.model is None or args.models_dir is None:
        from learning_memory.shared.settings import load_settings

        settings = load_settings()
        args.model = args.model or settings.embedding_model
        args.models_dir = args.models_dir or settings.models_dir
    if args.model.startswith(("hashing:", "static:")):
        sys.stderr.write(f"{args.model} needs no export\n")
        return 0
    try:
        target = export(args.model, args.models_dir.expanduser(), replace=args.replace)
    except Exception as exc:  # one line, the last on stderr: what the worker logs
        traceback.print_exc()
        sys.stderr.write(f"cannot export {args.model!r}: {' '.join(str(exc).split())}\n")
        return 1
    sys.stdout.write(f"{target}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
