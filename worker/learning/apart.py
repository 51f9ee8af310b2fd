"""hdbscan in a process of its own, started for one clustering and gone after it.

hdbscan brings scikit-learn and scipy with it: well over 100 MiB that a long-lived worker would
hold for the rest of its life after its first clustering, on top of what the clustering itself
allocates. The worker reduces the vectors (numpy only) and hands the child the reduced points,
a few MiB, on its stdin (``numpy.save``); the child imports hdbscan, writes the labels on its
stdout and exits, and its memory goes back to the system. It costs the child's start and
hdbscan's import (about a second) per clustering, which the worker caches per axis.

The child's plumbing (a ``python -m`` child, arrays through its stdin and stdout) is
``worker.learning.child``'s.
"""

from __future__ import annotations

import asyncio
import sys

import numpy as np

from learning_memory.worker.learning.child import serve, through_child
from learning_memory.worker.learning.clusterer import Labels, Matrix, point_labels, reduce


async def labels_apart(vectors: Matrix, min_cluster_size: int, min_samples: int, dimensions: int) -> Labels:
    """:func:`~.clusterer.cluster_labels` of ``vectors``, hdbscan running in a child process."""
    points = await asyncio.to_thread(reduce, vectors, dimensions)
    args = [str(min_cluster_size), str(min_samples)]
    labels: Labels = (await through_child(__name__, args, points, "clustering")).astype(np.intp)
    return labels


def main() -> None:
    """The child: reduced points on stdin, their labels on stdout."""
    min_cluster_size, min_samples = (int(value) for value in sys.argv[1:3])
    serve(lambda points: point_labels(points, min_cluster_size, min_samples))


if __name__ == "__main__":
    main()
