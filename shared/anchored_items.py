"""Memories and values anchored to files, in the fix index's file: written by the worker when
one is stored, deleted or found stale; read by the hooks when the session reads or edits one of
those files (the fixes that edited a file are in :mod:`.fix_index`).

An item is a context id (``mem:<id>``, ``val:<id>``); ``state`` is what became of its code since
(None: as it was; ``changed``; ``gone``: left out of what the hooks show).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from learning_memory.shared.contracts.experiences import Anchor
from learning_memory.shared.fix_store import connect, create_schema
from learning_memory.shared.fix_writes import clean_path


@dataclass(frozen=True)
class AnchoredItem:
    item: str
    text: str
    symbols: tuple[str, ...]
    created_at: datetime
    state: str | None


def put_item(path: Path, project: str, item: str, anchors: Sequence[Anchor], text: str, at: datetime) -> None:
    """Anchor ``item`` to the files of ``anchors`` (what it was anchored to before is replaced:
    storing again is idempotent)."""
    by_file: dict[str, list[str]] = {}
    for anchor in anchors:
        symbols = by_file.setdefault(clean_path(anchor.file), [])
        if anchor.symbol and anchor.symbol not in symbols:
            symbols.append(anchor.symbol)
    rows = [
        (item, project, file, "\n".join(symbols), text, at.timestamp()) for file, symbols in by_file.items()
    ]
    with connect(path) as conn:
        create_schema(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("DELETE FROM anchored WHERE item = ?", (item,))
            conn.executemany(
                "INSERT INTO anchored (item, project, file, symbols, text, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def drop_items(path: Path, items: Iterable[str]) -> None:
    wanted = [(item,) for item in items]
    if not wanted or not path.exists():
        return
    with connect(path) as conn:
        create_schema(conn)
        conn.executemany("DELETE FROM anchored WHERE item = ?", wanted)


def mark_items(path: Path, states: dict[str, str | None]) -> None:
    """Note what became of items' code (None: as it was)."""
    if not states or not path.exists():
        return
    with connect(path) as conn:
        create_schema(conn)
        conn.executemany("UPDATE anchored SET state = ? WHERE item = ?", [(s, i) for i, s in states.items()])


def items_for_file(conn: sqlite3.Connection, project: str, file: str, limit: int) -> list[AnchoredItem]:
    """The items anchored to ``file`` whose code is not gone, newest first (a reader's query)."""
    try:
        rows = conn.execute(
            "SELECT item, text, symbols, created_at, state FROM anchored WHERE project = ? AND file = ? "
            "AND (state IS NULL OR state != 'gone') ORDER BY created_at DESC LIMIT ?",
            (project, clean_path(file), max(limit, 0)),
        ).fetchall()
    except sqlite3.OperationalError:  # a file written before the table existed
        return []
    return [
        AnchoredItem(
            item=row[0],
            text=row[1],
            symbols=tuple(filter(None, row[2].split("\n"))),
            created_at=datetime.fromtimestamp(row[3], UTC),
            state=row[4],
        )
        for row in rows
    ]
