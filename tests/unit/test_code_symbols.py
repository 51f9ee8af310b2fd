"""search_code on a bare symbol: the unit that defines it comes first, even when its name is a word
the project uses everywhere (inline server, hashing embedder)."""

from __future__ import annotations

from pathlib import Path

from tests.mcp_thread import inline_client, ok


def test_a_symbol_lost_among_common_words_is_found_by_its_definition(tmp_path: Path) -> None:
    project = tmp_path / "client"
    project.mkdir()
    # Sixty functions that talk about headers, and one small class that is Headers.
    body = "\n".join(
        f"def send_{n}(request, headers):\n    headers = merge_headers(headers, request.headers)\n"
        f"    return request.with_headers(headers)\n"
        for n in range(60)
    )
    (project / "transport.py").write_text(body)
    (project / "tests").mkdir()
    (project / "tests" / "test_models.py").write_text("class Headers:\n    pass\n")
    (project / "models.py").write_text(
        "class Headers:\n    def __init__(self, raw):\n        self.raw = raw\n"
    )
    with inline_client(tmp_path, "hashing:256") as mcp:
        ok(mcp, "index_codebase", directory=str(project), project="client")
        found = ok(mcp, "search_code", query="Headers", project="client", limit=5)["results"]
        assert (found[0]["file_path"], found[0]["name"]) == ("models.py", "Headers")
        # The test's copy of the name comes after the code's.
        files = [hit["file_path"] for hit in found]
        assert files.index("tests/test_models.py") > 0


def test_a_value_bound_at_a_modules_top_level_is_found_where_it_is_bound(tmp_path: Path) -> None:
    project = tmp_path / "web"
    project.mkdir()
    # Many views read g; one module binds it, among other loose code, and defines no unit of that name.
    views = "\n".join(
        f"def view_{n}(request):\n    g.user = load_user(request)\n    return render(g.user, g.db)\n"
        for n in range(40)
    )
    (project / "views.py").write_text(views)
    (project / "globals.py").write_text(
        "from contextvars import ContextVar\n\n"
        "_cv_app = ContextVar('app')\n"
        "current_app: AppProxy = LocalProxy(_cv_app, 'app')\n"
        "g: GlobalsProxy = LocalProxy(_cv_app, 'g')\n"
    )
    with inline_client(tmp_path, "hashing:256") as mcp:
        ok(mcp, "index_codebase", directory=str(project), project="web")
        for query in ("g", "current_app"):
            found = ok(mcp, "search_code", query=query, project="web", limit=5)["results"]
            assert found[0]["file_path"] == "globals.py", query
