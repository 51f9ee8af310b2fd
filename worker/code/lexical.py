"""The lexical side of code search: BM25 over an SQLite FTS5 index of the units' text.

Dense vectors find code by meaning but miss the exact words a developer types (an error code,
a header name, a half-remembered identifier); BM25 finds those. Both run for every search_code
and are fused (see ``worker.code.search``). SQLite's FTS5 is already in every Python, lives in
the metadata store beside the file hashes it must agree with, and behaves the same whichever
vector engine is configured.

Identifiers are split into words on both sides (``calculateRetryDelay`` is indexed and queried as
``calculate retry delay`` too; ``snake_case`` splits by itself in FTS5's tokenizer), and the
Porter stemmer lets "retrying" find "retry".
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence

from shared.contracts.code import CodeUnit
from worker.code.units import embedding_text, split_identifier
from worker.metadata.store import MetadataStore

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
    words = {split_identifier(name) for name in _IDENTIFIER.findall(text) if _MIXED_CASE.search(name)}
    return " ".join(sorted(words))


def lexical_text(unit: CodeUnit) -> str:
    text = embedding_text(unit)
    return f"{unit.name}\n{text}\n{spelled_identifiers(text)}"


def query_terms(query: str) -> list[str]:
    """Distinct lower-case words of the query and of its identifiers' parts, stopwords dropped."""
    words = [word.lower() for word in _WORD.findall(query)]
    words += spelled_identifiers(query).split()
    terms = [word for word in dict.fromkeys(words) if word not in STOPWORDS]
    return terms[:MAX_QUERY_TERMS]


def match_expression(terms: Sequence[str]) -> str:
    # Each term quoted: terms are [a-z0-9]+ already, so quoting only guards FTS5 keywords (OR, NOT).
    return " OR ".join(f'"{term}"' for term in terms)


async def replace_files(
    metadata: MetadataStore, project: str, paths: Sequence[str], units: Iterable[CodeUnit]
) -> None:
    """The rows of ``paths`` in ``project`` become exactly ``units`` (one transaction)."""
    rows = [(unit.id, project, unit.language, unit.file_path, lexical_text(unit)) for unit in units]

    def replace(conn: sqlite3.Connection) -> None:
        _delete_files(conn, project, paths)
        conn.executemany(
            "INSERT OR REPLACE INTO code_lexical (point_id, project, language, file_path, text)"
            " VALUES (?, ?, ?, ?, ?)",
            rows,
        )

    await metadata.transaction(replace)


async def remove_files(metadata: MetadataStore, project: str, paths: Sequence[str]) -> None:
    await metadata.transaction(lambda conn: _delete_files(conn, project, paths))


async def remove_project(metadata: MetadataStore, project: str) -> None:
    await metadata.execute("DELETE FROM code_lexical WHERE project = ?", (project,))


def _delete_files(conn: sqlite3.Connection, project: str, paths: Sequence[str]) -> None:
    for start in range(0, len(paths), _PATHS_PER_DELETE):
        chunk = list(paths[start : start + _PATHS_PER_DELETE])
        marks = ",".join("?" * len(chunk))
        conn.execute(
            f"DELETE FROM code_lexical WHERE project = ? AND file_path IN ({marks})", [project, *chunk]
        )


async def search(
    metadata: MetadataStore,
    query: str,
    *,
    limit: int,
    project: str | None = None,
    language: str | None = None,
) -> list[str]:
    """Point ids of the best BM25 matches, best first."""
    terms = query_terms(query)
    if not terms:
        return []
    sql = (
        "SELECT l.point_id FROM code_fts JOIN code_lexical AS l ON l.rowid = code_fts.rowid"
        " WHERE code_fts MATCH ?"
    )
    params: list[object] = [match_expression(terms)]
    if project is not None:
        sql += " AND l.project = ?"
        params.append(project)
    if language is not None:
        sql += " AND l.language = ?"
        params.append(language)
    sql += " ORDER BY bm25(code_fts) LIMIT ?"
    params.append(limit)
    rows = await metadata.fetchall(sql, params)
    return [str(row[0]) for row in rows]
