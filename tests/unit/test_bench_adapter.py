"""bench adapter's pairs and training: the question is the docstring's opening, the code loses its
docstring, and the contrastive gradient is the loss's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.adapter_pairs import file_pairs, question_of
from bench.adapter_train import TrainConfig, batches, loss_and_gradient, retrieval_mrr, train

SOURCE = '''
def fetch_with_retries(url, attempts=3):
    """Download a URL, trying again when the server is busy.

    Args:
        url: where to go.
    """
    for attempt in range(attempts):
        response = get(url)
        if response.ok:
            return response
    raise TimeoutError(url)


def short():
    """Too short."""
    return 1
'''


def test_a_documented_function_gives_its_opening_and_its_code(tmp_path: Path) -> None:
    root = tmp_path / "site"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "net.py").write_text(SOURCE)
    [pair] = list(file_pairs(root / "pkg" / "net.py", root))
    assert pair.package == "pkg" and pair.qualified_name == "fetch_with_retries"
    assert pair.question.startswith("Download a URL, trying again when the server is busy.")
    assert "Download a URL" not in pair.target and "Args:" not in pair.target
    assert "raise TimeoutError(url)" in pair.target and pair.target.startswith("fetch with retries")
    assert "Download a URL" in pair.indexed


def test_questions_skip_cross_references_and_fragments() -> None:
    assert question_of("See :func:`other` for details.") is None
    assert question_of("Helper.") is None
    assert question_of("Parse the header line\ninto name and value.\n\nMore.") == (
        "Parse the header line into name and value."
    )


def test_gradient_matches_the_loss() -> None:
    rng = np.random.default_rng(0)
    questions = rng.standard_normal((6, 4)).astype(np.float32)
    targets = rng.standard_normal((6, 4)).astype(np.float32)
    matrix = (np.eye(4) + 0.1 * rng.standard_normal((4, 4))).astype(np.float32)
    config = TrainConfig(temperature=0.5, identity_penalty=0.3)
    _, gradient = loss_and_gradient(matrix, questions, targets, config)
    step = 1e-3
    for i, j in [(0, 0), (1, 3), (3, 2)]:
        bumped = matrix.astype(np.float64).copy()
        bumped[i, j] += step
        up, _ = loss_and_gradient(bumped, questions, targets, config)
        bumped[i, j] -= 2 * step
        down, _ = loss_and_gradient(bumped, questions, targets, config)
        assert abs((up - down) / (2 * step) - gradient[i, j]) < 1e-3


def test_training_pulls_questions_toward_their_codes() -> None:
    rng = np.random.default_rng(1)
    targets = rng.standard_normal((200, 8)).astype(np.float32)
    targets /= np.linalg.norm(targets, axis=1, keepdims=True)
    rotation = np.linalg.qr(rng.standard_normal((8, 8)))[0].astype(np.float32)
    questions = targets @ rotation.T + 0.3 * rng.standard_normal((200, 8)).astype(np.float32)
    groups = np.zeros(200, dtype=np.int64)
    matrix = train(
        questions, targets, groups, TrainConfig(epochs=50, batch=50, learning_rate=0.05, identity_penalty=0.0)
    )
    assert retrieval_mrr(matrix, questions, targets) > retrieval_mrr(None, questions, targets) + 0.2


def test_batches_keep_to_one_group_and_cover_every_row() -> None:
    groups = np.asarray([0] * 10 + [1] * 7 + [2] * 2, dtype=np.int64)
    found = batches(groups, 4, np.random.default_rng(0), by_group=True)
    assert sorted(np.concatenate(found).tolist()) == list(range(19))
    assert all(len(set(groups[rows].tolist())) == 1 for rows in found if len(rows) == 4)
