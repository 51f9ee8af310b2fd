"""hdbscan in a process of its own, started for one clustering and gone after it.

hdbscan brings scikit-learn and scipy with it: well over 100 MiB that a long-lived worker would
hold for the rest of its life after its first clustering, on top of what the clustering itself
allocates. The worker reduces the vectors (numpy only) and hands the child the reduced points,
a few MiB; the child imports hdbscan, labels them and exits, and its memory goes back to the
system. It costs the child's start and hdbscan's import (about a second) per clustering, which
the worker caches per axis. ``spawn``: a forked child would share the parent's threads' locks.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

from learning_memory.worker.learning.clusterer import Labels, Matrix, point_labels, reduce


async def labels_apart(vectors: Matrix, min_cluster_size: int, min_samples: int, dimensions: int) -> Labels:
    """:func:`~.clusterer.cluster_labels` of ``vectors``, hdbscan running in a child process."""
    points = await asyncio.to_thread(reduce, vectors, dimensions)
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    try:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(pool, point_labels, points, min_cluster_size, min_samples)
    finally:
        await asyncio.to_thread(pool.shutdown)
