"""hdbscan in a process of its own, started for one clustering and gone after it.

hdbscan brings scikit-learn and scipy with it: well over 100 MiB that a long-lived worker would
hold for the rest of its life after its first clustering, on top of what the clustering itself
allocates. The worker reduces the vectors (numpy only) and hands the child the reduced points,
a few MiB, on its stdin (``numpy.save``); the child imports hdbscan, writes the labels on its
stdout and exits, and its memory goes back to the system. It costs the child's start and
hdbscan's import (about a second) per clustering, which the worker caches per axis.

A plain ``python -m`` child rather than multiprocessing: spawn would import the parent's main
script again in the child, and a script that runs the worker's jobs in process without a
``__main__`` guard would run again there.
"""

from __future__ import annotations

import asyncio
import io
import sys

import numpy as np

from learning_memory.shared.errors import InternalError
from learning_memory.worker.learning.clusterer import Labels, Matrix, point_labels, reduce

STDERR_TAIL = 2_000  # characters of a failed child's stderr told in the error


def _to_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


async def labels_apart(vectors: Matrix, min_cluster_size: int, min_samples: int, dimensions: int) -> Labels:
    """:func:`~.clusterer.cluster_labels` of ``vectors``, hdbscan running in a child process."""
    points = await asyncio.to_thread(reduce, vectors, dimensions)
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        __name__,
        str(min_cluster_size),
        str(min_samples),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await child.communicate(_to_bytes(points))
    if child.returncode != 0:
        told = err.decode(errors="replace")[-STDERR_TAIL:]
        raise InternalError(f"The clustering process failed (exit status {child.returncode}): {told}")
    labels: Labels = np.load(io.BytesIO(out), allow_pickle=False).astype(np.intp)
    return labels


def main() -> None:
    """The child: reduced points on stdin, their labels on stdout."""
    min_cluster_size, min_samples = (int(value) for value in sys.argv[1:3])
    points = np.load(io.BytesIO(sys.stdin.buffer.read()), allow_pickle=False)
    sys.stdout.buffer.write(_to_bytes(point_labels(points, min_cluster_size, min_samples)))


if __name__ == "__main__":
    main()
