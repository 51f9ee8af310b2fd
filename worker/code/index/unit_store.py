"""The unit store: one keyword row per code unit in SQLite, and each project's FTS5 index over them.

A row (table ``code_lexical``) holds a unit's point id, project, language, file path, name, its
:func:`~.units.keyword_text`, its payload (JSON) and whether its vector is written yet. The rows
are what makes a project searchable before any vector exists, what the vector filler works
through (the units still ``waiting``), what search reads payloads and per-file unit counts from,
and what the project listing counts. They live in the metadata store beside the file hashes they
must agree with, and behave the same whichever vector engine is configured.

Each project has an FTS5 index of its own (``code_fts_<n>``, listed in ``code_fts_tables``), all
reading their text from the rows: BM25's statistics (how rare a word is, how long a unit is on
average) are then the project's, so a project's ranking does not move when another is indexed.
FTS5's Porter tokenizer splits snake_case by itself and lets "retrying" find "retry".

What the search room reads (``worker.code.search``): :data:`ROWS` and its columns, the index
tables :func:`keyword_indexes` names (made for rows written before indexes were per project by
:func:`ensure_keyword_indexes`), :func:`payloads` and :func:`file_sizes`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from learning_memory.shared.contracts.code import CodeUnit
from learning_memory.worker.code.index.units import UnitPayload, embedding_text_of, keyword_text, unit_payload
from learning_memory.worker.metadata.store import MetadataStore

# The rows' table: point_id, project, language, file_path, text (keyword_text), name, payload
# (JSON, NULL for rows written before payloads were kept), embedded (0 while the vector waits).
ROWS = "code_lexical"
# SQLite's historical limit is 999 host parameters per statement.
_PARAMS_PER_STATEMENT = 500


@dataclass(frozen=True)
class WaitingUnit:
    """A unit written without its vector yet (see ``worker.code.index.filler``)."""

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


# A unit's row as written: point id, language, file path, text, name, payload (JSON).
Row = tuple[str, str, str, str, str, str]


def rows_for(units: Iterable[CodeUnit]) -> list[Row]:
    return [
        (
            unit.id,
            unit.language,
            unit.file_path,
            keyword_text(unit),
            unit.name,
            json.dumps(unit_payload(unit), separators=(",", ":")),
        )
        for unit in units
    ]


# --- writes ----------------------------------------------------------------------------------


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
    for start in range(0, len(ids), _PARAMS_PER_STATEMENT):
        chunk = ids[start : start + _PARAMS_PER_STATEMENT]
        _delete_rows(conn, f"point_id IN ({','.join('?' * len(chunk))})", chunk)
    for point, language, file_path, text, name, payload in rows:
        cursor = conn.execute(
            f"INSERT INTO {ROWS} (point_id, project, language, file_path, text, name, payload, embedded)"
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
    conn.execute(f"DELETE FROM {ROWS} WHERE project = ?", (project,))


def _delete_rows(conn: sqlite3.Connection, where: str, params: Sequence[object]) -> None:
    """Delete the matching rows and their entries in their projects' indexes (an external-content
    index forgets a row only when told its old text)."""
    found = conn.execute(f"SELECT rowid, project, text FROM {ROWS} WHERE {where}", params).fetchall()
    tables = {project: _index_of(conn, project, create=False) for project in {row[1] for row in found}}
    for rowid, project, text in found:
        table = tables[project]
        if table is not None:
            conn.execute(f"INSERT INTO {table} ({table}, rowid, text) VALUES ('delete', ?, ?)", (rowid, text))
    conn.executemany(f"DELETE FROM {ROWS} WHERE rowid = ?", [(row[0],) for row in found])


def _delete_files(conn: sqlite3.Connection, project: str, paths: Sequence[str]) -> None:
    for start in range(0, len(paths), _PARAMS_PER_STATEMENT):
        chunk = list(paths[start : start + _PARAMS_PER_STATEMENT])
        marks = ",".join("?" * len(chunk))
        _delete_rows(conn, f"project = ? AND file_path IN ({marks})", [project, *chunk])


def embedded_rows(
    conn: sqlite3.Connection, project: str, paths: Sequence[str] | None
) -> list[tuple[str, str]]:
    """(point id, text) of the rows of ``paths`` (every path when None) in ``project`` whose vector
    is written: what :func:`keep_embedded` needs after their files' rows are replaced."""
    if paths is None:
        sql = f"SELECT point_id, text FROM {ROWS} WHERE project = ? AND embedded = 1"
        return [(str(row[0]), str(row[1])) for row in conn.execute(sql, (project,))]
    found: list[tuple[str, str]] = []
    for start in range(0, len(paths), _PARAMS_PER_STATEMENT):
        chunk = list(paths[start : start + _PARAMS_PER_STATEMENT])
        found += [
            (str(row[0]), str(row[1]))
            for row in conn.execute(
                f"SELECT point_id, text FROM {ROWS} WHERE project = ? AND embedded = 1"
                f" AND file_path IN ({','.join('?' * len(chunk))})",
                [project, *chunk],
            )
        ]
    return found


def keep_embedded(conn: sqlite3.Connection, project: str, embedded: Sequence[tuple[str, str]]) -> None:
    """Rows written again with the same id and text keep the vector their point already has."""
    conn.executemany(
        f"UPDATE {ROWS} SET embedded = 1 WHERE point_id = ? AND text = ? AND project = ?",
        [(point, text, project) for point, text in embedded],
    )


# --- the keyword indexes -------------------------------------------------------------------------


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
        f"text, content = '{ROWS}', content_rowid = 'rowid', tokenize = 'porter unicode61')"
    )
    conn.execute(
        f"INSERT INTO {table} (rowid, text) SELECT rowid, text FROM {ROWS} WHERE project = ?", (project,)
    )
    return table


def keyword_indexes(conn: sqlite3.Connection, project: str | None) -> list[str]:
    """The FTS5 tables to search for ``project`` (every project's when None), each indexing the
    ``text`` of its project's rows by their ``rowid``."""
    if project is None:
        projects = [str(row[0]) for row in conn.execute("SELECT project FROM code_fts_tables")]
    else:
        projects = [project]
    return [table for name in projects if (table := _index_of(conn, name, create=False)) is not None]


async def ensure_keyword_indexes(metadata: MetadataStore, project: str | None) -> None:
    """Rows written before indexes were per project have none yet: built before they are searched."""
    if project is not None:
        if await metadata.fetchone("SELECT 1 FROM code_fts_tables WHERE project = ?", (project,)):
            return
        sql = f"SELECT DISTINCT project FROM {ROWS} WHERE project = ?"
        params: tuple[object, ...] = (project,)
    else:
        # Each distinct project found by a jump through the (project, name) index, not a scan of
        # every row: this runs before every search across projects.
        sql = (
            f"WITH RECURSIVE p(name) AS (SELECT min(project) FROM {ROWS} UNION ALL"
            f" SELECT (SELECT min(project) FROM {ROWS} WHERE project > p.name) FROM p"
            " WHERE p.name IS NOT NULL)"
            " SELECT name FROM p WHERE name IS NOT NULL"
            " AND name NOT IN (SELECT project FROM code_fts_tables)"
        )
        params = ()
    missing = [str(row[0]) for row in await metadata.fetchall(sql, params)]
    if missing:
        await metadata.transaction(lambda conn: [_index_of(conn, name, create=True) for name in missing])


# --- what search reads --------------------------------------------------------------------------


async def payloads(
    metadata: MetadataStore, point_ids: Sequence[str], *, with_file_sizes: bool = False
) -> tuple[dict[str, UnitPayload], dict[tuple[str, str], int]]:
    """The payloads kept with the rows of ``point_ids`` (rows older than payloads have none) and,
    ``with_file_sizes``, :func:`file_sizes` of their files, in the same read: both lie on every
    search's path."""

    def run(conn: sqlite3.Connection) -> tuple[dict[str, UnitPayload], dict[tuple[str, str], int]]:
        found = _payloads_in(conn, point_ids)
        sizes = _file_sizes_in(conn, (unit.file for unit in found.values())) if with_file_sizes else {}
        return found, sizes

    return await metadata.read(run) if point_ids else ({}, {})


def _payloads_in(conn: sqlite3.Connection, point_ids: Sequence[str]) -> dict[str, UnitPayload]:
    out: dict[str, UnitPayload] = {}
    for start in range(0, len(point_ids), _PARAMS_PER_STATEMENT):
        chunk = list(point_ids[start : start + _PARAMS_PER_STATEMENT])
        rows = conn.execute(
            f"SELECT point_id, payload FROM {ROWS} WHERE point_id IN ({','.join('?' * len(chunk))})"
            " AND payload IS NOT NULL",
            chunk,
        ).fetchall()
        out |= {str(row[0]): UnitPayload.model_validate_json(row[1]) for row in rows}
    return out


async def file_sizes(metadata: MetadataStore, files: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """Units per (project, file path), for the files given."""
    wanted = list(files)
    return await metadata.read(lambda conn: _file_sizes_in(conn, wanted)) if wanted else {}


def _file_sizes_in(conn: sqlite3.Connection, files: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    wanted = sorted(set(files))
    out: dict[tuple[str, str], int] = {}
    for project in sorted({project for project, _ in wanted}):
        paths = [path for each, path in wanted if each == project]
        for start in range(0, len(paths), _PARAMS_PER_STATEMENT):
            chunk = paths[start : start + _PARAMS_PER_STATEMENT]
            rows = conn.execute(
                f"SELECT file_path, count(*) FROM {ROWS} WHERE project = ?"
                f" AND file_path IN ({','.join('?' * len(chunk))}) GROUP BY file_path",
                [project, *chunk],
            ).fetchall()
            out |= {(project, str(row[0])): int(row[1]) for row in rows}
    return out


# --- units waiting for their vector, and counts -------------------------------------------------


async def pending(metadata: MetadataStore, limit: int) -> list[WaitingUnit]:
    """Units still without their vector, oldest rows first."""
    rows = await metadata.fetchall(
        f"SELECT rowid, point_id, project, text, payload FROM {ROWS} WHERE embedded = 0"
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
        f"SELECT rowid, point_id, text, payload FROM {ROWS} WHERE rowid IN ({marks}) AND embedded = 0",
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
        await metadata.execute(f"UPDATE {ROWS} SET embedded = 1 WHERE rowid IN ({marks})", list(rowids))


async def unit_counts(metadata: MetadataStore, project: str | None = None) -> dict[str, tuple[int, int]]:
    """Per project: (units, units still waiting for their vector)."""
    where, params = ("WHERE project = ?", (project,)) if project is not None else ("", ())
    rows = await metadata.fetchall(
        f"SELECT project, count(*), sum(embedded = 0) FROM {ROWS} {where} GROUP BY project", params
    )
    return {str(row[0]): (int(row[1]), int(row[2] or 0)) for row in rows}


async def waiting(metadata: MetadataStore, project: str | None = None) -> int:
    """Units still waiting for their vector, in ``project`` or in all (cheap: a partial index)."""
    where, params = (" AND project = ?", (project,)) if project is not None else ("", ())
    row = await metadata.fetchone(f"SELECT count(*) FROM {ROWS} WHERE embedded = 0{where}", params)
    return int(row[0]) if row is not None else 0
