"""What the browsing jobs read beside the vector store, and a value's standing, on the edges:
logs gone or torn, a fix index that is no SQLite file, values that cannot be judged."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from learning_memory.shared.fix_index import fix_index_path
from learning_memory.worker.browse.shown import ever_shown, log_project, outcomes, read_events, shown_in_logs
from learning_memory.worker.browse.value_clusters import stand
from learning_memory.worker.learning.cache import Clustering
from learning_memory.worker.learning.clusterer import Cluster
from learning_memory.worker.vectors.base import Record
from tests.browse_data import write_log


def test_a_log_pruned_or_torn_reads_as_what_is_left(tmp_path: Path) -> None:
    missing = tmp_path / "gone.jsonl"
    assert read_events(missing) == [] and log_project(missing) is None
    path = write_log(tmp_path, "repo-a", "s1", [{"type": "injected", "items": ["mem:m1"], "via": "brief"}])
    path.write_text('{"id": "torn\n' + path.read_text(encoding="utf-8"), encoding="utf-8")
    assert log_project(path) == "repo-a"
    [shown] = shown_in_logs(tmp_path, "repo-a")
    assert (shown.item, shown.via, shown.session_id) == ("mem:m1", "brief", "s1")
    assert shown_in_logs(tmp_path, "repo-b") == []


def test_a_fix_index_that_cannot_be_read_tells_nothing(tmp_path: Path) -> None:
    write_log(tmp_path, "repo-a", "s1", [{"type": "injected", "items": ["exp:g1"], "via": "prompt"}])
    assert outcomes(tmp_path, None) == {} and ever_shown(tmp_path, None) == {"exp:g1"}
    path = fix_index_path(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a database" * 100)
    assert outcomes(tmp_path, "repo-a") == {} and ever_shown(tmp_path, "repo-a") == {"exp:g1"}


def _clustering() -> Clustering:
    centroid = np.array([1.0, 0.0])
    cluster = Cluster(0, np.array([0, 1]), np.array([0.1, 0.1]), centroid, 1.0)
    return Clustering(
        "full", "full-v2-n3", ["p0", "p1", "p2"], ["g0", "g1", "g2"], [cluster], 1, 2, datetime.now(UTC), 0.1
    )


def test_a_value_is_placed_by_its_experiences_when_its_cluster_id_does_not_read() -> None:
    found = _clustering()
    labels = {"g0": 0, "g1": 0}
    payload = {
        "clustering_id": "full-v2-n3",
        "cluster_id": "nonsense",
        "member_ghap_ids": json.dumps(["g0", "g1"]),
    }
    # No vector to judge it by: still placed, taken as holding.
    standing = stand(Record("v1", payload), found, labels, 1.0)
    assert (standing.state, standing.label, standing.holds) == ("fits", 0, True)
