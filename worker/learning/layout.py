"""A 2-D layout of an axis's experiences for the cluster map, computed in a child process.

t-SNE (scikit-learn's Barnes–Hut) of the vectors' first principal components, each cluster's
members first drawn toward their mean: t-SNE keeps neighbours together, so the clusters hdbscan
found show as separate groups, which a plain projection (PCA, or an MDS of all points) blurs into
one cloud. Iterations are cut to what separates groups rather than to a polished picture, and
a large axis is laid out through a sample: 5,000 points take ~3 s, the child's start and
scikit-learn's import included. Initialised
from the PCA with a fixed seed, it is deterministic: the same points in the same order always land
in the same places (whatever the number of threads: measured).

The child (``worker.learning.child``), as for hdbscan, keeps scikit-learn and t-SNE's
allocations out of the long-lived worker: the worker reduces the points and the child lays them out.
"""

from __future__ import annotations

import asyncio

import numpy as np
import numpy.typing as npt

from learning_memory.worker.learning.child import serve, through_child
from learning_memory.worker.learning.clusterer import Labels, Matrix, reduce

PCA_DIMENSIONS = 30  # what t-SNE sees: neighbours barely change, its cost drops with the width
PERPLEXITY = 30.0
# Iterations: the first 250 exaggerate attraction (groups gather), the rest let them settle apart.
# A few hundred points need many to settle (at 250, 64 points of 8 themes were still mixed; at
# 500, apart); more points need fewer, and each costs more. So the work, points × iterations, is
# bounded, within these limits.
MIN_ITERATIONS = 300
MAX_ITERATIONS = 1_000
WORK = 750_000
# Beyond this many points, t-SNE lays out a fixed sample of them and each other point goes among
# its nearest sampled neighbours: the cost stops growing with the axis. Measured on 5,000 real
# experiences: a point's 10 nearest in the plane share its cluster 99.2 % of the time (99.5 %
# with all points in t-SNE), in a third of the time.
FIT_POINTS = 1_500
PLACE_NEIGHBOURS = 3
ANGLE = 0.7  # Barnes–Hut's trade of accuracy for speed (0.5 by default): ~20 % faster
SEED = 0
# How far a cluster's members are drawn to their mean before the layout: t-SNE alone keeps
# neighbours, but the members of a loose cluster that hdbscan joined may have closer neighbours
# elsewhere and scatter; drawn halfway, each cluster shows as one group, and its spread still shows.
PULL = 0.5
# t-SNE's gradient runs on OpenMP threads. On two cores shared with anything else (the worker's
# other jobs, a test run) two threads spin against each other: 5,000 points took 13-16 s with two
# and 5.6 s with one, measured side by side; one also leaves a core to the searches meanwhile.
THREADS = 1


def scaled(coords: Matrix) -> Matrix:
    """``coords`` centred on their middle and scaled into [-1, 1] (the same aspect on both axes)."""
    if coords.shape[0] == 0:
        return coords
    middle = (coords.max(axis=0) + coords.min(axis=0)) / 2
    centred = coords - middle
    reach = float(np.abs(centred).max())
    out: Matrix = centred / reach if reach > 0 else centred
    return out


def iterations(n: int) -> int:
    return max(MIN_ITERATIONS, min(MAX_ITERATIONS, WORK // max(n, 1)))


def layout(points: Matrix) -> Matrix:
    """Each point's place in the plane, scaled into [-1, 1]: t-SNE of ``points`` (already
    reduced; beyond FIT_POINTS, of a sample, the others placed among their neighbours), or their
    first two principal components when there are too few for t-SNE."""
    n = points.shape[0]
    if n == 0:
        return np.zeros((0, 2))
    if n < 8:
        flat = reduce(points, 2) if points.shape[1] > 2 else points
        padded = np.zeros((n, 2))
        padded[:, : flat.shape[1]] = flat[:, :2]
        return scaled(padded)
    fitted = _sample(n)
    coords = _tsne(points[fitted])
    if fitted.shape[0] < n:
        coords = _placed(points, fitted, coords)
    return scaled(coords)


def _sample(n: int) -> npt.NDArray[np.intp]:
    """The points t-SNE lays out (all, or a fixed sample of FIT_POINTS), in their order."""
    if n <= FIT_POINTS:
        return np.arange(n)
    chosen: npt.NDArray[np.intp] = np.sort(np.random.default_rng(SEED).choice(n, FIT_POINTS, replace=False))
    return chosen


def _tsne(points: Matrix) -> Matrix:
    from sklearn.manifold import TSNE  # imported where the layout runs: in the child

    n = points.shape[0]
    tsne = TSNE(
        n_components=2,
        perplexity=min(PERPLEXITY, (n - 1) / 3),  # t-SNE needs more points than 3 × perplexity
        max_iter=iterations(n),
        init="pca",
        learning_rate="auto",
        method="barnes_hut",
        angle=ANGLE,
        random_state=SEED,
    )
    coords: Matrix = np.asarray(tsne.fit_transform(points), dtype=np.float64)
    return coords


def _placed(points: Matrix, fitted: npt.NDArray[np.intp], fitted_coords: Matrix) -> Matrix:
    """Every point's place: the fitted ones where t-SNE put them, each other one at the mean of its
    nearest fitted neighbours' places, weighed by closeness."""
    from sklearn.neighbors import NearestNeighbors

    rest = np.setdiff1d(np.arange(points.shape[0]), fitted)
    distances, nearest = (
        NearestNeighbors(n_neighbors=PLACE_NEIGHBOURS).fit(points[fitted]).kneighbors(points[rest])
    )
    weights = 1.0 / (distances + 1e-9)
    weights /= weights.sum(axis=1, keepdims=True)
    coords = np.zeros((points.shape[0], 2))
    coords[fitted] = fitted_coords
    coords[rest] = (fitted_coords[nearest] * weights[..., np.newaxis]).sum(axis=1)
    return coords


def pull_together(points: Matrix, labels: Labels, share: float = PULL) -> Matrix:
    """``points`` with each cluster's members moved ``share`` of the way to their cluster's mean
    (noise, label -1, left where it is); in place."""
    for label in range(int(labels.max(initial=-1)) + 1):
        members = labels == label
        if members.any():
            middle = points[members].mean(axis=0)
            points[members] = middle + (1.0 - share) * (points[members] - middle)
    return points


def _prepared(vectors: Matrix, labels: Labels | None, dimensions: int) -> Matrix:
    points = np.array(reduce(vectors, dimensions))  # a copy: pulled in place
    return pull_together(points, labels) if labels is not None else points


async def layout_apart(
    vectors: Matrix, labels: Labels | None = None, dimensions: int = PCA_DIMENSIONS
) -> Matrix:
    """:func:`layout` of normalised ``vectors`` (n × d), run in a child process; with their
    cluster ``labels``, each cluster drawn together first (:func:`pull_together`)."""
    points = await asyncio.to_thread(_prepared, vectors, labels, dimensions)
    found = await through_child(__name__, [], points, "layout", threads=THREADS)
    coords: Matrix = found.astype(np.float64)
    return coords


def main() -> None:
    """The child: reduced points on stdin, their coordinates on stdout."""
    serve(lambda points: layout(points.astype(np.float64)))


if __name__ == "__main__":
    main()
