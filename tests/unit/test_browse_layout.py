"""The cluster map's layout (t-SNE in a child process): deterministic, inside [-1, 1], and groups
that are apart in the vectors' space are apart in the plane."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.neighbors import NearestNeighbors

from learning_memory.shared.errors import InternalError
from learning_memory.worker.learning import layout as layout_module
from learning_memory.worker.learning.clusterer import Matrix, normalise, reduce
from learning_memory.worker.learning.layout import layout, layout_apart, scaled


def clustered(
    groups: int = 6, per_group: int = 60, dims: int = 64, seed: int = 3
) -> tuple[Matrix, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(groups, dims))
    truth = np.repeat(np.arange(groups), per_group)
    return normalise(centres[truth] + rng.normal(scale=0.35, size=(truth.size, dims))), truth


def neighbour_agreement(coords: Matrix, truth: np.ndarray, k: int = 10) -> float:
    """The share of each point's k nearest neighbours in the plane that are of its own group."""
    index = NearestNeighbors(n_neighbors=k + 1).fit(coords).kneighbors(coords, return_distance=False)[:, 1:]
    return float((truth[index] == truth[:, None]).mean())


async def test_the_layout_is_deterministic_and_keeps_groups_apart() -> None:
    vectors, truth = clustered()
    first = await layout_apart(vectors)
    again = await layout_apart(vectors)
    assert first.shape == (len(truth), 2)
    assert np.array_equal(first, again)
    assert np.abs(first).max() == pytest.approx(1.0) and np.abs(first).max() <= 1.0
    assert neighbour_agreement(first, truth) > 0.95
    # Each group's points lie closer to their own middle than to any other group's.
    middles = np.array([first[truth == g].mean(axis=0) for g in range(truth.max() + 1)])
    nearest = np.argmin(np.linalg.norm(first[:, None, :] - middles[None, :, :], axis=2), axis=1)
    assert float((nearest == truth).mean()) > 0.95


def test_too_few_points_for_tsne_are_projected() -> None:
    vectors, _ = clustered(groups=2, per_group=3)
    coords = layout(vectors)
    assert coords.shape == (6, 2) and np.abs(coords).max() == pytest.approx(1.0)
    one = layout(vectors[:1])
    assert one.shape == (1, 2) and np.all(one == 0.0)
    assert layout(np.zeros((0, 4))).shape == (0, 2)


def test_scaled_centres_and_keeps_the_aspect() -> None:
    coords = scaled(np.array([[0.0, 0.0], [4.0, 2.0]]))
    assert coords.tolist() == [[-1.0, -0.5], [1.0, 0.5]]
    assert scaled(np.zeros((2, 2))).tolist() == [[0.0, 0.0], [0.0, 0.0]]


async def test_a_failed_child_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout_module, "__name__", "learning_memory.no_such_module")
    with pytest.raises(InternalError, match="layout process failed"):
        await layout_apart(clustered()[0])


def test_a_large_axis_is_laid_out_through_a_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond FIT_POINTS, t-SNE lays out a fixed sample and the others join their neighbours:
    the same answer each time, and the groups still apart."""
    monkeypatch.setattr(layout_module, "FIT_POINTS", 120)
    vectors, truth = clustered()
    points = reduce(vectors, layout_module.PCA_DIMENSIONS)
    first, again = layout(points), layout(points)
    assert first.shape == (len(truth), 2) and np.array_equal(first, again)
    assert neighbour_agreement(first, truth) > 0.95
