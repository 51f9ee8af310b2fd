"""search_code's code-aware reordering of the fused candidates."""

from __future__ import annotations

from typing import Any

from worker.code.rerank import Weights, adjustment, read_query, rerank


def unit(
    name: str, file_path: str, unit_type: str = "function", qualified: str | None = None
) -> dict[str, Any]:
    return {"name": name, "file_path": file_path, "unit_type": unit_type, "qualified_name": qualified or name}


def order(
    query: str, units: list[tuple[str, float, dict[str, Any]]], weights: Weights | None = None
) -> list[str]:
    return [pid for pid, _ in (rerank(query, units, weights) if weights else rerank(query, units))]


def test_reading_the_query() -> None:
    assert read_query("Session").symbol == "Session"
    chi = read_query("chi.Router")
    assert chi.symbol == "Router" and chi.qualifier == ("chi",)
    assert read_query("axum::extract::FromRequest").symbol == "FromRequest"
    assert read_query("`parse_args`").symbol == "parse_args"
    question = read_query("how are cookies persisted between requests?")
    assert question.symbol is None and {"cookies", "persisted", "requests"} <= question.words
    assert "how" not in question.words and not question.asks_non_code
    assert read_query("which tests cover the router").asks_non_code


def test_a_symbol_query_puts_its_definition_first() -> None:
    units = [
        ("fn", 1.0, unit("session", "src/requests/sessions.py")),
        ("cls", 0.6, unit("Session", "src/requests/sessions.py", "class")),
        ("other", 0.9, unit("merge_setting", "src/requests/sessions.py")),
    ]
    assert order("Session", units) == ["cls", "fn", "other"]


def test_a_file_named_after_the_symbol_and_a_qualifier_count() -> None:
    units = [
        ("example", 1.0, unit("Router", "_examples/rest/main.go")),
        ("mux", 0.5, unit("Router", "tree.go")),
        ("iface", 0.4, unit("Router", "chi.go", "class", qualified="chi.Router")),
    ]
    assert order("chi.Router", units)[0] == "iface"
    assert order("Router", [units[0], ("file", 0.2, unit("NewRouter", "router.go"))]) == ["example", "file"]


def test_tests_and_examples_only_when_asked_for() -> None:
    units = [
        ("test", 1.0, unit("test_redirect", "tests/test_client.py")),
        ("code", 0.8, unit("follow_redirects", "src/client.py")),
    ]
    assert order("how are redirects followed", units) == ["code", "test"]
    assert order("which tests check redirects", units) == ["test", "code"]
    assert adjustment(read_query("x y"), unit("a", "pkg/foo_test.go")) == (0.0, Weights().non_code_factor)
    assert adjustment(read_query("x y"), unit("a", "web/app.spec.ts"))[1] < 1
    assert adjustment(read_query("x y"), unit("a", "src/latest.py")) == (0.0, 1.0)


def test_question_words_naming_the_path_when_weighted() -> None:
    weights = Weights(path_word=0.1)
    units = [
        ("elsewhere", 0.55, unit("load", "src/app/settings.py")),
        ("cookies", 0.5, unit("extract", "src/requests/cookies.py")),
    ]
    assert order("how are cookies stored", units, weights) == ["cookies", "elsewhere"]
    assert order("how are cookies stored", units) == ["elsewhere", "cookies"]  # off by default


def test_a_file_is_named_after_its_stem_without_the_last_extension_only() -> None:
    units = [
        ("part", 1.0, unit("SqlMapper", "Dapper/SqlMapper.DontMap.cs", "class")),
        ("main", 0.85, unit("SqlMapper", "Dapper/SqlMapper.cs", "class")),
    ]
    assert order("SqlMapper", units) == ["main", "part"]


def test_with_no_definition_of_the_name_its_file_answers() -> None:
    units = [
        ("elsewhere", 1.0, unit("createApplication", "lib/express.js")),
        ("module", 0.3, unit("send", "lib/response.js")),
    ]
    assert [pid for pid, _ in rerank("response", units, defined=False)] == ["module", "elsewhere"]
    assert [pid for pid, _ in rerank("response", units, defined=True)] == ["elsewhere", "module"]
