"""The lexical side of search: BM25 over each project's FTS5 index of the unit store's rows.

Dense vectors find code by meaning but miss the exact words a developer types (an error code, a
header name, a half-remembered identifier); BM25 finds those. Each project's index answers with
its own statistics, so a project ranks the same whatever else is indexed; a search without a
project asks every index and merges the lists by score.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from learning_memory.worker.code.index import unit_store
from learning_memory.worker.code.index.unit_store import ROWS
from learning_memory.worker.metadata.store import MetadataStore


def match_expression(terms: Sequence[str]) -> str:
    # Each term quoted: terms are [a-z0-9]+ already, so quoting only guards FTS5 keywords (OR, NOT).
    return " OR ".join(f'"{term}"' for term in terms)


def _search_index(
    conn: sqlite3.Connection, table: str, match: str, language: str | None, limit: int
) -> list[tuple[float, str]]:
    # Ranked inside the index first and joined to the rows after: joining before the ORDER BY
    # looks up the row of every match, and a question's common words match most of a project.
    if language is None:
        sql = (
            f"SELECT s, l.point_id FROM (SELECT rowid AS r, bm25({table}) AS s FROM {table}"
            f" WHERE {table} MATCH ? ORDER BY s LIMIT ?) JOIN {ROWS} AS l ON l.rowid = r ORDER BY s"
        )
        params: list[object] = [match, limit]
    else:
        sql = (
            f"SELECT bm25({table}) AS s, l.point_id FROM {table}"
            f" JOIN {ROWS} AS l ON l.rowid = {table}.rowid"
            f" WHERE {table} MATCH ? AND l.language = ? ORDER BY s LIMIT ?"
        )
        params = [match, language, limit]
    return [(float(score), str(point)) for score, point in conn.execute(sql, params).fetchall()]


async def search(
    metadata: MetadataStore,
    terms: Sequence[str],
    *,
    limit: int,
    project: str | None = None,
    language: str | None = None,
) -> list[str]:
    """Point ids of the best BM25 matches for ``terms`` (a query's :attr:`~.query.Query.terms`),
    best first."""
    if not terms:
        return []
    match = match_expression(terms)

    def run(conn: sqlite3.Connection) -> list[str]:
        hits: list[tuple[float, str]] = []
        for table in unit_store.keyword_indexes(conn, project):
            hits += _search_index(conn, table, match, language, limit)
        hits.sort()  # bm25() is lower for better matches
        return [point for _, point in hits[:limit]]

    await unit_store.ensure_keyword_indexes(metadata, project)
    return await metadata.read(run)
