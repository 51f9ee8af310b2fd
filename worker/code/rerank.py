"""What search_code does with the fused ranking before it answers: code-aware reordering.

Fusion knows only that a unit matched; a developer's query says more. A bare or qualified
identifier (``Session``, ``chi.Router``, ``FromRequest``) asks for the unit that *defines* that
name, so a definition with exactly that name (and its case) comes first, a class over a function
of the same name when the name is capitalised, and a file named after it counts too. A question
("how are cookies persisted between requests") is helped when its words name the file or folder
that holds the answer (in proportion to the share of its words that do, so a short topic gains
most), and its answer is a function rather than the class around it, whose text holds every
method and so matches anything they do: the class's best member found takes its place. Tests,
examples, documentation and vendored or generated code answer a query only when it asks for them
(a question about documentation generation asks for the doc/ folder), and code for another
operating system than this one (libuv's src/win on Linux) comes after this one's unless the query
names one. Each adjustment adds to the unit's fused relevance (0..1), so a strong match that no
rule touches keeps its place among the others.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from learning_memory.worker.code.lexical import STOPWORDS
from learning_memory.worker.code.units import file_of, split_identifier

_QUALIFIED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::|/|#)[A-Za-z_][A-Za-z0-9_]*)*$")
_SEPARATORS = re.compile(r"\.|::|/|#")
_WORD = re.compile(r"[a-z0-9]+")
_NON_CODE = re.compile(
    r"(^|/)[_.]?(tests?|testing|__tests__|spec|specs|examples?|samples?|demos?|docs?|benchmarks?|vendor|"
    r"third_party|generated|gen|mocks?|fixtures?)(/|$)|(^|/)(test_[^/]*|[^/]*_test\.\w+|[^/]*\.(test|spec)\.\w+|"
    r"[^/]*_spec\.\w+|conftest\.py)$",
    re.IGNORECASE,
)
# Code for one operating system. The one this server runs on is the one its user works on: code
# for another (libuv's src/win beside src/unix, cobra's *_windows.go) is rarely the answer.
_WINDOWS_CODE = re.compile(
    r"(^|/)(win|win32|win64|windows|mingw\w*)(/|$)|(^|/|_)(windows|win32)\.\w+$", re.IGNORECASE
)
_POSIX_CODE = re.compile(
    r"(^|/)(unix|posix|linux|darwin|macos|osx)(/|$)|(^|/|_)(unix|posix|linux|darwin)\.\w+$", re.IGNORECASE
)
_OTHER_PLATFORM = _POSIX_CODE if sys.platform == "win32" else _WINDOWS_CODE
_ASKS_PLATFORM = re.compile(
    r"\b(windows|win32|win64|mingw|msvc|unix|posix|linux|darwin|macos|osx|bsd|platforms?)\b", re.IGNORECASE
)
_ASKS_NON_CODE = re.compile(
    r"\b(tests?|testing|spec|examples?|samples?|demos?|mocks?|fixtures?|benchmarks?|docs?|documentation)\b"
)


@dataclass(frozen=True)
class Weights:
    exact_definition: float = 1.5  # name equals the symbol, case and all
    folded_definition: float = 0.3  # the same name in another case (session vs Session)
    qualified_definition: float = 0.3  # the query's qualifier matches the unit's too
    type_over_function: float = 0.2  # a capitalised symbol: the class rather than a function
    file_named_after: float = 0.3  # Router in router.go
    # When nothing in the project is called that, the file named after it is the definition
    # (a module: express's "response" is lib/response.js).
    file_named_after_undefined: float = 1.5
    # A question whose words name the file or its folder (cookies -> cookies.py, "completion" ->
    # shell_completion.go): this much times the share of the question's words that do. A short
    # question naming a topic gains most; a long one, whose answer is one function, little.
    path_word: float = 0.2
    non_code_factor: float = 0.6  # tests, examples, vendored code the query did not ask for
    other_platform_factor: float = 0.8  # code for another operating system, unless asked for
    # A question's answer is a function rather than the class around it (a class's text holds
    # all its methods, so it matches everything they do): the best member found takes the
    # class's place and the class comes next, at this share of the member's relevance.
    class_after_member: float = 0.9
    # A function nested in another found function (a closure, a local helper) is a detail of
    # it, when the outer one matches at least nested_outer_share as well: a misparsed container
    # (a C++ macro read as a function around a whole class) does not sink what it holds.
    nested_factor: float = 0.7
    nested_outer_share: float = 0.5
    # Hits are read by file: a file's second unit tells less than the first of another file, so
    # each unit of a file already above costs this share of the best unit's relevance. A long
    # question asks for one function, often beside its file's best match: the cost shrinks as
    # (specific_words / words)**2 for a question of more content words than that.
    file_repeat: float = 0.08
    specific_words: int = 4
    # A short topical question (blueprint registration, logger handler stack) asks about a part
    # of the project, whose home is usually the file holding most code on it: each unit gains
    # this much times log(units in its file) / log(units in the largest candidate file), scaled
    # down for long questions as file_repeat is.
    central_file: float = 0.05
    # A question naming code (res.redirect, fmt::format, FromRequestParts, basic_format_args,
    # "how Monad composes"): a unit defining that name, at a third of what a bare symbol query
    # gives it, and a file named after it (Monad.scala) half that. A name several candidates
    # define shares it out (cats defines flatMap in dozens of data types): it tells less.
    embedded_definition: float = 0.5
    embedded_file: float = 0.25
    # A question spelling a name as separate words (JSON object, type adapter factory): the
    # unit of that name (JsonObject, TypeAdapterFactory) and the file named after it, when the
    # project has one.
    phrase_definition: float = 0.1
    phrase_file: float = 0.05
    # A question rarely asks for a constructor: it stores what the class is made of, so it
    # shares the words of everything the class does. A symbol query names the class, not the
    # constructor that shares its name (fmt's ``formatter``).
    constructor_factor: float = 0.9
    # A short question naming a class in words is about that class ("JSON element hierarchy and
    # tree model": JsonElement): the class gains this much more, and the file named after it
    # phrase_type_file, both times the square of the question's topical share (below), so a long
    # question, which asks for one function, barely moves (connection pool: ConnectionPool).
    phrase_type: float = 1.5
    phrase_type_file: float = 0.3


DEFAULT = Weights()


@dataclass(frozen=True)
class Query:
    text: str
    symbol: str | None  # the identifier asked for, if the query is one
    qualifier: tuple[str, ...]  # what stands before it (chi.Router: ("chi",))
    words: frozenset[str]  # a question's content words, for matching paths
    asks_non_code: bool
    names: frozenset[str] = frozenset()  # names a question spells as code
    phrases: tuple[str, ...] = ()  # runs of its words joined, lower-case: names it may spell in words
    asks_platform: bool = False  # names an operating system


def read_query(text: str) -> Query:
    stripped = text.strip().strip("`'\"")
    asks = bool(_ASKS_NON_CODE.search(text.lower()))
    platform = bool(_ASKS_PLATFORM.search(split_identifier(text) + " " + text))
    if _QUALIFIED.match(stripped):
        parts = [p for p in _SEPARATORS.split(stripped) if p]
        return Query(text, parts[-1], tuple(parts[:-1]), frozenset(), asks, asks_platform=platform)
    words = {w for w in _WORD.findall(split_identifier(text) + " " + text.lower()) if w not in STOPWORDS}
    return Query(
        text,
        None,
        (),
        frozenset(w for w in words if len(w) > 2),
        asks,
        code_names(text),
        phrases(text),
        platform,
    )


_PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def phrases(text: str) -> tuple[str, ...]:
    """Two or three adjacent content words joined, lower-case, the last one also without a plural
    s ("JSON object" -> jsonobject; "type adapter factories" -> typeadapterfactory): how a question
    spells a type's name in words. Stopwords break a run."""
    runs: list[list[str]] = [[]]
    for word in _PLAIN_WORD.findall(text):
        if word.lower() in STOPWORDS:
            runs.append([])
        else:
            runs[-1].append(word.lower())
    found: dict[str, None] = {}
    for run in runs:
        for size in (2, 3):
            for i in range(len(run) - size + 1):
                joined = "".join(run[i : i + size])
                found[joined] = None
                if joined.endswith("ies"):
                    found[joined[:-3] + "y"] = None
                elif joined.endswith("s") and not joined.endswith("ss"):
                    found[joined[:-1]] = None
    return tuple(found)


def _path_words(file_path: str) -> set[str]:
    return set(_WORD.findall(split_identifier(file_path.replace("/", " ").replace(".", " "))))


# Cached: the candidates of one search share files, and the same files come back search after search.
@functools.lru_cache(maxsize=4096)
def _named_parts(file_path: str) -> frozenset[str]:
    """The words naming a file: its stem's and its folder's, split and whole (shell_completion.go:
    shell, completion, shell_completion is not a word, so ``shell``, ``completion``)."""
    segments = file_path.split("/")
    named = [segments[-1].split(".", 1)[0], *segments[-2:-1]]
    return frozenset(w for part in named for w in _WORD.findall(split_identifier(part) + " " + part.lower()))


def _names(word: str, part: str) -> bool:
    """A question word names a path part when one begins the other (cookie, cookies; config,
    configuration; auth, authentication), three letters at least."""
    short, long = (word, part) if len(word) <= len(part) else (part, word)
    return len(short) >= 3 and long.startswith(short)


def _path_share(words: frozenset[str], file_path: str) -> float:
    parts = _named_parts(file_path)
    return sum(1 for w in words if any(_names(w, part) for part in parts)) / len(words)


@functools.lru_cache(maxsize=256)
def _telling(words: frozenset[str], project: str) -> frozenset[str]:
    """A question's words less the project's own name (tRPC in trpc, axum in axum), which names
    no part of it: initTRPC.ts is not about "how a tRPC router is created". All of them when
    that is all the question says."""
    own = set(_WORD.findall(split_identifier(project) + " " + project.lower()))
    kept = frozenset(w for w in words if not any(_names(w, name) for name in own))
    return kept or words


def without_project_name(text: str, project: str | None) -> str:
    """``text`` less the project's name as a word (tRPC in trpc, Flask in flask), for the model:
    the name says nothing about which part of the project is meant, yet pulls the question toward
    whatever mentions it most (initTRPC.ts). All of it when that is all the question says."""
    if not project:
        return text
    kept = " ".join(re.sub(rf"\b{re.escape(project)}\b", " ", text, flags=re.IGNORECASE).split())
    return kept or text


_CODE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*")
_SPELLED_AS_CODE = re.compile(r"[a-z][A-Z]|_[A-Za-z]|^[A-Z][a-z]+[A-Z]")
# A capitalised word inside a sentence, after a lower-case word: a type's name (Monad, Logger).
_CAPITALISED = re.compile(r"(?<=[a-z,] )[A-Z][a-z0-9]+\b")


def code_names(text: str) -> frozenset[str]:
    """The names a question spells as code: qualified (res.redirect, fmt::format: the last part;
    not e.g.), camelCase, PascalCase, snake_case, and a capitalised word inside a sentence. Plain
    words are left to the rankings."""
    names = set(_CAPITALISED.findall(text))
    for token in _CODE_WORD.findall(text):
        parts = [part for part in _SEPARATORS.split(token) if part]
        if (len(parts) > 1 and min(map(len, parts)) > 1) or _SPELLED_AS_CODE.search(token):
            names.add(parts[-1])
    return frozenset(names)


# Python, PHP, JavaScript/TypeScript, Swift, Ruby; Java, C#, C++ and Kotlin name it after the class.
_CONSTRUCTORS = frozenset({"__init__", "__construct", "constructor", "init", "initialize"})


def _is_constructor(payload: dict[str, Any]) -> bool:
    if payload.get("unit_type") != "method":
        return False
    name = str(payload.get("name", ""))
    owner = [part for part in _SEPARATORS.split(str(payload.get("qualified_name", ""))) if part][-2:-1]
    return name in _CONSTRUCTORS or owner == [name]


def _stem(file_path: str) -> str:
    # The name without its last extension: SqlMapper.cs is named after SqlMapper, and
    # SqlMapper.DontMap.cs (a part of it) is not.
    return file_path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _folded(name: str) -> str:
    return name.replace("_", "").lower()


def adjustment(
    query: Query,
    payload: dict[str, Any],
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
    add, factor = 0.0, 1.0
    file_path = str(payload.get("file_path", ""))
    name = str(payload.get("name", ""))
    if query.symbol is not None:
        symbol = query.symbol
        if name == symbol:
            add += weights.exact_definition
        elif name.lower() == symbol.lower():
            add += weights.folded_definition
        if add and query.qualifier:
            qualified = [p.lower() for p in _SEPARATORS.split(str(payload.get("qualified_name", ""))) if p]
            path = _path_words(file_path)
            if all(q.lower() in qualified or q.lower() in path for q in query.qualifier):
                add += weights.qualified_definition
        if add and symbol[:1].isupper() and payload.get("unit_type") == "class":
            add += weights.type_over_function
        if _folded(_stem(file_path)) == _folded(symbol):
            add += weights.file_named_after if defined else weights.file_named_after_undefined
    else:
        if query.words and weights.path_word:
            words = _telling(query.words, str(payload.get("project", "")))
            add += weights.path_word * _path_share(words, file_path)
        if name in query.names:
            add += weights.embedded_definition / max(1, (defining or {}).get(name, 1))
        elif _stem(file_path) in query.names:
            add += weights.embedded_file
        elif query.phrases and payload.get("unit_type") != "module":
            if name.lower() in query.phrases:
                add += weights.phrase_definition
                if payload.get("unit_type") == "class":
                    add += weights.phrase_type * topical**2
            elif _folded(_stem(file_path)) in query.phrases:
                add += weights.phrase_file + weights.phrase_type_file * topical**2
    if _is_constructor(payload):
        factor *= weights.constructor_factor
    if not query.asks_platform and _OTHER_PLATFORM.search(file_path):
        factor *= weights.other_platform_factor
    if not query.asks_non_code and _NON_CODE.search(file_path):
        factor *= weights.non_code_factor
    return add, factor


def rerank(
    query_text: str,
    scored: list[tuple[str, float, dict[str, Any]]],
    weights: Weights = DEFAULT,
    *,
    defined: bool = True,
    defining_modules: frozenset[str] = frozenset(),
    file_sizes: Mapping[tuple[str, str], int] | None = None,
) -> list[tuple[str, float]]:
    """``scored``: (point id, fused relevance in 0..1, payload); best first, with the new scores.
    ``defining_modules``: the module units that bind a symbol query's name at their top level, or
    re-export it from elsewhere, and so stand for its definition. ``file_sizes``: units per
    (project, file path) of the candidates."""
    query = read_query(query_text)
    # Long questions ask for one function rather than a part of the project: file-level rules
    # (central files, spreading over files) weigh less for them.
    topical = min(1.0, weights.specific_words / len(query.words)) ** 2 if query.words else 1.0
    central = _centrality(scored, file_sizes or {}) if query.symbol is None else {}
    relevance: dict[str, float] = {}
    payloads: dict[str, dict[str, Any]] = {}
    defining = Counter(str(p.get("name")) for _, _, p in scored if p.get("name") in query.names)
    for pid, score, payload in scored:
        add, factor = adjustment(query, payload, weights, defined=defined, topical=topical, defining=defining)
        if pid in defining_modules:
            add += weights.exact_definition
        add += weights.central_file * topical * central.get(pid, 0.0)
        relevance[pid] = (score + add) * factor
        payloads[pid] = payload
    if query.symbol is None:
        relevance = _members_first(relevance, payloads, weights)
    ranked = sorted(relevance.items(), key=lambda item: item[1], reverse=True)
    repeat = weights.file_repeat * topical
    if not ranked or not repeat:
        return ranked
    return _spread(ranked, payloads, repeat * max(ranked[0][1], 0.0))


def _centrality(
    scored: list[tuple[str, float, dict[str, Any]]], file_sizes: Mapping[tuple[str, str], int]
) -> dict[str, float]:
    """Per candidate, log(units in its file) over log(units in the largest candidate file)."""
    size = {pid: file_sizes.get(file_of(p), 1) for pid, _, p in scored}
    top = math.log1p(max(size.values(), default=1))
    return {pid: math.log1p(n) / top for pid, n in size.items()} if top else {}


def _spread(
    ranked: list[tuple[str, float]], payloads: dict[str, dict[str, Any]], repeat: float
) -> list[tuple[str, float]]:
    """Greedily, the best unit once each unit loses ``repeat`` per unit of its file already taken."""
    taken: dict[str, int] = {}
    remaining = list(ranked)
    out: list[tuple[str, float]] = []
    while remaining:
        best, best_score = 0, float("-inf")
        for i, (pid, score) in enumerate(remaining):
            if score <= best_score:
                break  # sorted: no later unit can do better, whatever its file
            score -= repeat * taken.get(str(payloads[pid].get("file_path", "")), 0)
            if score > best_score:
                best, best_score = i, score
        pid, _ = remaining.pop(best)
        file_path = str(payloads[pid].get("file_path", ""))
        taken[file_path] = taken.get(file_path, 0) + 1
        out.append((pid, best_score))
    return out


def _span(payload: dict[str, Any]) -> tuple[int, int]:
    return int(payload.get("start_line", 0)), int(payload.get("end_line", 0))


def _members_first(
    relevance: dict[str, float], payloads: dict[str, dict[str, Any]], weights: Weights
) -> dict[str, float]:
    """For a question: a class found with members of it gives its place to its best member; a
    unit nested in another found function is demoted. Units only trade places within a file, so
    where a file first appears stays put."""
    by_file: dict[str, list[str]] = {}
    for pid, payload in payloads.items():
        # A module unit spans its file's loose code, around the units: it holds none of them.
        if payload.get("unit_type") != "module":
            by_file.setdefault(str(payload.get("file_path", "")), []).append(pid)
    out = dict(relevance)
    for pids in by_file.values():
        if len(pids) < 2:
            continue
        nested: set[str] = set()
        for outer in pids:
            start, end = _span(payloads[outer])
            inside = [
                pid
                for pid in pids
                if pid != outer
                and start <= _span(payloads[pid])[0]
                and _span(payloads[pid])[1] <= end
                and _span(payloads[pid]) != (start, end)
            ]
            if not inside:
                continue
            if payloads[outer].get("unit_type") == "class":
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
