"""Outcome feedback: whether what the agent was shown helped.

Every item a hook puts in front of the agent (the SessionStart brief, a prompt's context, a fix
hint, a file's lessons) is logged with its session; the miner ties it to the episode that
followed, and the fix index keeps one row per (item, session, episode) in its ``feedback`` table:
helped when that episode went green, not helped when it stayed red or was given up after edits.
The counts are kept there rather than on the stored records because those records are written
again by other paths (an auto experience each time its session is mined, a value each time it is
clustered): counts copied into them would be lost on the next write, while the table is replaced
per session like the episodes and is only ever read by id.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

# Pseudo-outcomes that an item is presumed to have helped in, before any real one is known: one
# red episode has many causes (the hint was right and not followed, the failure was another), so
# a single unlucky outcome must only nudge an item down.
PRIOR_HELPED = 2.0
# The lowest factor: an item that never helped still ranks on its relevance, only below equally
# relevant ones (the code changes, and what did not help last month may help now).
FLOOR = 0.7
_MAX_IDS = 500  # SQLite's bound on host parameters is far above this; larger lists are chunked


@dataclass(frozen=True)
class Outcomes:
    helped: int = 0
    not_helped: int = 0


NONE = Outcomes()


def feedback_factor(outcomes: Outcomes) -> float:
    """What an item's score is multiplied by: 1.0 without outcomes, then between FLOOR and 1.0 by
    its smoothed share of helped outcomes (never above 1.0: an item that helped keeps the rank
    its relevance gives it, and new items are not pushed below old ones for being new)."""
    helped, total = outcomes.helped, outcomes.helped + outcomes.not_helped
    share = (PRIOR_HELPED + helped) / (PRIOR_HELPED + total)
    return FLOOR + (1.0 - FLOOR) * share


def count_outcomes(conn: sqlite3.Connection, items: Sequence[str]) -> dict[str, Outcomes]:
    """Outcomes of the items that have any, by item."""
    wanted = list(dict.fromkeys(items))
    found: dict[str, Outcomes] = {}
    for start in range(0, len(wanted), _MAX_IDS):
        chunk = wanted[start : start + _MAX_IDS]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT item, SUM(helped), SUM(1 - helped) FROM feedback WHERE item IN ({marks}) GROUP BY item",
            chunk,
        ).fetchall()
        found.update({row[0]: Outcomes(int(row[1]), int(row[2])) for row in rows})
    return found
