"""A value's weight as it ages: what no experience has borne out for a long time counts for less.

The clock is the latest supporting evidence, not the value's creation: the experiences of its
cluster when it was stored, then any experience stored later that falls within the value's own
validation threshold of it (``note_support``). The weight halves every half-life; a value is
never deleted for its age, only ranked lower (``list_values``, the brief, assembled context).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

from learning_memory.shared.contracts.learning import VALUES_COLLECTION, ValueRecord
from learning_memory.worker.vectors.base import Filter, MatchValue, PointData, Vector, VectorStore

SECONDS_PER_DAY = 86_400.0
CANDIDATES = 5  # values an experience is compared with: the nearest few
MAX_SUPPORTERS = 500  # experiences remembered per value, so none is counted twice


def decayed_weight(age_days: float, half_life_days: float) -> float:
    """1.0 at age 0, halved each ``half_life_days``; clamped to [0, 1]."""
    if age_days <= 0:
        return 1.0
    return min(1.0, max(0.0, float(0.5 ** (age_days / half_life_days))))


def evidence_ts(payload: dict[str, Any]) -> float:
    """When the value was last borne out (a value stored before this was tracked: its creation)."""
    for key in ("evidence_ts", "created_ts"):
        value = payload.get(key)
        if isinstance(value, int | float):
            return float(value)
    return 0.0


def age_support_weight(
    payload: dict[str, Any], half_life_days: float, now: datetime | None = None
) -> tuple[float, int, float]:
    now_ts = (now or datetime.now(UTC)).timestamp()
    age = max(0.0, (now_ts - evidence_ts(payload)) / SECONDS_PER_DAY)
    support = payload.get("support")
    if not isinstance(support, int):
        support = int(payload.get("cluster_size") or 0)
    return age, support, decayed_weight(age, half_life_days)


def listed_value(
    record_id: str, payload: dict[str, Any], half_life_days: float, *, members: bool = False
) -> ValueRecord:
    """A stored value as list_values shows it: with its age, support and weight now. The member
    ids stay in the store unless ``members`` (the tool does not list them; the web view does)."""
    age, support, weight = age_support_weight(payload, half_life_days)
    fields = ValueRecord.model_fields.keys() - {"member_ghap_ids", "age_days", "support", "weight"}
    return ValueRecord(
        **{key: value for key, value in payload.items() if key in fields},
        id=record_id,
        member_ghap_ids=_ids(payload, "member_ghap_ids") if members else [],
        age_days=round(age, 2),
        support=support,
        weight=round(weight, 3),  # steady for minutes: a listing read twice says the same
    )


def _ids(payload: dict[str, Any], key: str) -> list[str]:
    try:
        found = json.loads(str(payload.get(key) or "[]"))
    except ValueError:
        return []
    return [str(item) for item in found] if isinstance(found, list) else []


async def note_support(
    store: VectorStore, axis: str, ghap_id: str, vector: Vector, at: datetime
) -> list[str]:
    """An experience just stored on ``axis`` bears out the values it lies within the validation
    threshold of (distance between unit vectors, the measure the threshold is in): each one's
    clock restarts at ``at`` (the experience's latest sighting), and its support grows by one
    unless the experience already counted. The ids of the values it bore out."""
    if not await store.collection_exists(VALUES_COLLECTION):
        return []
    hits = await store.search(
        VALUES_COLLECTION, vector, limit=CANDIDATES, filter=Filter((MatchValue("axis", axis),))
    )
    supported: list[str] = []
    for hit in hits:
        data = hit.payload
        threshold = data.get("threshold_distance")
        distance = math.sqrt(max(0.0, 2.0 - 2.0 * hit.score))  # cosine similarity of unit vectors
        if not isinstance(threshold, int | float) or distance > threshold:
            continue
        supporters = _ids(data, "supporters")
        counted = ghap_id in supporters or ghap_id in _ids(data, "member_ghap_ids")
        if counted and at.timestamp() <= evidence_ts(data):
            continue  # nothing new: mined or stored again
        records = await store.get(VALUES_COLLECTION, [hit.id], with_vectors=True)
        if not records or records[0].vector is None:
            continue
        _, support, _ = age_support_weight(data, 1.0)
        payload = {
            **records[0].payload,
            "support": support if counted else support + 1,
            "evidence_ts": max(evidence_ts(data), at.timestamp()),
            "supporters": json.dumps(supporters if counted else [*supporters, ghap_id][-MAX_SUPPORTERS:]),
        }
        await store.upsert(VALUES_COLLECTION, [PointData(hit.id, records[0].vector, payload)])
        supported.append(hit.id)
    return supported
