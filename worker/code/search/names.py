"""Name lookups: the units a query names, found by name rather than by rank.

A query naming a symbol asks for its definition however common the word is in the project's
text (``Headers`` in an HTTP client, where every function mentions headers): neither ranking
may reach it, so the units of that name join the candidates. A name may also be defined by a
module rather than a function or class: a value bound at a module's top level, or a name a
package offers by re-exporting it from elsewhere. And a question may spell a type's name in
words ("JSON object": JsonObject).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field

from learning_memory.worker.code.index import unit_store
from learning_memory.worker.code.index.unit_store import ROWS
from learning_memory.worker.code.search.bm25 import match_expression
from learning_memory.worker.code.search.query import Query, query_terms
from learning_memory.worker.metadata.store import MetadataStore

NAMED_CANDIDATES = 20  # units a name lookup adds to the candidates, at most


async def definitions(
    metadata: MetadataStore, name: str, *, limit: int, project: str | None = None, language: str | None = None
) -> list[str]:
    """Point ids of the units called ``name`` (in any case)."""
    sql = f"SELECT point_id FROM {ROWS} WHERE name = ? COLLATE NOCASE"
    return await _point_ids(metadata, sql, [name], limit=limit, project=project, language=language)


async def named(
    metadata: MetadataStore,
    names: Sequence[str],
    *,
    limit: int,
    project: str | None = None,
    language: str | None = None,
) -> list[str]:
    """Point ids of the units (not module units) called any of ``names``, in any case."""
    if not names:
        return []
    marks = ",".join("?" * len(names))
    sql = (
        f"SELECT point_id FROM {ROWS} WHERE name COLLATE NOCASE IN ({marks})"
        " AND json_extract(payload, '$.unit_type') != 'module'"
    )
    return await _point_ids(metadata, sql, list(names), limit=limit, project=project, language=language)


async def _point_ids(
    metadata: MetadataStore,
    sql: str,
    params: list[object],
    *,
    limit: int,
    project: str | None,
    language: str | None,
) -> list[str]:
    """Run a point-id query on the rows, narrowed to a project and a language when given."""
    if project is not None:
        sql += " AND project = ?"
        params.append(project)
    if language is not None:
        sql += " AND language = ?"
        params.append(language)
    sql += " LIMIT ?"
    params.append(limit)
    return [str(row[0]) for row in await metadata.fetchall(sql, params)]


def reexport_pattern(name: str) -> re.Pattern[str]:
    """A statement making ``name`` part of a module's API without defining it there: Rust's
    ``pub use``, JavaScript's ``export { X } from``, Python's ``__all__``, C++'s ``using a::X;``."""
    word = re.escape(name)
    return re.compile(
        rf"\bpub(?:\([^)]*\))?\s+use\b[^;]*\b{word}\b"
        rf"|\bexport\s+(?:type\s+)?\{{[^}}]*\b{word}\b"
        rf"|\bexport\s+\*\s+as\s+{word}\b"
        rf"|__all__\s*=\s*[\[(][^\])]*['\"]{word}['\"]"
        rf"|\busing\s+[\w:]*::{word}\s*;"
    )


def binding_pattern(name: str) -> re.Pattern[str]:
    """A statement binding ``name`` at a module's top level, where no function or class defines
    it: Python's ``g: Proxy = LocalProxy(...)``, JavaScript's ``export const router =``, Rust's
    ``pub static NAME``, Go's ``var ErrNotFound``, Kotlin's ``val json``, Swift's ``let AF``, a Ruby
    constant. Only at the start of a line: an indented one is a local or a member."""
    word = re.escape(name)
    return re.compile(
        rf"^{word}\s*(?::[^=\n]*)?=(?!=)"
        rf"|^(?:export\s+)?(?:const|let|var)\s+{word}\b"
        rf"|^(?:pub(?:\([^)]*\))?\s+)?(?:static|const)\s+(?:mut\s+)?{word}\b"
        rf"|^(?:(?:public|private|internal|fileprivate|protected)\s+)?(?:lazy\s+)?(?:val|var|let)\s+{word}\b",
        re.MULTILINE,
    )


@dataclass(frozen=True)
class ModuleDefinitions:
    """Module units standing for a name's definition when no function or class is called that."""

    binding: list[str] = field(default_factory=list)  # bind it at their top level
    reexporting: list[str] = field(default_factory=list)  # offer it from another package


async def defining_modules(
    metadata: MetadataStore, name: str, *, limit: int, project: str | None = None, language: str | None = None
) -> ModuleDefinitions:
    """Point ids of the module units holding ``name`` that bind it or re-export it, at most
    ``limit`` of each, from one scan of the modules mentioning it."""
    terms = query_terms(name)
    if not terms:
        return ModuleDefinitions()
    binds, reexports = binding_pattern(name), reexport_pattern(name)

    def run(conn: sqlite3.Connection) -> ModuleDefinitions:
        found = ModuleDefinitions()
        for table in unit_store.keyword_indexes(conn, project):
            sql = (
                f"SELECT l.point_id, l.text FROM {table} JOIN {ROWS} AS l ON l.rowid = {table}.rowid"
                f" WHERE {table} MATCH ? AND json_extract(l.payload, '$.unit_type') = 'module'"
            )
            params: list[object] = [match_expression(terms[:1])]
            if language is not None:
                sql += " AND l.language = ?"
                params.append(language)
            for pid, text in conn.execute(sql, params):
                if binds.search(str(text)):
                    found.binding.append(str(pid))
                if reexports.search(str(text)):
                    found.reexporting.append(str(pid))
        return ModuleDefinitions(found.binding[:limit], found.reexporting[:limit])

    return await metadata.read(run)


@dataclass(frozen=True)
class NamedUnits:
    """What the name lookups add to a query's candidates, and what the reranking needs to know."""

    point_ids: list[str]  # units defining the queried name, or called as a question spells a type
    defined: bool = True  # False: the query names a symbol no unit of the project is called
    defining_modules: frozenset[str] = frozenset()  # module units standing for its definition


async def named_units(
    metadata: MetadataStore, query: Query, *, project: str | None, language: str | None
) -> NamedUnits:
    if query.symbol is not None:
        defining = await definitions(
            metadata, query.symbol, limit=NAMED_CANDIDATES, project=project, language=language
        )
        found = await defining_modules(
            metadata, query.symbol, limit=NAMED_CANDIDATES, project=project, language=language
        )
        # A value bound at a module's top level is defined there, in the module unit. Defined
        # nowhere in the project, a name may still be offered by it: a module re-exporting it
        # from another package answers.
        modules = found.binding or ([] if defining else found.reexporting)
        return NamedUnits([*defining, *modules], bool(defining or modules), frozenset(modules))
    if query.phrases:
        return NamedUnits(
            await named(metadata, query.phrases, limit=NAMED_CANDIDATES, project=project, language=language)
        )
    return NamedUnits([])
