"""tree-sitter grammars, loaded on first use of their language, and a parser per thread.

Grammars come from the per-language wheels (``tree-sitter-python``, ...), never from
``tree-sitter-language-pack``, which downloads grammars at run time and fails offline. The wheels
are imported on first use of their language, so the server never pays for them.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass

from tree_sitter import Language as TSLanguage
from tree_sitter import Parser

from learning_memory.shared.contracts.code import Language
from learning_memory.worker.code.index.language_spec import LangSpec
from learning_memory.worker.code.index.languages import LANGUAGE_SPECS

# Roles of node kinds in the parser's walk.
FUNCTION, CLASS, DECISION, CASE, LOGICAL = 1, 2, 3, 4, 5


@dataclass(frozen=True)
class Grammar:
    language: TSLanguage
    roles: dict[int, int]  # node kind id -> role: one dict lookup per node in the walk


_GRAMMARS: dict[Language, Grammar] = {}
_GRAMMARS_LOCK = threading.Lock()
# A Parser is not safe to share between threads (callers parse in a thread pool); a Language is.
_LOCAL = threading.local()


def grammar(language: Language) -> Grammar:
    grammar = _GRAMMARS.get(language)
    if grammar is None:
        with _GRAMMARS_LOCK:
            grammar = _GRAMMARS.get(language)
            if grammar is None:
                grammar = _GRAMMARS[language] = _load(LANGUAGE_SPECS[language])
    return grammar


def _load(spec: LangSpec) -> Grammar:
    module = importlib.import_module(spec.module)
    ts_language = TSLanguage(getattr(module, spec.loader)())
    by_name: dict[str, int] = {}
    for role, names in (
        (DECISION, spec.decisions),
        (CASE, spec.cases),
        (LOGICAL, spec.logical),
        (CLASS, spec.classes),
        (FUNCTION, spec.functions),
    ):
        by_name.update(dict.fromkeys(names, role))
    roles: dict[int, int] = {}
    # Several kind ids can share a name (aliases), so map every id rather than one per name.
    for kind_id in range(ts_language.node_kind_count):
        name = ts_language.node_kind_for_id(kind_id)
        if name in by_name and ts_language.node_kind_is_named(kind_id):
            roles[kind_id] = by_name[name]
    return Grammar(ts_language, roles)


def parser_for(language: Language) -> Parser:
    parsers: dict[Language, Parser] | None = getattr(_LOCAL, "parsers", None)
    if parsers is None:
        parsers = _LOCAL.parsers = {}
    parser = parsers.get(language)
    if parser is None:
        parser = parsers[language] = Parser(grammar(language).language)
    return parser
