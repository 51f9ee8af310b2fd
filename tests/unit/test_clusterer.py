"""The clusterer's arithmetic: known groups found (with and without PCA), labels by size,
tier-weighted centroids, and the value threshold on a hand-computed example."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from learning_memory.worker.learning.clusterer import cluster_labels, judge, normalise, reduce, summarise


def blobs(
    sizes: list[int], dimension: int = 384, spread: float = 0.35, seed: int = 3
) -> tuple[np.ndarray, list[int]]:
    """Groups of points around random directions: a labelled set with known groups."""
    rng = np.random.default_rng(seed)
    points, truth = [], []
    for group, size in enumerate(sizes):
        centre = normalise(rng.normal(size=dimension))
        for _ in range(size):
            points.append(centre + spread * rng.normal(size=dimension) / np.sqrt(dimension))
            truth.append(group)
    return normalise(np.array(points)), truth


@pytest.mark.parametrize("dimensions", [0, 32])
def test_known_groups_are_found(dimensions: int) -> None:
    vectors, truth = blobs([40, 30, 25, 20, 12])
    labels = cluster_labels(vectors, min_cluster_size=5, min_samples=3, dimensions=dimensions)
    assert adjusted_rand_score(truth, labels) > 0.95
    assert len(set(labels.tolist()) - {-1}) == 5


def test_labels_are_numbered_by_size() -> None:
    vectors, _ = blobs([8, 30, 15])
    labels = cluster_labels(vectors, 5, 3, 0)
    sizes = [int(np.sum(labels == label)) for label in range(3)]
    assert sizes == sorted(sizes, reverse=True) == [30, 15, 8]


def test_same_points_same_labels() -> None:
    vectors, _ = blobs([20, 20, 20], seed=9)
    first = cluster_labels(vectors, 5, 3, 32)
    assert np.array_equal(first, cluster_labels(vectors, 5, 3, 32))


def test_uniform_noise_is_mostly_noise() -> None:
    rng = np.random.default_rng(1)
    labels = cluster_labels(normalise(rng.normal(size=(60, 384))), 5, 3, 0)
    assert np.sum(labels == -1) >= 40


def test_reduce_keeps_distances_between_few_points_and_cuts_dimensions() -> None:
    vectors, _ = blobs([10, 10])
    reduced = reduce(vectors, 32)  # 20 points span at most 19 dimensions: nothing is lost
    assert reduced.shape == (20, 20)  # at most as many components as points
    full = np.linalg.norm(vectors[:, None] - vectors[None], axis=-1)
    kept = np.linalg.norm(reduced[:, None] - reduced[None], axis=-1)
    assert np.allclose(full, kept, atol=1e-9)
    many, _ = blobs([300, 300])
    assert reduce(many, 16).shape == (600, 16)
    assert reduce(many, 0) is many and reduce(many, 384) is many


def test_normalise_leaves_zero_vectors_alone() -> None:
    assert np.array_equal(normalise([[0.0, 0.0], [3.0, 4.0]]), [[0.0, 0.0], [0.6, 0.8]])


# Hand-computed: members (1,0) gold, (0,1) gold, (1,0) abandoned; weights 1, 1, 0.2.
#   weighted mean = (1.2, 1.0) / 2.2; normalised centroid c = (1.2, 1.0) / sqrt(2.44) = (0.76822, 0.64018)
#   |(1,0) - c| = sqrt(0.23178² + 0.64018²) = 0.68085;  |(0,1) - c| = sqrt(0.76822² + 0.35982²) = 0.84831
#   mean = (0.68085·2 + 0.84831) / 3 = 0.73667;  std = sqrt((2·0.05582² + 0.11164²) / 3) = 0.07894
#   threshold (k = 1) = 0.81561;  (k = 0.5) = 0.77614
MEMBERS = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
WEIGHTS = [1.0, 1.0, 0.2]


def test_threshold_arithmetic_on_a_hand_computed_example() -> None:
    [cluster] = summarise(MEMBERS, WEIGHTS, np.array([0, 0, 0]))
    assert cluster.centroid == pytest.approx([0.76822, 0.64018], abs=1e-5)
    assert sorted(cluster.distances) == pytest.approx([0.68085, 0.68085, 0.84831], abs=1e-5)
    assert cluster.avg_weight == pytest.approx(2.2 / 3)
    assert cluster.threshold(1.0) == pytest.approx(0.81561, abs=1e-5)
    assert cluster.threshold(0.5) == pytest.approx(0.77614, abs=1e-5)
    # Members come closest first.
    assert cluster.members.tolist()[-1] == 1

    # (1,1)/√2: distance sqrt(0.06111² + 0.06693²) = 0.09063, similarity 0.99589: valid.
    inside = judge(cluster, [1.0, 1.0], k=1.0)
    assert inside.valid and inside.distance == pytest.approx(0.09063, abs=1e-5)
    assert inside.similarity == pytest.approx(0.99589, abs=1e-5)
    # (0,1) is a member, but the farthest: 0.84831 > 0.81561, refused at k = 1, accepted at k = 2.
    outside = judge(cluster, [0.0, 1.0], k=1.0)
    assert not outside.valid and outside.distance == pytest.approx(0.84831, abs=1e-5)
    assert outside.threshold == pytest.approx(0.81561, abs=1e-5)
    assert judge(cluster, [0.0, 1.0], k=2.0).valid
    # The length of the candidate does not matter, only its direction.
    assert judge(cluster, [3.0, 4.0], 1.0).distance == pytest.approx(judge(cluster, [0.6, 0.8], 1.0).distance)


def test_centroid_leans_towards_heavier_members() -> None:
    [gold_first] = summarise(MEMBERS[:2], [1.0, 0.2], np.array([0, 0]))
    [gold_second] = summarise(MEMBERS[:2], [0.2, 1.0], np.array([0, 0]))
    assert gold_first.centroid[0] > gold_first.centroid[1]
    assert gold_second.centroid[1] > gold_second.centroid[0]


def test_noise_is_in_no_cluster() -> None:
    clusters = summarise(MEMBERS, WEIGHTS, np.array([0, -1, 0]))
    assert [c.size for c in clusters] == [2]
    assert summarise(MEMBERS, WEIGHTS, np.array([-1, -1, -1])) == []


async def test_hdbscan_runs_apart_and_a_failing_child_is_a_clear_error() -> None:
    from learning_memory.shared.errors import InternalError
    from learning_memory.worker.learning.apart import labels_apart

    rng = np.random.default_rng(3)
    vectors = normalise(np.concatenate([rng.normal(loc, 0.05, size=(30, 8)) for loc in (-1.0, 1.0)]))
    assert np.array_equal(await labels_apart(vectors, 5, 3, 4), cluster_labels(vectors, 5, 3, 4))
    with pytest.raises(InternalError, match="clustering process failed"):
        await labels_apart(np.zeros((0, 8)), 5, 3, 0)  # hdbscan refuses no points
