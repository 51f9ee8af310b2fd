"""What search_code does with the fused candidates before it answers: code-aware reordering.

Fusion knows only that a unit matched; a developer's query says more. Each candidate's relevance
becomes ``(fused relevance + boosts) * penalties`` (:mod:`.boosts`, :mod:`.penalties`); for a
question, a class found with its members gives its place to the best of them (:mod:`.members`);
then hits are spread over files (:mod:`.files`). Long questions ask for one function rather than
a part of the project, so the file-level rules weigh less for them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from learning_memory.worker.code.index.units import UnitPayload
from learning_memory.worker.code.search.candidate import Candidate
from learning_memory.worker.code.search.query import Query
from learning_memory.worker.code.search.ranking.boosts import question_boost, symbol_boost
from learning_memory.worker.code.search.ranking.files import centrality, spread
from learning_memory.worker.code.search.ranking.members import members_first
from learning_memory.worker.code.search.ranking.penalties import penalty
from learning_memory.worker.code.search.ranking.weights import DEFAULT, Weights


def adjustment(
    query: Query,
    unit: UnitPayload,
    weights: Weights = DEFAULT,
    *,
    defined: bool = True,
    topical: float = 1.0,
    defining: Mapping[str, int] | None = None,
) -> tuple[float, float]:
    """(what to add to the unit's fused relevance, what to multiply it by); ``defined`` says
    whether any unit of the project has the queried name, ``topical`` how much a question is
    about a part of the project rather than one function (1 for a short one, less as it grows),
    ``defining`` how many candidates define each name the question spells as code."""
    if query.symbol is not None:
        add = symbol_boost(query.symbol, query, unit, weights, defined=defined)
    else:
        add = question_boost(query, unit, weights, topical=topical, defining=defining or {})
    return add, penalty(query, unit, weights)


def topical_share(query: Query, weights: Weights = DEFAULT) -> float:
    """1 for a symbol or a short question, (specific_words / content words)**2 for a longer one."""
    return min(1.0, weights.specific_words / len(query.words)) ** 2 if query.words else 1.0


def rerank(
    query: Query,
    candidates: Sequence[Candidate],
    weights: Weights = DEFAULT,
    *,
    defined: bool = True,
    defining_modules: frozenset[str] = frozenset(),
    file_sizes: Mapping[tuple[str, str], int] | None = None,
) -> list[Candidate]:
    """``candidates`` (fused relevance in 0..1) best first, with their new relevance.
    ``defining_modules``: the module units that bind a symbol query's name at their top level, or
    re-export it from elsewhere, and so stand for its definition. ``file_sizes``: units per
    (project, file path) of the candidates."""
    topical = topical_share(query, weights)
    central = centrality(candidates, file_sizes or {}) if query.symbol is None else {}
    relevance: dict[str, float] = {}
    units: dict[str, UnitPayload] = {}
    defining = Counter(c.unit.name for c in candidates if c.unit.name in query.names)
    for c in candidates:
        add, factor = adjustment(query, c.unit, weights, defined=defined, topical=topical, defining=defining)
        if c.point_id in defining_modules:
            add += weights.defining_module
        add += weights.central_file * topical * central.get(c.point_id, 0.0)
        relevance[c.point_id] = (c.score + add) * factor
        units[c.point_id] = c.unit
    if query.symbol is None:
        relevance = members_first(relevance, units, weights)
    ranked = sorted(relevance.items(), key=lambda item: item[1], reverse=True)
    repeat = weights.file_repeat * topical
    if ranked and repeat:
        ranked = spread(
            ranked, {pid: unit.file_path for pid, unit in units.items()}, repeat * max(ranked[0][1], 0.0)
        )
    by_id = {c.point_id: c for c in candidates}
    return [replace(by_id[pid], score=score) for pid, score in ranked]
