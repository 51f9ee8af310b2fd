"""search_code's code-aware reordering of the fused candidates."""

from __future__ import annotations

import sys
from typing import Any

from learning_memory.worker.code.index.units import UnitPayload
from learning_memory.worker.code.search.candidate import Candidate
from learning_memory.worker.code.search.query import read_query, without_project_name
from learning_memory.worker.code.search.ranking.rerank import adjustment, rerank
from learning_memory.worker.code.search.ranking.weights import Weights


def unit(
    name: str,
    file_path: str,
    unit_type: str = "function",
    qualified: str | None = None,
    *,
    project: str = "",
    start: int = 0,
    end: int = 0,
) -> UnitPayload:
    return UnitPayload.model_validate(
        {
            "project": project,
            "file_path": file_path,
            "language": "python",
            "unit_type": unit_type,
            "name": name,
            "qualified_name": qualified or name,
            "signature": name,
            "start_line": start,
            "end_line": end,
            "line_count": end - start + 1,
            "has_docstring": False,
        }
    )


def ranked(
    query: str, units: list[tuple[str, float, UnitPayload]], **options: Any
) -> list[tuple[str, float]]:
    found = rerank(read_query(query), [Candidate(pid, score, u) for pid, score, u in units], **options)
    return [(c.point_id, c.score) for c in found]


def order(
    query: str, units: list[tuple[str, float, UnitPayload]], weights: Weights | None = None
) -> list[str]:
    return [pid for pid, _ in (ranked(query, units, weights=weights) if weights else ranked(query, units))]


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


def test_a_question_about_documentation_keeps_the_doc_folder() -> None:
    # A project's doc/ folder may hold code: the code generating man pages and markdown.
    assert adjustment(read_query("x y"), unit("GenMan", "doc/man_docs.go"))[1] == Weights().non_code_factor
    asked = read_query("documentation generation for man pages and markdown")
    assert asked.asks_non_code
    assert adjustment(asked, unit("GenMan", "doc/man_docs.go"))[1] == 1.0
    assert adjustment(read_query("x y"), unit("a", "web/app.spec.ts"))[1] < 1
    assert adjustment(read_query("x y"), unit("a", "src/latest.py")) == (0.0, 1.0)


def test_question_words_naming_the_file_or_its_folder() -> None:
    units = [
        ("elsewhere", 0.55, unit("load", "src/app/settings.py")),
        ("cookies", 0.5, unit("extract", "src/requests/cookies.py")),
    ]
    assert order("how are cookies stored", units) == ["cookies", "elsewhere"]
    # One word begins the other: cookie names cookies.py, configuration names config.go.
    assert order("cookie storage", units) == ["cookies", "elsewhere"]
    assert order("how are cookies stored", units, Weights(path_word=0.0)) == ["elsewhere", "cookies"]
    query = read_query("shell tab completion support")
    assert adjustment(query, unit("a", "shell_completion.go"))[0] == Weights().path_word * 2 / 4
    assert adjustment(query, unit("a", "completions/zsh.go"))[0] == Weights().path_word / 4
    # The folder above the file's only, and no word shorter than three letters matches.
    assert adjustment(query, unit("a", "shell/x/y.go"))[0] == 0.0
    assert adjustment(read_query("ui pieces"), unit("a", "src/uikit.ts"))[0] == 0.0


def test_a_question_gets_the_member_before_its_class() -> None:
    def span(name: str, start: int, end: int, unit_type: str = "method") -> UnitPayload:
        return unit(name, "app/worker.py", unit_type, start=start, end=end)

    units = [
        ("class", 1.0, span("Worker", 10, 400, "class")),
        ("other", 0.9, unit("run", "app/cli.py", start=1, end=9)),
        ("member", 0.7, span("record_health", 200, 230)),
        ("closure", 0.65, span("beat", 210, 215, "function")),
        ("sibling", 0.6, span("start", 100, 150)),
    ]
    found = order("what does it write to its health key", units)
    # The member takes the class's place, the class comes after it (at 0.9 of the member's 0.7);
    # the closure inside the member falls behind its siblings.
    assert found == ["member", "other", "class", "sibling", "closure"]
    # A symbol query asks for the class itself.
    assert order("Worker", units)[0] == "class"


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
    assert [pid for pid, _ in ranked("response", units, defined=False)] == ["module", "elsewhere"]
    assert [pid for pid, _ in ranked("response", units, defined=True)] == ["elsewhere", "module"]


def test_a_second_unit_of_a_file_ranks_below_the_first_of_another_unless_much_stronger() -> None:
    units = [
        ("a1", 1.0, unit("get", "lib/a.py")),
        ("a2", 0.98, unit("put", "lib/a.py")),
        ("b1", 0.95, unit("run", "lib/b.py")),
        ("a3", 0.9, unit("post", "lib/a.py")),
    ]
    # A short topic: each unit of lib/a.py already taken costs 0.08 of the best relevance.
    assert order("http verbs", units) == ["a1", "b1", "a2", "a3"]
    assert order("http verbs", units, Weights(file_repeat=0.0)) == ["a1", "a2", "b1", "a3"]
    far = [*units[:2], ("b1", 0.8, unit("run", "lib/b.py"))]
    assert order("http verbs", far) == ["a1", "a2", "b1"]
    # A long question asks for one function: the cost shrinks with (4 / its words)**2.
    long = "where does the client pick the verb for the request it sends after a redirect response"
    assert order(long, units) == ["a1", "a2", "b1", "a3"]


def test_spreading_keeps_every_candidate_once() -> None:
    units = [(f"u{i}", 1.0 - i / 100, unit(f"f{i}", f"lib/{i % 3}.py")) for i in range(30)]
    found = ranked("topic", units)
    assert sorted(pid for pid, _ in found) == sorted(pid for pid, _, _ in units)
    assert [pid for pid, _ in found][:3] == ["u0", "u1", "u2"]


def test_a_nested_function_sinks_only_under_an_outer_one_that_matches() -> None:
    def span(name: str, start: int, end: int, unit_type: str = "function") -> UnitPayload:
        return unit(name, "src/fmt/args.h", unit_type, start=start, end=end)

    inner = ("inner", 1.0, span("push_back", 150, 160))
    other = ("other", 0.8, unit("load", "src/b.h", start=1, end=9))
    # The outer one matches half as well at least: the inner one is a detail of it (1.0 * 0.7).
    assert order("how are arguments stored", [inner, ("outer", 0.6, span("store", 100, 200)), other]) == [
        "other",
        "inner",
        "outer",
    ]
    # A container matching much worse (a macro read as a function around a class) sinks nothing.
    assert order("how are arguments stored", [inner, ("outer", 0.3, span("FMT_EXPORT", 40, 200)), other])[
        0
    ] == ("inner")


def test_a_question_naming_code_finds_its_definition() -> None:
    assert read_query("how res.redirect builds the Location header").names == {"redirect", "Location"}
    assert read_query("how fmt::format and format_to write").names == {"format", "format_to"}
    assert read_query("how extractors implement FromRequestParts").names == {"FromRequestParts"}
    assert read_query("e.g. the header").names == frozenset()
    # A capitalised word inside the sentence names a type; the first word of a sentence does not.
    assert read_query("How Monad composes effects with flatMap").names == {"Monad", "flatMap"}
    monad = read_query("how Monad composes effects")
    no_path = Weights(path_word=0.0)
    assert (
        adjustment(monad, unit("Monad", "core/Monad.scala", "class"), no_path)[0]
        == no_path.embedded_definition
    )
    assert adjustment(monad, unit("pure", "core/Monad.scala"), no_path)[0] == no_path.embedded_file
    units = [
        ("location", 1.0, unit("location", "lib/response.js")),
        ("redirect", 0.8, unit("redirect", "lib/response.js")),
    ]
    assert order("how res.redirect builds the Location header", units) == ["redirect", "location"]


def test_a_question_rarely_asks_for_a_constructor() -> None:
    units = [
        ("init", 1.0, unit("__init__", "arq/worker.py", "method", "Worker.__init__")),
        ("health", 0.95, unit("record_health", "arq/worker.py", "method", "Worker.record_health")),
    ]
    assert order("what does the worker write to its health key", units)[0] == "health"
    assert order("__init__", units)[0] == "init"  # asked for by name
    java = unit("Gson", "gson/Gson.java", "method", "Gson.Gson")
    assert adjustment(read_query("how are adapters chosen"), java)[1] == Weights().constructor_factor
    assert (
        adjustment(read_query("how are adapters chosen"), unit("Gson", "gson/Gson.java", "class"))[1] == 1.0
    )


def test_a_symbol_query_puts_the_class_before_its_constructor() -> None:
    units = [
        ("ctor", 1.0, unit("formatter", "include/fmt/base.h", "method", "formatter.formatter")),
        ("struct", 0.9, unit("formatter", "include/fmt/base.h", "class")),
    ]
    assert order("formatter", units) == ["struct", "ctor"]


def test_a_module_unit_sinks_none_of_its_files_units() -> None:
    def span(name: str, unit_type: str, start: int, end: int) -> UnitPayload:
        return unit(name, "src/flask/globals.py", unit_type, start=start, end=end)

    # The module unit spans the file's loose code around the function: it does not hold it.
    units = [
        ("module", 1.0, span("globals.py", "module", 1, 80)),
        ("function", 0.9, span("_lookup_app_object", "function", 20, 30)),
        ("elsewhere", 0.8, unit("push", "src/flask/ctx.py", start=5, end=9)),
    ]
    # Read as an outer function, the module would sink the function to 0.9 * 0.7, below 0.8.
    assert order("how is the current application object looked up", units) == [
        "module",
        "function",
        "elsewhere",
    ]


def test_a_module_re_exporting_an_undefined_name_stands_for_its_definition() -> None:
    units = [
        ("impl", 1.0, unit("RawForm", "extract/raw_form.rs", "class")),
        ("reexport", 0.3, unit("mod.rs", "extract/mod.rs", "module")),
    ]
    found = ranked("FromRequest", units, defined=True, defining_modules=frozenset({"reexport"}))
    assert [pid for pid, _ in found] == ["reexport", "impl"]


def test_a_short_topical_question_leans_to_the_file_holding_most_code_on_it() -> None:
    units = [
        ("helper", 1.0, unit("use_middleware", "lib/sinatra/middleware/logger.rb")),
        ("core", 0.97, unit("use", "lib/sinatra/base.rb")),
    ]
    sizes = {("", "lib/sinatra/middleware/logger.rb"): 3, ("", "lib/sinatra/base.rb"): 400}
    assert [pid for pid, _ in ranked("request pipeline", units)] == ["helper", "core"]
    assert [pid for pid, _ in ranked("request pipeline", units, file_sizes=sizes)] == ["core", "helper"]
    # A long question asks for one function: the file's size barely counts.
    long = "when a request arrives, which function hands it along the configured request pipeline stages"
    assert [pid for pid, _ in ranked(long, units, file_sizes=sizes)] == ["helper", "core"]


def test_a_question_spelling_a_type_in_words_finds_it() -> None:
    assert read_query("JSON object with named fields").phrases == ("jsonobject", "namedfields", "namedfield")
    assert "typeadapterfactory" in read_query("how type adapter factories are registered").phrases
    assert read_query("Session").phrases == ()  # a symbol query names its symbol already
    units = [
        ("naming", 1.0, unit("translateName", "gson/FieldNamingStrategy.java", "method")),
        ("object", 0.95, unit("JsonObject", "gson/JsonObject.java", "class")),
        ("member", 0.7, unit("add", "gson/JsonObject.java", "method", "JsonObject.add")),
        ("module", 0.7, unit("JsonObject.java", "gson/JsonObject.java", "module")),
    ]
    found = dict(ranked("JSON object with named fields", units))
    assert max(found, key=lambda pid: found[pid]) == "object"
    plain = {pid: score for pid, score, _ in units}
    assert found["member"] > plain["member"] - 0.1  # the file named so: the member gains too
    weights = Weights(
        phrase_definition=0.0, phrase_file=0.0, phrase_type=0.0, phrase_type_file=0.0, path_word=0.0
    )
    assert order("JSON object with named fields", units, weights)[0] == "naming"


def test_a_short_question_naming_a_class_in_words_is_about_it() -> None:
    units = [
        ("reader", 1.0, unit("nextJsonElement", "gson/bind/JsonTreeReader.java", "method")),
        ("element", 0.3, unit("JsonElement", "gson/JsonElement.java", "class")),
        ("method", 0.3, unit("jsonElement", "gson/bind/Walker.java", "method")),
    ]
    assert order("JSON element hierarchy and tree model", units)[:2] == ["element", "reader"]
    # Only a class: a method of that name gets the plain phrase weight.
    short = read_query("JSON element tree")
    assert adjustment(short, units[2][2])[0] == Weights().phrase_definition
    # A long question asks for one function: the class named in it barely moves.
    long = "If redis is not reachable when creating the connection pool, how many times is it retried?"
    pool = [
        ("retry", 1.0, unit("retry_connect", "arq/connections.py")),
        ("pool", 0.5, unit("ConnectionPool", "redis/connection.py", "class")),
    ]
    assert order(long, pool) == ["retry", "pool"]


def test_a_name_many_candidates_define_tells_less() -> None:
    query = "how Monad composes dependent computations with flatMap"
    units = [
        (f"flat{i}", 0.5, unit("flatMap", f"core/data/T{i}.scala", "method", f"T{i}.flatMap"))
        for i in range(5)
    ]
    units.append(("monad", 0.3, unit("Monad", "core/Monad.scala", "class")))
    assert order(query, units)[0] == "monad"
    no_path = Weights(path_word=0.0)
    one = adjustment(read_query(query), units[0][2], no_path, defining={"flatMap": 5})[0]
    assert one == no_path.embedded_definition / 5


def test_the_projects_own_name_names_no_file() -> None:
    def of(name: str, path: str) -> UnitPayload:
        return unit(name, path, project="trpc")

    units = [
        ("init", 0.50, of("initTRPC", "src/core/initTRPC.ts")),
        ("router", 0.45, of("createRouter", "src/core/router.ts")),
    ]
    assert order("how a tRPC router is created", units) == ["router", "init"]
    assert adjustment(read_query("tRPC setup"), of("x", "src/trpc.ts"))[0] == 0.0
    # A question made of nothing else keeps its words.
    flask = unit("x", "src/flask/app.py", project="flask")
    assert adjustment(read_query("what is flask"), flask)[0] == Weights().path_word


def test_code_for_another_operating_system_comes_after_this_ones() -> None:
    here, there = (
        ("src/win/fs.c", "src/unix/fs.c") if sys.platform == "win32" else ("src/unix/fs.c", "src/win/fs.c")
    )
    units = [("there", 1.0, unit("uv_fs_open", there)), ("here", 0.9, unit("uv_fs_open", here))]
    assert order("file system operations like open and stat", units) == ["here", "there"]
    assert order("uv_fs_open", units) == ["here", "there"]
    # Asked for by name, the platform's code keeps its place.
    assert order("how are files opened on Windows and on Unix", units) == ["there", "here"]
    if sys.platform != "win32":
        factor = Weights().other_platform_factor
        assert adjustment(read_query("how is a pipe read"), unit("read", "pipe_windows.go"))[1] == factor
        assert adjustment(read_query("how is a pipe read"), unit("read", "src/unix/linux.c"))[1] == 1.0


def test_the_projects_own_name_is_left_out_of_what_the_model_reads() -> None:
    assert without_project_name("how a tRPC router is created", "trpc") == "how a router is created"
    assert (
        without_project_name("how does Flask pick an error handler", "flask")
        == "how does pick an error handler"
    )
    # Only the whole word: "flasks" stays, and so does a namespace that merely begins the name.
    assert without_project_name("flasks of fmt", "flask") == "flasks of fmt"
    assert without_project_name("fmt::format", "fmtlib") == "fmt::format"
    assert without_project_name("Flask", "flask") == "Flask"
    assert without_project_name("any question", None) == "any question"
