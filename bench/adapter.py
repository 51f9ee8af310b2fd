"""A linear adapter on search_code's question vectors, trained offline and measured on both sets.

``python -m bench adapter --data-dir DIR`` collects docstring/code pairs (``bench.adapter_pairs``:
Python packages installed in this environment, neither quality set's code among them), embeds
them with the worker's model on ONNX Runtime (cached in DIR, outside the repository: most of an
hour on 2 cores the first time), learns a 384×384 map from the identity (``bench.adapter_train``:
each question toward its code both as indexed and without its docstring, averaged over a few
seeds, since a single run's figures move with the order of its batches), and prints how well
held-out questions find their own code among each other's, with and without it. Nothing is
downloaded.

With ``--semble-work`` and ``--quality-work`` (kept indexes, as for ``bench ranking``) it then
re-scores both quality sets with the search job's own code, once as it is and once with the
question's vector moved by the map on the dense side (not find_similar_code's snippets), re-
normalised. The map is applied here, in the benchmark: search_code ships no adapter, since none
trained this way has raised both sets (the README's performance section has the figures).
``--save`` keeps the matrix as ``.npy``.
"""

from __future__ import annotations

import argparse
import collections
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.adapter_embed import embed_pairs, open_model
from bench.adapter_pairs import EXCLUDED, MAX_PER_PACKAGE, collect
from bench.adapter_train import Matrix, TrainConfig, retrieval_mrr, train
from bench.common import print_table, progress

DEFAULT_PAIRS = 32_000
HELD_OUT = 0.05
SEEDS = (0, 1, 2)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        required=True,
        help="where embedded pairs are cached (outside the repository)",
    )
    parser.add_argument("--pairs", type=int, default=DEFAULT_PAIRS, help=f"pairs to use ({DEFAULT_PAIRS})")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="the embedding model (the bundled one)")
    parser.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    parser.add_argument("--temperature", type=float, default=TrainConfig.temperature)
    parser.add_argument("--learning-rate", type=float, default=TrainConfig.learning_rate)
    parser.add_argument("--identity-penalty", type=float, default=TrainConfig.identity_penalty)
    parser.add_argument("--save", type=Path, default=None, help="keep the learned matrix in this .npy")
    parser.add_argument("--semble-work", type=Path, default=None, help="the --workdir of a bench semble run")
    parser.add_argument(
        "--quality-work", type=Path, default=None, help="the --workdir of a bench code_quality run"
    )


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from learning_memory.shared.paths import default_models_dir

    progress("adapter: collecting pairs from installed packages")
    pairs = collect(limit=args.pairs)
    embedder = await open_model(args.model, default_models_dir())
    args.data_dir.mkdir(parents=True, exist_ok=True)
    vectors = embed_pairs(embedder, pairs, args.data_dir, embedder.model_name)
    questions = vectors["questions"]
    packages = sorted({pair.package for pair in pairs})
    groups = np.asarray([packages.index(pair.package) for pair in pairs], dtype=np.int64)
    held = np.zeros(len(pairs), dtype=bool)
    held[np.random.default_rng(1).permutation(len(pairs))[: int(len(pairs) * HELD_OUT)]] = True
    config = TrainConfig(
        epochs=args.epochs,
        temperature=args.temperature,
        learning_rate=args.learning_rate,
        identity_penalty=args.identity_penalty,
    )
    kept = ~held
    both_q = np.vstack([questions[kept], questions[kept]])
    both_t = np.vstack([vectors["targets"][kept], vectors["indexed"][kept]])
    both_g = np.concatenate([groups[kept], groups[kept]])
    progress(f"adapter: training on {int(kept.sum())} pairs, seeds {SEEDS} ({config})")
    matrix = np.mean(
        [train(both_q, both_t, both_g, replace(config, seed=seed)) for seed in SEEDS], axis=0
    ).astype(np.float32)
    rows = []
    held_out: dict[str, dict[str, float]] = {}
    for side in ("targets", "indexed"):
        before = retrieval_mrr(None, questions[held], vectors[side][held])
        after = retrieval_mrr(matrix, questions[held], vectors[side][held])
        held_out[side] = {"as_embedded": round(before, 4), "moved": round(after, 4)}
        rows.append([side, str(int(held.sum())), f"{before:.3f}", f"{after:.3f}"])
    print_table(["held-out questions to code", "pairs", "MRR@10 as embedded", "moved"], rows)
    result: dict[str, Any] = {
        "pairs": len(pairs),
        "held_out_mrr_at_10": held_out,
        "config": asdict(config),
        "seeds": list(SEEDS),
        "packages": dict(sorted(collections.Counter(pair.package for pair in pairs).items())),
        "max_per_package": MAX_PER_PACKAGE,
        "excluded": sorted(EXCLUDED),
        "model": embedder.model_name,
    }
    if args.save is not None:
        np.save(args.save, matrix, allow_pickle=False)
        progress(f"adapter: matrix saved to {args.save}")
    if args.semble_work is not None or args.quality_work is not None:
        result["ranking"] = await _ranking(args, matrix)
    return result


async def _ranking(args: argparse.Namespace, matrix: Matrix) -> dict[str, Any]:
    """Both quality sets re-scored by bench ranking, as search_code is and with the map applied."""
    from bench import ranking
    from bench.semble_data import DEFAULT_DATA
    from learning_memory.worker.code.search import hybrid

    options = argparse.Namespace(
        semble_work=args.semble_work,
        quality_work=args.quality_work,
        data=DEFAULT_DATA,
        repos=None,
        mode="hybrid",
        fast_tier=False,
        baseline=None,
        reindex=None,
    )
    plain = hybrid._embed_query

    async def moved(services: Any, query: Any, scope: Any) -> Any:
        vector, store = await plain(services, query, scope)  # a question in words, not a snippet
        vector = vector @ matrix
        vector = (vector / np.linalg.norm(vector)).astype(np.float32)
        return vector, store

    out: dict[str, Any] = {}
    for name in ("as_is", "moved"):
        progress(f"adapter: bench ranking, questions {name.replace('_', ' ')}")
        hybrid._embed_query = moved if name == "moved" else plain
        try:
            out[name] = _figures(await ranking.run(options))
        finally:
            hybrid._embed_query = plain
    keys = sorted({key for figures in out.values() for key in figures})
    print_table(
        ["figure", "as is", "adapter", "change"],
        [
            [
                key,
                f"{out['as_is'][key]:.4f}",
                f"{out['moved'][key]:.4f}",
                f"{out['moved'][key] - out['as_is'][key]:+.4f}",
            ]
            for key in keys
        ],
    )
    return out


def _figures(result: dict[str, Any]) -> dict[str, float]:
    figures = {f"semble {key}": value for key, value in result.get("semble_summary", {}).items()}
    for kind, found in result.get("ours", {}).items():
        figures[f"ours {kind} MRR@10"] = found["mrr_at_10"]
    return figures
