"""The lexical side of code search: BM25 over an SQLite FTS5 index of the units' text.

Dense vectors find code by meaning but miss the exact words a developer types (an error code,
a header name, a half-remembered identifier); BM25 finds those. Both run for every search_code
and are fused (see ``worker.code.search``). SQLite's FTS5 is already in every Python, lives in
the metadata store beside the file hashes it must agree with, and behaves the same whichever
vector engine is configured.

Each project has an FTS5 index of its own (``code_fts_<n>``, listed in ``code_fts_tables``), all
reading their text from ``code_lexical``: BM25's statistics (how rare a word is, how long a unit
is on average) are then the project's, so a project's ranking does not move when another is
indexed. A search without a project asks every index and merges the lists by BM25 score.

Identifiers are split into words on both sides (``calculateRetryDelay`` is indexed and queried as
``calculate retry delay`` too; ``snake_case`` splits by itself in FTS5's tokenizer), and the
Porter stemmer lets "retrying" find "retry".
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from learning_memory.shared.contracts.code import CodeUnit
from learning_memory.worker.code.units import embedding_text, file_of, split_identifier, unit_payload
from learning_memory.worker.metadata.store import MetadataStore

# Words too common in questions to say anything about code. The rest is left to BM25's idf.
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i if in into is it its me my of on or "
    "our should so that the their then there this to use used uses using was we what when where "
    "which who why will with you your".split()
)
MAX_QUERY_TERMS = 64
_WORD = re.compile(r"[A-Za-z0-9]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MIXED_CASE = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
# SQLite's historical limit is 999 host parameters per statement.
_PATHS_PER_DELETE = 500


def spelled_identifiers(text: str) -> str:
    """The words of every camelCase or PascalCase identifier in ``text``, space-separated."""
    # Each distinct name once: a unit repeats its identifiers, and the case test is the cost.
    words = {split_identifier(name) for name in set(_IDENTIFIER.findall(text)) if _MIXED_CASE.search(name)}
    return " ".join(sorted(words))


def lexical_text(unit: CodeUnit) -> str:
    text = embedding_text(unit)
    return f"{unit.name}\n{text}\n{spelled_identifiers(text)}"


def embedding_text_of(text: str) -> str:
    """The unit's embedding text back from its row's ``lexical_text``: the lines between its name's
    (a name has no line break) and the spelled identifiers' (one line, maybe empty)."""
    return text.split("\n", 1)[1].rsplit("\n", 1)[0] if "\n" in text else ""


@dataclass(frozen=True)
class WaitingUnit:
    """A unit written without its vector yet (see ``worker.code.filler``)."""

    rowid: int
    point_id: str
    project: str
    row_text: str
    row_payload: str

    @property
    def text(self) -> str:
        """What the model embeds."""
        return embedding_text_of(self.row_text)

    @property
    def payload(self) -> dict[str, Any]:
        return dict(json.loads(self.row_payload))


def query_terms(query: str) -> list[str]:
    """Distinct lower-case words of the query and of its identifiers' parts, stopwords dropped."""
    words = [word.lower() for word in _WORD.findall(query)]
    words += spelled_identifiers(query).split()
    terms = [word for word in dict.fromkeys(words) if word not in STOPWORDS]
    return terms[:MAX_QUERY_TERMS]


def match_expression(terms: Sequence[str]) -> str:
    # Each term quoted: terms are [a-z0-9]+ already, so quoting only guards FTS5 keywords (OR, NOT).
    return " OR ".join(f'"{term}"' for term in terms)


# A unit's keyword row as stored: point id, language, file path, text, name, payload (JSON).
Row = tuple[str, str, str, str, str, str]


def rows_for(units: Iterable[CodeUnit]) -> list[Row]:
    return [
        (
            unit.id,
            unit.language,
            unit.file_path,
            lexical_text(unit),
            unit.name,
            json.dumps(unit_payload(unit), separators=(",", ":")),
        )
        for unit in units
    ]


async def replace_files(
    metadata: MetadataStore, project: str, paths: Sequence[str], units: Iterable[CodeUnit]
) -> None:
    """The rows of ``paths`` in ``project`` become exactly ``units`` (one transaction)."""
    rows = rows_for(units)
    await metadata.transaction(lambda conn: replace_rows(conn, project, paths, rows))


def replace_rows(conn: sqlite3.Connection, project: str, paths: Sequence[str], rows: Sequence[Row]) -> None:
    """Inside the caller's transaction: the rows of ``paths`` in ``project`` become ``rows``."""
    table = _index_of(conn, project, create=True)
    _delete_files(conn, project, paths)
    # A unit id met again elsewhere (another file or project) leaves there first: its old
    # row must leave its index too, which a silent REPLACE would not do.
    ids = [row[0] for row in rows]
    for start in range(0, len(ids), _PATHS_PER_DELETE):
        chunk = ids[start : start + _PATHS_PER_DELETE]
        _delete_rows(conn, f"point_id IN ({','.join('?' * len(chunk))})", chunk)
    for point, language, file_path, text, name, payload in rows:
        cursor = conn.execute(
            "INSERT INTO code_lexical"
            " (point_id, project, language, file_path, text, name, payload, embedded)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
            (point, project, language, file_path, text, name, payload),
        )
        conn.execute(f"INSERT INTO {table} (rowid, text) VALUES (?, ?)", (cursor.lastrowid, text))


async def remove_files(metadata: MetadataStore, project: str, paths: Sequence[str]) -> None:
    await metadata.transaction(lambda conn: _delete_files(conn, project, paths))


async def remove_project(metadata: MetadataStore, project: str) -> None:
    await metadata.transaction(lambda conn: drop_project(conn, project))


def drop_project(conn: sqlite3.Connection, project: str) -> None:
    """Inside the caller's transaction: the project's rows and keyword index go."""
    table = _index_of(conn, project, create=False)
    if table is not None:
        conn.execute(f"DROP TABLE {table}")
        conn.execute("DELETE FROM code_fts_tables WHERE project = ?", (project,))
    conn.execute("DELETE FROM code_lexical WHERE project = ?", (project,))


def _table_name(index_id: int) -> str:
    return f"code_fts_{int(index_id)}"


def _index_of(conn: sqlite3.Connection, project: str, *, create: bool) -> str | None:
    """The name of ``project``'s FTS index; with ``create``, made and filled from the project's
    rows when it has none yet (inside the caller's transaction)."""
    row = conn.execute("SELECT id FROM code_fts_tables WHERE project = ?", (project,)).fetchone()
    if row is not None:
        return _table_name(row[0])
    if not create:
        return None
    table = _table_name(
        conn.execute("INSERT INTO code_fts_tables (project) VALUES (?)", (project,)).lastrowid or 0
    )
    conn.execute(
        f"CREATE VIRTUAL TABLE {table} USING fts5("
        "text, content = 'code_lexical', content_rowid = 'rowid', tokenize = 'porter unicode61')"
    )
    conn.execute(
        f"INSERT INTO {table} (rowid, text) SELECT rowid, text FROM code_lexical WHERE project = ?",
        (project,),
    )
    return table


def _delete_rows(conn: sqlite3.Connection, where: str, params: Sequence[object]) -> None:
    """Delete the matching rows and their entries in their projects' indexes (an external-content
    index forgets a row only when told its old text)."""
    found = conn.execute(f"SELECT rowid, project, text FROM code_lexical WHERE {where}", params).fetchall()
    tables = {project: _index_of(conn, project, create=False) for project in {row[1] for row in found}}
    for rowid, project, text in found:
        table = tables[project]
        if table is not None:
            conn.execute(f"INSERT INTO {table} ({table}, rowid, text) VALUES ('delete', ?, ?)", (rowid, text))
    conn.executemany("DELETE FROM code_lexical WHERE rowid = ?", [(row[0],) for row in found])


def _delete_files(conn: sqlite3.Connection, project: str, paths: Sequence[str]) -> None:
    for start in range(0, len(paths), _PATHS_PER_DELETE):
        chunk = list(paths[start : start + _PATHS_PER_DELETE])
        marks = ",".join("?" * len(chunk))
        _delete_rows(conn, f"project = ? AND file_path IN ({marks})", [project, *chunk])


def _search_index(
    conn: sqlite3.Connection, table: str, match: str, language: str | None, limit: int
) -> list[tuple[float, str]]:
    # Ranked inside the index first and joined to the rows after: joining before the ORDER BY
    # looks up the row of every match, and a question's common words match most of a project.
    if language is None:
        sql = (
            f"SELECT s, l.point_id FROM (SELECT rowid AS r, bm25({table}) AS s FROM {table}"
            f" WHERE {table} MATCH ? ORDER BY s LIMIT ?) JOIN code_lexical AS l ON l.rowid = r ORDER BY s"
        )
        params: list[object] = [match, limit]
    else:
        sql = (
            f"SELECT bm25({table}) AS s, l.point_id FROM {table}"
            f" JOIN code_lexical AS l ON l.rowid = {table}.rowid"
            f" WHERE {table} MATCH ? AND l.language = ? ORDER BY s LIMIT ?"
        )
        params = [match, language, limit]
    return [(float(score), str(point)) for score, point in conn.execute(sql, params).fetchall()]


async def search(
    metadata: MetadataStore,
    query: str,
    *,
    limit: int,
    project: str | None = None,
    language: str | None = None,
) -> list[str]:
    """Point ids of the best BM25 matches, best first. Across projects, each project's index
    answers with its own statistics and the lists are merged by score."""
    terms = query_terms(query)
    if not terms:
        return []
    match = match_expression(terms)

    def run(conn: sqlite3.Connection) -> list[str]:
        if project is None:
            names = [str(row[0]) for row in conn.execute("SELECT project FROM code_fts_tables")]
        else:
            names = [project]
        hits: list[tuple[float, str]] = []
        for name in names:
            table = _index_of(conn, name, create=False)
            if table is not None:
                hits += _search_index(conn, table, match, language, limit)
        hits.sort()  # bm25() is lower for better matches
        return [point for _, point in hits[:limit]]

    await _build_missing_indexes(metadata, project)
    return await metadata.read(run)


async def _build_missing_indexes(metadata: MetadataStore, project: str | None) -> None:
    """Rows written before indexes were per project have none yet: build it on first search."""
    if project is not None:
        if await metadata.fetchone("SELECT 1 FROM code_fts_tables WHERE project = ?", (project,)):
            return
        sql = "SELECT DISTINCT project FROM code_lexical WHERE project = ?"
        params: tuple[object, ...] = (project,)
    else:
        # Each distinct project found by a jump through the (project, name) index, not a scan of
        # every row: this runs before every search across projects.
        sql = (
            "WITH RECURSIVE p(name) AS (SELECT min(project) FROM code_lexical UNION ALL"
            " SELECT (SELECT min(project) FROM code_lexical WHERE project > p.name) FROM p"
            " WHERE p.name IS NOT NULL)"
            " SELECT name FROM p WHERE name IS NOT NULL"
            " AND name NOT IN (SELECT project FROM code_fts_tables)"
        )
        params = ()
    missing = [str(row[0]) for row in await metadata.fetchall(sql, params)]
    if missing:
        await metadata.transaction(lambda conn: [_index_of(conn, name, create=True) for name in missing])


async def definitions(
    metadata: MetadataStore, name: str, *, limit: int, project: str | None = None, language: str | None = None
) -> list[str]:
    """Point ids of the units called ``name`` (in any case): what a query naming a symbol asks for,
    however common the word is in the project's text."""
    sql = "SELECT point_id FROM code_lexical WHERE name = ? COLLATE NOCASE"
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
        f"SELECT point_id FROM code_lexical WHERE name COLLATE NOCASE IN ({marks})"
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
    """Run a ``code_lexical`` point-id query narrowed to a project and a language when given."""
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


class ModuleDefinitions(NamedTuple):
    """Module units standing for a name's definition when no function or class is called that."""

    binding: list[str]  # bind it at their top level (flask's ``g``, a package's default settings)
    reexporting: list[str]  # offer it from another package (a trait of a sibling crate)


async def defining_modules(
    metadata: MetadataStore, name: str, *, limit: int, project: str | None = None, language: str | None = None
) -> ModuleDefinitions:
    """Point ids of the module units holding ``name`` that bind it or re-export it, at most
    ``limit`` of each, from one scan of the modules mentioning it."""
    terms = query_terms(name)
    if not terms:
        return ModuleDefinitions([], [])
    binds, reexports = binding_pattern(name), reexport_pattern(name)

    def run(conn: sqlite3.Connection) -> ModuleDefinitions:
        if project is None:
            names = [str(row[0]) for row in conn.execute("SELECT project FROM code_fts_tables")]
        else:
            names = [project]
        found = ModuleDefinitions([], [])
        for each in names:
            table = _index_of(conn, each, create=False)
            if table is None:
                continue
            sql = (
                f"SELECT l.point_id, l.text FROM {table} JOIN code_lexical AS l ON l.rowid = {table}.rowid"
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


async def payloads(
    metadata: MetadataStore, point_ids: Sequence[str], *, with_file_sizes: bool = False
) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], int]]:
    """The payloads kept with the rows of ``point_ids`` (rows older than payloads have none) and,
    ``with_file_sizes``, :func:`file_sizes` of their files, in the same read: both lie on every
    search's path."""

    def run(conn: sqlite3.Connection) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], int]]:
        found = _payloads_in(conn, point_ids)
        sizes = _file_sizes_in(conn, map(file_of, found.values())) if with_file_sizes else {}
        return found, sizes

    return await metadata.read(run) if point_ids else ({}, {})


def _payloads_in(conn: sqlite3.Connection, point_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for start in range(0, len(point_ids), _PATHS_PER_DELETE):
        chunk = list(point_ids[start : start + _PATHS_PER_DELETE])
        rows = conn.execute(
            f"SELECT point_id, payload FROM code_lexical WHERE point_id IN ({','.join('?' * len(chunk))})"
            " AND payload IS NOT NULL",
            chunk,
        ).fetchall()
        out |= {str(row[0]): json.loads(row[1]) for row in rows}
    return out


async def pending(metadata: MetadataStore, limit: int) -> list[WaitingUnit]:
    """Units still without their vector, oldest rows first."""
    rows = await metadata.fetchall(
        "SELECT rowid, point_id, project, text, payload FROM code_lexical WHERE embedded = 0"
        " ORDER BY rowid LIMIT ?",
        (limit,),
    )
    return [WaitingUnit(int(row[0]), str(row[1]), str(row[2]), str(row[3]), str(row[4])) for row in rows]


async def still_pending(metadata: MetadataStore, units: Sequence[WaitingUnit]) -> set[int]:
    """The rowids of those of ``units`` whose rows still wait, unchanged. A re-index replaces rows,
    and SQLite may give a new row the rowid of one just deleted: the row's contents must match."""
    if not units:
        return set()
    marks = ",".join("?" * len(units))
    rows = await metadata.fetchall(
        f"SELECT rowid, point_id, text, payload FROM code_lexical WHERE rowid IN ({marks}) AND embedded = 0",
        [unit.rowid for unit in units],
    )
    now = {int(row[0]): (str(row[1]), str(row[2]), str(row[3])) for row in rows}
    return {
        unit.rowid
        for unit in units
        if now.get(unit.rowid) == (unit.point_id, unit.row_text, unit.row_payload)
    }


async def mark_embedded(metadata: MetadataStore, rowids: Sequence[int]) -> None:
    if rowids:
        marks = ",".join("?" * len(rowids))
        await metadata.execute(f"UPDATE code_lexical SET embedded = 1 WHERE rowid IN ({marks})", list(rowids))


async def file_sizes(metadata: MetadataStore, files: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Units per (project, file path), for the files given."""
    wanted = list(files)
    return await metadata.read(lambda conn: _file_sizes_in(conn, wanted)) if wanted else {}


def _file_sizes_in(conn: sqlite3.Connection, files: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    wanted = sorted(set(files))
    out: dict[tuple[str, str], int] = {}
    for project in sorted({project for project, _ in wanted}):
        paths = [path for each, path in wanted if each == project]
        for start in range(0, len(paths), _PATHS_PER_DELETE):
            chunk = paths[start : start + _PATHS_PER_DELETE]
            rows = conn.execute(
                "SELECT file_path, count(*) FROM code_lexical WHERE project = ?"
                f" AND file_path IN ({','.join('?' * len(chunk))}) GROUP BY file_path",
                [project, *chunk],
            ).fetchall()
            out |= {(project, str(row[0])): int(row[1]) for row in rows}
    return out


async def unit_counts(metadata: MetadataStore, project: str | None = None) -> dict[str, tuple[int, int]]:
    """Per project: (units, units still waiting for their vector)."""
    where, params = ("WHERE project = ?", (project,)) if project is not None else ("", ())
    rows = await metadata.fetchall(
        f"SELECT project, count(*), sum(embedded = 0) FROM code_lexical {where} GROUP BY project", params
    )
    return {str(row[0]): (int(row[1]), int(row[2] or 0)) for row in rows}


async def waiting(metadata: MetadataStore, project: str | None = None) -> int:
    """Units still waiting for their vector, in ``project`` or in all (cheap: a partial index)."""
    where, params = (" AND project = ?", (project,)) if project is not None else ("", ())
    row = await metadata.fetchone(f"SELECT count(*) FROM code_lexical WHERE embedded = 0{where}", params)
    return int(row[0]) if row is not None else 0
