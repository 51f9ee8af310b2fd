"""Units inside other units: a question's answer is the member, not what holds it."""

from __future__ import annotations

from collections.abc import Mapping

from learning_memory.worker.code.index.units import UnitPayload
from learning_memory.worker.code.search.ranking.weights import Weights


def _span(unit: UnitPayload) -> tuple[int, int]:
    return unit.start_line, unit.end_line


def members_first(
    relevance: dict[str, float], units: Mapping[str, UnitPayload], weights: Weights
) -> dict[str, float]:
    """For a question: a class found with members of it gives its place to its best member; a
    unit nested in another found function is demoted. Units only trade places within a file, so
    where a file first appears stays put."""
    by_file: dict[str, list[str]] = {}
    for pid, unit in units.items():
        # A module unit spans its file's loose code, around the units: it holds none of them.
        if unit.unit_type != "module":
            by_file.setdefault(unit.file_path, []).append(pid)
    out = dict(relevance)
    for pids in by_file.values():
        if len(pids) < 2:
            continue
        nested: set[str] = set()
        for outer in pids:
            start, end = _span(units[outer])
            inside = [
                pid
                for pid in pids
                if pid != outer
                and start <= _span(units[pid])[0]
                and _span(units[pid])[1] <= end
                and _span(units[pid]) != (start, end)
            ]
            if not inside:
                continue
            if units[outer].unit_type == "class":
                member = max(inside, key=lambda pid: relevance[pid])
                if relevance[outer] > relevance[member]:
                    out[member] = max(out[member], relevance[outer])
                    out[outer] = relevance[member] * weights.class_after_member
            else:
                share = weights.nested_outer_share
                nested.update(pid for pid in inside if relevance[pid] * share <= relevance[outer])
        for pid in nested:
            out[pid] *= weights.nested_factor
    return out
