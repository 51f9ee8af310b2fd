"""BM25 per project over the unit store: a project's keyword ranking is its own, whatever else is
indexed, and indexes written before they were per project are built on first search. Name
lookups: units by name, modules binding or re-exporting a name."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from learning_memory.shared.contracts.code import CodeUnit
from learning_memory.worker.code.index import unit_store
from learning_memory.worker.code.search import bm25, names
from learning_memory.worker.code.search.query import query_terms
from learning_memory.worker.metadata.store import MetadataStore


def unit(project: str, path: str, name: str, body: str) -> CodeUnit:
    return CodeUnit(
        project=project,
        file_path=path,
        language="python",
        unit_type="function",
        name=name,
        qualified_name=name,
        signature=f"def {name}()",
        body=body,
        start_line=1,
        end_line=2,
        line_count=2,
        has_docstring=False,
    )


@pytest.fixture
async def metadata(tmp_path: Path) -> AsyncIterator[MetadataStore]:
    store = await MetadataStore.open(tmp_path / "metadata.sqlite3")
    yield store
    await store.close()


async def index(metadata: MetadataStore, project: str, units: list[CodeUnit]) -> None:
    paths = sorted({u.file_path for u in units})
    await unit_store.replace_files(metadata, project, paths, units)


async def ranking(metadata: MetadataStore, project: str | None = "app") -> list[str]:
    return await bm25.search(metadata, query_terms("parse ledger entry"), limit=10, project=project)


APP = [
    # "ledger" is rare in app, "parse" common: the ledger unit should win in app on its own.
    unit("app", "a.py", "read_ledger", "return load_ledger_entry(path)"),
    unit("app", "b.py", "parse_args", "return parse(parse(parse(argv)))"),
    unit("app", "c.py", "parse_env", "return parse(environ)"),
    unit("app", "d.py", "parse_json", "return parse(text)"),
]


async def test_a_projects_ranking_does_not_move_with_other_projects(metadata: MetadataStore) -> None:
    await index(metadata, "app", APP)
    alone = await ranking(metadata)
    # Another project full of "ledger" would make the word common across one shared index.
    await index(
        metadata, "books", [unit("books", f"l{n}.py", f"ledger_{n}", "ledger ledger") for n in range(50)]
    )
    assert await ranking(metadata) == alone
    assert alone[0] == APP[0].id

    across = await ranking(metadata, project=None)
    assert APP[0].id in across and any(pid not in {u.id for u in APP} for pid in across)


async def test_replacing_and_removing_keep_each_index_exact(metadata: MetadataStore) -> None:
    await index(metadata, "app", APP)
    await index(metadata, "app", [unit("app", "a.py", "write_report", "return render(report)")])
    assert APP[0].id not in await ranking(metadata)
    await unit_store.remove_files(metadata, "app", ["b.py"])
    assert APP[1].id not in await ranking(metadata)
    await unit_store.remove_project(metadata, "app")
    assert await ranking(metadata) == [] and await ranking(metadata, project=None) == []
    assert await bm25.search(metadata, query_terms("the of"), limit=5) == []  # nothing but stopwords


async def test_rows_without_an_index_get_one_on_first_search(metadata: MetadataStore) -> None:
    await index(metadata, "app", APP)
    # As a store migrated from one shared index leaves them: rows, and no index of their own.
    await metadata.transaction(lambda conn: conn.execute("DROP TABLE code_fts_1"))
    await metadata.execute("DELETE FROM code_fts_tables")
    assert (await ranking(metadata, project=None))[0] == APP[0].id
    await metadata.transaction(lambda conn: conn.execute("DROP TABLE code_fts_1"))
    await metadata.execute("DELETE FROM code_fts_tables")
    assert (await ranking(metadata))[0] == APP[0].id


async def test_every_project_without_an_index_gets_one_and_language_still_filters(
    metadata: MetadataStore,
) -> None:
    await index(metadata, "app", APP)
    other = unit("zoo", "z.py", "parse_ledger", "return ledger")
    await index(metadata, "zoo", [other.model_copy(update={"language": "go"})])
    await metadata.transaction(lambda conn: [conn.execute(f"DROP TABLE code_fts_{n}") for n in (1, 2)])
    await metadata.execute("DELETE FROM code_fts_tables")
    across = await ranking(metadata, project=None)
    assert {APP[0].id, other.id} <= set(across)
    assert len(await metadata.fetchall("SELECT * FROM code_fts_tables")) == 2
    go_only = await bm25.search(metadata, query_terms("parse ledger entry"), limit=10, language="go")
    assert go_only == [other.id]
    python_in_app = await bm25.search(
        metadata, query_terms("parse ledger"), limit=2, project="app", language="python"
    )
    assert len(python_in_app) == 2 and python_in_app[0] == APP[0].id


def module(project: str, path: str, language: str, body: str) -> CodeUnit:
    name = path.rsplit("/", 1)[-1]
    return unit(project, path, name, body).model_copy(
        update={"unit_type": "module", "qualified_name": name, "signature": path, "language": language}
    )


async def test_a_name_re_exported_by_a_module_is_found_there(metadata: MetadataStore) -> None:
    await index(
        metadata,
        "web",
        [
            module(
                "web",
                "extract/mod.rs",
                "rust",
                "pub mod path;\npub use core::extract::{FromRequest, FromRef};",
            ),
            module(
                "web", "lib.rs", "rust", "//! Implement FromRequest to extract your own types.\nmod body;"
            ),
            module("web", "index.ts", "typescript", "export { createRouter as router } from './router';"),
            module("web", "pkg/__init__.py", "python", "__all__ = ['Session', 'get']"),
            unit("web", "form.rs", "from_request", "impl FromRequest for Form { fn from_request() {} }"),
        ],
    )
    assert (await names.defining_modules(metadata, "FromRequest", limit=5, project="web")).reexporting == [
        await _id(metadata, "extract/mod.rs")
    ]
    assert (await names.defining_modules(metadata, "router", limit=5)).reexporting == [
        await _id(metadata, "index.ts")
    ]
    assert (
        await names.defining_modules(metadata, "Session", limit=5, project="web", language="python")
    ).reexporting == [await _id(metadata, "pkg/__init__.py")]
    assert (
        await names.defining_modules(metadata, "Session", limit=5, project="web", language="rust")
    ).reexporting == []
    assert (await names.defining_modules(metadata, "FromRef", limit=5, project="other")).reexporting == []
    assert (await names.defining_modules(metadata, "__", limit=5, project="web")).reexporting == []


async def test_a_value_bound_at_a_modules_top_level_is_found_there(metadata: MetadataStore) -> None:
    await index(
        metadata,
        "app",
        [
            module(
                "app", "globals.py", "python", "g: Proxy = LocalProxy(_cv, 'g')\nif g == other:\n    pass"
            ),
            module("app", "uses.py", "python", "def f():\n    g = 1\nprint(g)\ng == 2"),
            module("app", "router.ts", "typescript", "export const router = createRouter();"),
            module("app", "consts.rs", "rust", "pub(crate) static mut COUNTER: u32 = 0;"),
            module("app", "errors.go", "go", 'var ErrNotFound = errors.New("not found")'),
            module("app", "Json.kt", "kotlin", "internal val json = Json { }"),
            module("app", "AF.swift", "swift", "public let AF = Session.default"),
        ],
    )
    assert (await names.defining_modules(metadata, "g", limit=5, project="app")).binding == [
        await _id(metadata, "globals.py")
    ]
    for name, path in [
        ("router", "router.ts"),
        ("COUNTER", "consts.rs"),
        ("ErrNotFound", "errors.go"),
        ("json", "Json.kt"),
        ("AF", "AF.swift"),
    ]:
        assert (await names.defining_modules(metadata, name, limit=5, project="app")).binding == [
            await _id(metadata, path)
        ]
    assert (await names.defining_modules(metadata, "g", limit=5, project="app", language="go")).binding == []
    assert (await names.defining_modules(metadata, "createRouter", limit=5, project="app")).binding == []


async def _id(metadata: MetadataStore, path: str) -> str:
    row = await metadata.fetchone("SELECT point_id FROM code_lexical WHERE file_path = ?", (path,))
    assert row is not None
    return str(row[0])


async def test_units_are_found_by_name_in_any_case_module_units_aside(metadata: MetadataStore) -> None:
    await index(
        metadata,
        "gson",
        [
            unit("gson", "JsonObject.java", "JsonObject", "class JsonObject {}"),
            module("gson", "jsonobject", "java", "static final int JSONOBJECT = 1;"),
            unit("gson", "Other.java", "other", "int other() {}"),
        ],
    )
    found = await names.named(metadata, ["jsonobject", "typeadapter"], limit=5, project="gson")
    assert found == [await _id(metadata, "JsonObject.java")]
    assert await names.named(metadata, [], limit=5) == []
    assert await names.named(metadata, ["jsonobject"], limit=5, project="gson", language="go") == []
