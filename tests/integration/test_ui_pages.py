"""The web view over a populated store, in inline mode (the worker's jobs in the view's process):
every page answers, bad input gets a clear message, and a GET writes nothing."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from starlette.testclient import TestClient

from learning_memory.composition import in_process_executor
from learning_memory.server.ui.app import ui_app
from learning_memory.server.ui.app_state import UiState
from learning_memory.server.value_suggestions import keep_suggestions, suggestions_path
from learning_memory.shared.contracts.experiences import SEARCH_EXPERIENCES, SearchExperiencesRequest
from learning_memory.shared.contracts.memory import LIST_MEMORIES, ListMemoriesRequest
from learning_memory.shared.contracts.porting import AdoptedValue
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
    "/values?offset=50",
    "/memories",
    "/memories?q=how+do+we+ship+a+release",
    "/memories?category=fact",
    "/code",
    "/audit",
    "/changes",
    "/experiences?source=agent&outcome=confirmed&from=2025-01-01&to=2030-01-01",
    "/?project=nowhere",
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
    evidence = client.get(f"/values/{store.value_id}").text
    assert "experiences it was validated against" in evidence
    assert evidence.count("<tr data-id=") >= 5
    assert client.get("/values/no-such-value").status_code == 404
    ghap = client.get("/ghap").text
    assert f"/ghap/{store.experience_ids[-1]}" in ghap
    entry = client.get(f"/ghap/{store.experience_ids[0]}")
    assert entry.status_code == 200 and "Evidence runs" in entry.text
    clusters = client.get("/clusters?axis=full").text
    assert store.value_cluster in clusters


def test_cluster_members_as_json(view: tuple[TestClient, Store, Path]) -> None:
    client, store, _ = view
    laid = client.get("/api/clusters/full/map").json()
    assert len(laid["points"]["x"]) == len(store.experience_ids) == len(laid["points"]["goal"])
    clusters = {cluster["cluster_id"]: cluster for cluster in laid["clusters"]}
    assert clusters[store.value_cluster]["value"]["id"] == store.value_id
    members = client.get(f"/api/clusters/{store.value_cluster}/members?limit=5").json()
    assert members["cluster_id"] == store.value_cluster and 0 < len(members["members"]) <= 5


@pytest.mark.parametrize(
    ("path", "status", "words"),
    [
        ("/memories?offset=minus", 400, "offset must be a whole number"),
        ("/values?offset=-3", 400, "offset must be"),
        ("/memories?category=gossip", 400, "category must be one of"),
        ("/experiences?axis=sideways", 400, "axis must be one of"),
        ("/experiences?from=yesterday", 400, "from must be a date like"),
        ("/api/clusters/sideways/map", 400, "axis must be one of"),
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


def _form(client: TestClient, page: str, action: str) -> dict[str, str]:
    """The hidden fields of the form posting to ``action`` on ``page``, as the browser sends them."""
    html = client.get(page).text
    start = html.index(f'action="{action}"')
    form = html[start : html.index("</form>", start)]
    fields = dict(re.findall(r'name="(\w+)" value="([^"]*)"', form))
    return {key: fields[key] for key in ("form_token", "back", "change_id") if key in fields}


def _undo_id(location: str) -> str:
    return parse_qs(urlsplit(location).query)["undo"][0]


def test_curate_and_undo_through_the_forms(view: tuple[TestClient, Store, Path]) -> None:
    client, store, _ = view
    state: UiState = client.app.state.ui  # type: ignore[attr-defined]
    jobs = state.transport
    assert jobs is not None

    def memory_ids() -> set[str]:
        async def listed() -> set[str]:
            page = await jobs.run(LIST_MEMORIES, ListMemoriesRequest(limit=200, offset=0), budget_s=60)
            return {memory.id for memory in page.results}

        found: set[str] = client.portal.call(listed)  # type: ignore[union-attr]
        return found

    # Delete a memory, then undo from the notice: the same id is back.
    target = store.memory_ids[0]
    fields = _form(client, "/memories", f"/memories/{target}/delete")
    deleted = client.post(f"/memories/{target}/delete", data=fields, follow_redirects=False)
    assert deleted.status_code == 303 and target not in memory_ids()
    again = client.post(f"/memories/{target}/delete", data=fields, follow_redirects=False)
    assert again.status_code == 303  # the same form posted twice changes once
    shown = client.get(deleted.headers["location"])
    assert 'id="undo"' in shown.text
    undo_fields = {"form_token": state.form_token, "back": "/memories"}
    client.post(f"/changes/{_undo_id(deleted.headers['location'])}/undo", data=undo_fields)
    assert target in memory_ids()

    # Retire the value: the default list and the brief's file lose it; restore brings it back.
    fields = _form(client, "/values", f"/values/{store.value_id}/retire")
    retired = client.post(f"/values/{store.value_id}/retire", data=fields, follow_redirects=False)
    assert retired.status_code == 303
    assert store.value_id not in client.get("/values").text
    assert store.value_id in client.get("/values?retired=1").text
    brief_values = (state.settings.data_dir / "cache" / "values.json").read_text()
    assert store.value_id not in brief_values
    fields = _form(client, "/values?retired=1", f"/values/{store.value_id}/restore")
    client.post(f"/values/{store.value_id}/restore", data=fields)
    assert store.value_id in client.get("/values").text
    assert store.value_id in (state.settings.data_dir / "cache" / "values.json").read_text()

    # Edit a memory: found by its new words; the change is listed with its undo.
    target = store.memory_ids[1]
    fields = _form(client, "/memories", f"/memories/{target}/edit")
    edited = client.post(
        f"/memories/{target}/edit",
        data={
            **fields,
            "content": "Dependencies are managed with poetry.",
            "category": "preference",
            "importance": "0.9",
            "tags": "tooling, #python",
        },
        follow_redirects=False,
    )
    assert edited.status_code == 303
    assert "poetry" in client.get("/memories?q=which+dependency+manager").text
    changes = client.get("/changes").text
    assert _undo_id(edited.headers["location"]) in changes and "update memory" in changes

    # Bad input to a form: a clear message, nothing changed.
    fields = _form(client, "/memories", f"/memories/{target}/importance")
    refused = client.post(f"/memories/{target}/importance", data={**fields, "importance": "loud"})
    assert refused.status_code == 400 and "importance must be a number" in refused.text
    missing = client.post(
        "/memories/00000000-0000-0000-0000-000000000000/delete",
        data=_form(client, "/memories", f"/memories/{target}/delete"),
    )
    assert missing.status_code == 404
    lonely = client.post("/memories/merge", data={**fields, "ids": target})
    assert lonely.status_code == 400 and "at least two" in lonely.text


def test_values_beyond_a_page_say_so(view: tuple[TestClient, Store, Path]) -> None:
    client, store, _ = view
    assert "No more values." in client.get("/values?offset=50").text
    first = client.get("/values").text
    assert store.value_id in first and 'class="pager"' not in first  # one value: one page


def test_suggested_values_are_shown_apart(view: tuple[TestClient, Store, Path]) -> None:
    client, _, _ = view
    state: UiState = client.app.state.ui  # type: ignore[attr-defined]
    rejected = AdoptedValue(
        id="s1",
        text="Water the office plants twice a week.",
        axis="full",
        outcome="rejected",
        reason="too far",
    )
    keep_suggestions(suggestions_path(state.settings), [rejected], {"s1": "another-project"})
    page = client.get("/values").text
    assert (
        "Suggested by an import" in page and "Water the office plants" in page and "another-project" in page
    )
    assert "Water the office plants" not in client.get("/values?axis=root_cause").text


def test_mark_an_experience_wrong_and_right(view: tuple[TestClient, Store, Path]) -> None:
    client, store, _ = view
    target = store.experience_ids[-1]
    goal = _goal(client, target)
    page = f"/experiences?q={quote(goal)}"
    fields = _form(client, page, f"/experiences/{target}/wrong")
    marked = client.post(f"/experiences/{target}/wrong", data=fields, follow_redirects=False)
    assert marked.status_code == 303
    assert "marked wrong" in client.get("/experiences").text  # still shown here, to be put right
    assert target not in _searched(client, goal)  # but the tools no longer find it
    fields = _form(client, "/experiences", f"/experiences/{target}/right")
    client.post(f"/experiences/{target}/right", data=fields)
    assert target in _searched(client, goal) and "marked wrong" not in client.get("/experiences").text


def _searched(client: TestClient, query: str) -> set[str]:
    jobs = client.app.state.ui.transport  # type: ignore[attr-defined]

    async def search() -> set[str]:
        found = await jobs.run(
            SEARCH_EXPERIENCES, SearchExperiencesRequest(query=query, limit=10), budget_s=60
        )
        return {hit.ghap_id for hit in found.results}

    ids: set[str] = client.portal.call(search)  # type: ignore[union-attr]
    return ids


def _goal(client: TestClient, ghap_id: str) -> str:
    html = client.get(f"/ghap/{ghap_id}").text
    return html[html.index("<h1>") + 4 : html.index("</h1>")]
