"""What a query names, and the units it names gain.

A bare or qualified identifier asks for the unit that *defines* that name: a definition with
exactly that name (and its case) comes first, a class over a function of the same name when the
name is capitalised, and a file named after it counts too. A question is helped when its words
name the file or folder that holds the answer (in proportion to the share of its words that do,
so a short topic gains most), when it spells a unit's name as code, or a type's name in words.
"""

from __future__ import annotations

from collections.abc import Mapping

from learning_memory.worker.code.index.units import UnitPayload
from learning_memory.worker.code.search.query import SEPARATORS, Query
from learning_memory.worker.code.search.ranking.paths import folded, path_share, path_words, stem, telling
from learning_memory.worker.code.search.ranking.weights import Weights


def symbol_boost(symbol: str, query: Query, unit: UnitPayload, weights: Weights, *, defined: bool) -> float:
    """For a query naming ``symbol``: what ``unit`` gains as its definition, or as the file named
    after it. ``defined``: some unit of the project has that name (else the file is the definition)."""
    add = 0.0
    named = unit.name.lower() == symbol.lower()
    if unit.name == symbol:
        add += weights.exact_definition
    elif named:
        add += weights.folded_definition
    if named and query.qualifier:
        qualified = [p.lower() for p in SEPARATORS.split(unit.qualified_name) if p]
        path = path_words(unit.file_path)
        if all(q.lower() in qualified or q.lower() in path for q in query.qualifier):
            add += weights.qualified_definition
    if named and symbol[:1].isupper() and unit.unit_type == "class":
        add += weights.type_over_function
    if folded(stem(unit.file_path)) == folded(symbol):
        add += weights.file_named_after if defined else weights.file_named_after_undefined
    return add


def question_boost(
    query: Query, unit: UnitPayload, weights: Weights, *, topical: float, defining: Mapping[str, int]
) -> float:
    """For a question: what ``unit`` gains when its file or folder is named by the question's
    words, when it is defined under a name the question spells as code (or its file is), or under
    a name the question spells in words. ``topical``: how much the question is about a part of
    the project rather than one function; ``defining``: how many candidates define each name."""
    add = 0.0
    if query.words and weights.path_word:
        add += weights.path_word * path_share(telling(query.words, unit.project), unit.file_path)
    if unit.name in query.names:
        add += weights.embedded_definition / max(1, defining.get(unit.name, 1))
    elif stem(unit.file_path) in query.names:
        add += weights.embedded_file
    elif query.phrases and unit.unit_type != "module":
        if unit.name.lower() in query.phrases:
            add += weights.phrase_definition
            if unit.unit_type == "class":
                add += weights.phrase_type * topical**2
        elif folded(stem(unit.file_path)) in query.phrases:
            add += weights.phrase_file + weights.phrase_type_file * topical**2
    return add
