"""Clustering one axis's experience vectors, and checking a value against a cluster (numpy, hdbscan).

Vectors are L2-normalised, so Euclidean distance orders pairs as cosine does (hdbscan rejects
``metric="cosine"``). hdbscan slows sharply with dimension, so the vectors are first projected
on their ``dimensions`` principal components (PCA); the bench measures that this keeps the
clusters (adjusted Rand index against known groups). Labels, centroids and the value threshold
are then computed on the full normalised vectors: a value's embedding is compared in the space
it was embedded in.

Members weigh by confidence tier (gold 1.0 … abandoned 0.2) in ``avg_weight`` and in the
centroid: a lesson learned for sure pulls the centre more than an abandoned attempt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]
Labels = npt.NDArray[np.intp]


def normalise(vectors: npt.ArrayLike, *, in_place: bool = False) -> Matrix:
    """Each row at unit length. A copy, so the caller's vectors stay as they are, unless
    ``in_place`` and they are float64 already (an axis's vectors: tens of MiB)."""
    if in_place and isinstance(vectors, np.ndarray) and vectors.dtype == np.float64:
        array: Matrix = vectors
    else:
        array = np.array(vectors, dtype=np.float64)
    # Row norms without the squared copy that np.linalg.norm makes.
    norms = np.sqrt(np.einsum("...i,...i->...", array, array))[..., np.newaxis]
    # In place (an axis's copy is tens of MiB); a zero vector stays zero rather than becoming NaN.
    unit: Matrix = np.divide(array, norms, out=array, where=norms > 0)
    return unit


def reduce(vectors: Matrix, dimensions: int) -> Matrix:
    """``vectors`` projected on their first ``dimensions`` principal components (unchanged when
    ``dimensions`` is 0 or not fewer than they have)."""
    n, d = vectors.shape
    if dimensions <= 0 or dimensions >= d:
        return vectors
    mean = vectors.mean(axis=0)
    if n <= d:
        # Fewer points than dimensions: the SVD of the points themselves is the cheaper one.
        _, _, vt = np.linalg.svd(vectors - mean, full_matrices=False)
        basis = vt[:dimensions].T
    else:
        # The scatter matrix without a centred copy of the points (n × d, as large as they are):
        # (X - m)ᵀ(X - m) = XᵀX - n·mmᵀ.
        scatter = vectors.T @ vectors - n * np.outer(mean, mean)
        _, eigenvectors = np.linalg.eigh(scatter)  # ascending eigenvalues
        basis = eigenvectors[:, ::-1][:, :dimensions]
    projected: Matrix = vectors @ basis - mean @ basis
    return projected


def cluster_labels(vectors: Matrix, min_cluster_size: int, min_samples: int, dimensions: int) -> Labels:
    """hdbscan labels of normalised ``vectors`` (-1 is noise), renumbered by size: 0 is the largest.

    Renumbering by size (ties by first member) keeps the names of a clustering predictable:
    the same points in the same order always get the same labels.
    """
    return point_labels(reduce(vectors, dimensions), min_cluster_size, min_samples)


def point_labels(points: Matrix, min_cluster_size: int, min_samples: int) -> Labels:
    """:func:`cluster_labels` of points already reduced (what ``worker.learning.apart`` runs)."""
    import hdbscan  # imported where clustering runs, on first need

    n = points.shape[0]
    clusterer = hdbscan.HDBSCAN(
        min_cluster_size=max(2, min(min_cluster_size, n)),
        min_samples=max(1, min(min_samples, n - 1)),
        metric="euclidean",
        core_dist_n_jobs=1,
    )
    raw: Labels = np.asarray(clusterer.fit_predict(points), dtype=np.intp)
    found = [label for label in np.unique(raw) if label >= 0]
    order = sorted(found, key=lambda label: (-int(np.sum(raw == label)), int(np.argmax(raw == label))))
    labels = np.full(n, -1, dtype=np.intp)
    for new, old in enumerate(order):
        labels[raw == old] = new
    return labels


@dataclass(frozen=True)
class Cluster:
    label: int
    members: npt.NDArray[np.intp]  # indices into the clustering's points, closest to the centroid first
    distances: npt.NDArray[np.float64]  # each member's distance to the centroid, same order
    centroid: npt.NDArray[np.float64]  # weighted mean of the members, normalised
    avg_weight: float

    @property
    def size(self) -> int:
        return int(self.members.shape[0])

    def threshold(self, k: float) -> float:
        """mean + k·std of the members' distances to the centroid (population std)."""
        return float(self.distances.mean() + k * self.distances.std())


def summarise(vectors: Matrix, weights: npt.ArrayLike, labels: Labels) -> list[Cluster]:
    """One Cluster per label (0, 1, …) of normalised ``vectors``, with tier-weighted centroids."""
    weight = np.asarray(weights, dtype=np.float64)
    clusters = []
    for label in range(int(labels.max(initial=-1)) + 1):
        members = np.flatnonzero(labels == label)
        member_weights = weight[members]
        if member_weights.sum() > 0:
            centre = np.average(vectors[members], axis=0, weights=member_weights)
        else:
            centre = vectors[members].mean(axis=0)
        centroid = normalise(centre)
        distances = np.linalg.norm(vectors[members] - centroid, axis=1)
        order = np.argsort(distances, kind="stable")
        clusters.append(
            Cluster(
                label=label,
                members=members[order],
                distances=distances[order],
                centroid=centroid,
                avg_weight=float(member_weights.mean()),
            )
        )
    return clusters


@dataclass(frozen=True)
class Verdict:
    valid: bool
    distance: float
    threshold: float
    similarity: float  # cosine similarity to the centroid, clipped to [0, 1]


def judge(cluster: Cluster, vector: npt.ArrayLike, k: float) -> Verdict:
    """A candidate is valid when its distance to the centroid is within mean + k·std of the members'."""
    unit = normalise(vector)
    distance = float(np.linalg.norm(unit - cluster.centroid))
    threshold = cluster.threshold(k)
    similarity = float(np.clip(unit @ cluster.centroid, 0.0, 1.0))
    # A hair of tolerance: a member tested against its own cluster must not fail by rounding.
    return Verdict(distance <= threshold + 1e-9, distance, threshold, similarity)
