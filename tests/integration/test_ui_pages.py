"""The web view over a populated store, in inline mode (the worker's jobs in the view's process):
every page answers, bad input gets a clear message, and a GET writes nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from learning_memory.composition import in_process_executor
from learning_memory.server.ui.app import ui_app
from learning_memory.server.ui.app_state import UiState
from learning_memory.shared.settings import load_settings
from tests.support.ui_store import Store, populate

pytestmark = [pytest.mark.slow]

PAGES = [
    "/",
    "/ghap",
    "/experiences",
    "/experiences?q=flaky+test&axis=full",
    "/clusters?axis=full",
    "/values",
    "/values?axis=full",
    "/memories",
    "/memories?q=how+do+we+ship+a+release",
    "/memories?category=fact",
    "/code",
]


@pytest.fixture(scope="module")
def view(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Store, Path]]:
    root = tmp_path_factory.mktemp("ui")
    settings = load_settings(data_dir=root / "data", journal_dir=root / "journal", queue="inline")
    app = ui_app(settings, in_process_executor)
    with TestClient(app) as client:
        state: UiState = client.app.state.ui  # type: ignore[attr-defined]
        assert state.transport is not None
        store = client.portal.call(populate, state.transport, root / "journal")  # type: ignore[union-attr]
        yield client, store, root


def _fingerprint(root: Path) -> dict[str, str]:
    """What the store's files hold, bar the engine's own segment files (rewritten as it pleases)."""
    prints = {}
    for path in sorted(root.rglob("*")):
        if (
            path.is_file()
            and "vectors" not in path.parts
            and not path.name.endswith(("-wal", "-shm", ".log"))
        ):
            prints[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return prints


@pytest.mark.parametrize("path", PAGES)
def test_every_page_answers(view: tuple[TestClient, Store, Path], path: str) -> None:
    client, _, _ = view
    answer = client.get(path)
    assert answer.status_code == 200, answer.text[:500]
    assert "Traceback" not in answer.text


def test_pages_show_the_store(view: tuple[TestClient, Store, Path]) -> None:
    client, store, _ = view
    assert "fly.io" in client.get("/memories").text
    assert "fly.io" in client.get("/memories?q=how+should+I+ship+the+new+release+to+production").text
    values = client.get("/values").text
    assert store.value_id in values and store.value_cluster in values
    ghap = client.get("/ghap").text
    assert f"/ghap/{store.experience_ids[-1]}" in ghap
    entry = client.get(f"/ghap/{store.experience_ids[0]}")
    assert entry.status_code == 200 and "Evidence runs" in entry.text
    clusters = client.get("/clusters?axis=full").text
    assert store.value_cluster in clusters


def test_cluster_members_as_json(view: tuple[TestClient, Store, Path]) -> None:
    client, store, _ = view
    members = client.get(f"/api/clusters/{store.value_cluster}/members?limit=5").json()
    assert members["cluster_id"] == store.value_cluster and 0 < len(members["members"]) <= 5


@pytest.mark.parametrize(
    ("path", "status", "words"),
    [
        ("/memories?offset=minus", 400, "offset must be a whole number"),
        ("/memories?category=gossip", 400, "category must be one of"),
        ("/experiences?axis=sideways", 400, "axis must be one of"),
        ("/ghap/ghap_nothing", 404, "No GHAP entry"),
        ("/no/such/page", 404, "No page at /no/such/page"),
        ("/api/clusters/cluster_sideways_1/members", 400, "Invalid cluster_id"),
        ("/api/clusters/cluster_full_999/members", 404, ""),
        ("/api/clusters/cluster_full_0/members?limit=0", 400, "limit must be between 1 and 100"),
    ],
)
def test_bad_input_gets_a_clear_message(
    view: tuple[TestClient, Store, Path], path: str, status: int, words: str
) -> None:
    client, _, _ = view
    answer = client.get(path)
    assert answer.status_code == status
    assert words in answer.text and "Traceback" not in answer.text
    if path.startswith("/api/"):
        assert set(answer.json()["error"]) == {"type", "message"}


def test_a_get_writes_nothing(view: tuple[TestClient, Store, Path]) -> None:
    client, _, root = view
    before = _fingerprint(root)
    for path in PAGES:
        client.get(path)
    assert _fingerprint(root) == before
