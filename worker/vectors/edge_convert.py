"""Between our vector-store types and qdrant-edge's: ids, vectors, records and filters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import qdrant_edge as qe

from learning_memory.shared.errors import StorageError
from learning_memory.worker.vectors import base
from learning_memory.worker.vectors.base import Filter, Record, Vector


def matrix(vectors: Sequence[Vector], name: str, dimension: int) -> npt.NDArray[np.float32]:
    """Vectors as one float32 array, checked against the collection's dimension."""
    try:
        array = np.ascontiguousarray(vectors, dtype=np.float32)
    except (ValueError, TypeError) as exc:
        raise StorageError(f"Collection '{name}' takes {dimension}-d vectors: {exc}") from exc
    if array.shape != (len(vectors), dimension):
        raise StorageError(f"'{name}' takes {dimension}-dimensional vectors, not {array.shape[1:]}")
    return array


def to_record(point: qe.Record | qe.ScoredPoint, with_vectors: bool) -> Record:
    vector: Any = point.vector if with_vectors else None
    if isinstance(vector, dict):  # named vectors: ours is the default one, ""
        vector = vector.get("")
    floats = None if vector is None else [float(x) for x in vector]
    return Record(id=str(point.id), payload=dict(point.payload or {}), vector=floats)


def edge_filter(flt: Filter | None) -> qe.Filter | None:
    return qe.Filter(must=[edge_condition(c) for c in flt.must]) if flt is not None and flt.must else None


def edge_condition(cond: base.Condition) -> qe.FieldCondition:
    if isinstance(cond, base.MatchValue):
        # The binding turns a Python bool into the integer 1/0 (see the module docstring).
        value = cast(bool, np.bool_(cond.value)) if isinstance(cond.value, bool) else cond.value
        return qe.FieldCondition(cond.key, match=qe.MatchValue(value))
    if isinstance(cond, base.MatchAny):
        values = list(cond.values)
        if not (all(isinstance(v, str) for v in values) or all(type(v) is int for v in values)):
            raise StorageError(f"MatchAny on '{cond.key}' takes only strings or only integers: {values!r}")
        return qe.FieldCondition(cond.key, match=qe.MatchAny(cast(list[str], values)))
    bounds = qe.RangeFloat(gte=cond.gte, gt=cond.gt, lte=cond.lte, lt=cond.lt)
    return qe.FieldCondition(cond.key, range=bounds)
