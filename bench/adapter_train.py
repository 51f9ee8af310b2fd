"""Learning the query adapter's matrix from embedded question/code pairs, with numpy alone.

The loss is in-batch contrastive (InfoNCE): each question should score its own code above the
other codes of its batch, where a score is ``(question @ A) · code / temperature``; the code
vectors stay as the indexer made them. Batches are drawn one package at a time, so the other
codes of a batch are from the same project, as the other candidates of a search are. A penalty
on ``A - I`` keeps the map near the identity (what the model already knows is mostly right).
The query's norm does not change a ranking by cosine, so the question is not re-normalised in
training; the penalty keeps its scale in check.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 4
    batch: int = 256
    temperature: float = 0.05
    learning_rate: float = 1e-3
    identity_penalty: float = 0.1  # times the squared Frobenius norm of A - I, per pair batch
    by_package: bool = True
    seed: int = 0


def batches(
    groups: npt.NDArray[np.int64], size: int, rng: np.random.Generator, by_group: bool
) -> list[npt.NDArray[np.int64]]:
    """Row numbers cut into batches, each from one group when ``by_group`` (a group's last rows,
    fewer than half a batch, join a batch of mixed groups)."""
    if not by_group:
        order = rng.permutation(len(groups))
        return [order[i : i + size] for i in range(0, len(order), size)]
    out: list[npt.NDArray[np.int64]] = []
    leftovers: list[npt.NDArray[np.int64]] = []
    for group in np.unique(groups):
        rows = rng.permutation(np.flatnonzero(groups == group))
        for i in range(0, len(rows), size):
            chunk = rows[i : i + size]
            (out if len(chunk) >= size // 2 else leftovers).append(chunk)
    if leftovers:
        rest = rng.permutation(np.concatenate(leftovers))
        out += [rest[i : i + size] for i in range(0, len(rest), size)]
    return [out[i] for i in rng.permutation(len(out))]


def loss_and_gradient(
    matrix: Matrix, questions: Matrix, targets: Matrix, config: TrainConfig
) -> tuple[float, Matrix]:
    moved = questions @ matrix
    scores = moved @ targets.T / config.temperature
    scores -= scores.max(axis=1, keepdims=True)
    probabilities = np.exp(scores)
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    n = len(questions)
    loss = float(-np.mean(np.log(np.diag(probabilities) + 1e-12)))
    grad_scores = probabilities
    grad_scores[np.arange(n), np.arange(n)] -= 1.0
    grad_scores /= n * config.temperature
    gradient = questions.T @ (grad_scores @ targets)
    off = matrix - np.eye(matrix.shape[0], dtype=np.float32)
    loss += config.identity_penalty * float(np.sum(off * off))
    gradient += 2.0 * config.identity_penalty * off
    return loss, gradient.astype(np.float32)


def train(questions: Matrix, targets: Matrix, groups: npt.NDArray[np.int64], config: TrainConfig) -> Matrix:
    """The matrix A (dimension × dimension), from the identity, by Adam."""
    rng = np.random.default_rng(config.seed)
    dimension = questions.shape[1]
    matrix = np.eye(dimension, dtype=np.float32)
    first = np.zeros_like(matrix)
    second = np.zeros_like(matrix)
    step = 0
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    for _ in range(config.epochs):
        for rows in batches(groups, config.batch, rng, config.by_package):
            if len(rows) < 2:
                continue
            _, gradient = loss_and_gradient(matrix, questions[rows], targets[rows], config)
            step += 1
            first = beta1 * first + (1 - beta1) * gradient
            second = beta2 * second + (1 - beta2) * gradient * gradient
            update = (first / (1 - beta1**step)) / (np.sqrt(second / (1 - beta2**step)) + eps)
            matrix -= (config.learning_rate * update).astype(np.float32)
    return matrix


def ridge(questions: Matrix, targets: Matrix, penalty: float) -> Matrix:
    """The least-squares map from questions to their codes, pulled toward the identity."""
    dimension = questions.shape[1]
    gram = questions.T @ questions + penalty * np.eye(dimension, dtype=np.float32)
    return np.linalg.solve(
        gram, questions.T @ targets + penalty * np.eye(dimension, dtype=np.float32)
    ).astype(np.float32)


def retrieval_mrr(matrix: Matrix | None, questions: Matrix, targets: Matrix, k: int = 10) -> float:
    """MRR@k of each question's own code among all ``targets``, questions moved by ``matrix``."""
    moved = questions if matrix is None else questions @ matrix
    scores = moved @ targets.T
    own = scores[np.arange(len(scores)), np.arange(len(scores))]
    ranks = 1 + np.sum(scores > own[:, None], axis=1)
    return float(np.mean(np.where(ranks <= k, 1.0 / ranks, 0.0)))
