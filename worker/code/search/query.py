"""What a developer's query says, read once: :func:`read_query` makes the :class:`Query` that the
BM25 search, the name lookups and the reranking all use.

A query is either an identifier, bare or qualified (``Session``, ``mux.Router``,
``web::extract::FromRequest``), which asks for the unit defining that name, or a question
("how are cookies persisted between requests"), whose content words may name the file or folder
holding the answer, whose code-like words (``res.redirect``, ``calculateRetryDelay``) name units,
and whose adjacent words may spell a type's name ("JSON object": JsonObject).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from learning_memory.worker.code.index.units import spelled_identifiers, split_identifier

# Words too common in questions to say anything about code. The rest is left to BM25's idf.
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i if in into is it its me my of on or "
    "our should so that the their then there this to use used uses using was we what when where "
    "which who why will with you your".split()
)
MAX_QUERY_TERMS = 64
MAX_SPELLED_QUERY_CHARS = 300
# What separates a qualified name's parts: Python/Go/Java dots, Rust/C++ ::, paths, Ruby's #.
SEPARATORS = re.compile(r"\.|::|/|#")
_TERM = re.compile(r"[A-Za-z0-9]+")
_WORD = re.compile(r"[a-z0-9]+")
_PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUALIFIED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::|/|#)[A-Za-z_][A-Za-z0-9_]*)*$")
_CODE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*")
_SPELLED_AS_CODE = re.compile(r"[a-z][A-Z]|_[A-Za-z]|^[A-Z][a-z]+[A-Z]")
# A capitalised word inside a sentence, after a lower-case word: a type's name (Monad, Logger).
_CAPITALISED = re.compile(r"(?<=[a-z,] )[A-Z][a-z0-9]+\b")
_ASKS_PLATFORM = re.compile(
    r"\b(windows|win32|win64|mingw|msvc|unix|posix|linux|darwin|macos|osx|bsd|platforms?)\b", re.IGNORECASE
)
_ASKS_NON_CODE = re.compile(
    r"\b(tests?|testing|spec|examples?|samples?|demos?|mocks?|fixtures?|benchmarks?|docs?|documentation)\b"
)


@dataclass(frozen=True)
class Query:
    text: str
    symbol: str | None  # the identifier asked for, if the query is one
    qualifier: tuple[str, ...]  # what stands before it (mux.Router: ("mux",))
    words: frozenset[str]  # a question's content words, for matching paths
    asks_non_code: bool  # names tests, examples or documentation
    names: frozenset[str] = frozenset()  # names a question spells as code
    phrases: tuple[str, ...] = ()  # runs of its words joined, lower-case: names it may spell in words
    asks_platform: bool = False  # names an operating system
    terms: tuple[str, ...] = ()  # what BM25 looks for (see query_terms)


def read_query(text: str) -> Query:
    stripped = text.strip().strip("`'\"")
    asks = bool(_ASKS_NON_CODE.search(text.lower()))
    platform = bool(_ASKS_PLATFORM.search(split_identifier(text) + " " + text))
    terms = tuple(query_terms(text))
    if _QUALIFIED.match(stripped):
        parts = [p for p in SEPARATORS.split(stripped) if p]
        return Query(
            text, parts[-1], tuple(parts[:-1]), frozenset(), asks, asks_platform=platform, terms=terms
        )
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
        terms,
    )


def query_terms(text: str) -> list[str]:
    """Distinct lower-case words of ``text`` and of its identifiers' parts, stopwords dropped: a
    developer types "retry delay" for ``calculateRetryDelay``, and the keyword rows hold both."""
    words = [word.lower() for word in _TERM.findall(text)]
    words += spelled_identifiers(text).split()
    terms = [word for word in dict.fromkeys(words) if word not in STOPWORDS]
    return terms[:MAX_QUERY_TERMS]


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


def code_names(text: str) -> frozenset[str]:
    """The names a question spells as code: qualified (res.redirect, io::copy: the last part;
    not e.g.), camelCase, PascalCase, snake_case, and a capitalised word inside a sentence. Plain
    words are left to the rankings."""
    names = set(_CAPITALISED.findall(text))
    for token in _CODE_WORD.findall(text):
        parts = [part for part in SEPARATORS.split(token) if part]
        if (len(parts) > 1 and min(map(len, parts)) > 1) or _SPELLED_AS_CODE.search(token):
            names.add(parts[-1])
    return frozenset(names)


def without_project_name(text: str, project: str | None) -> str:
    """``text`` less the project's name as a word, for the model: the name says nothing about which
    part of the project is meant, yet pulls the question toward whatever mentions it most (the
    module that sets the project up). All of it when that is all the question says."""
    if not project:
        return text
    kept = " ".join(re.sub(rf"\b{re.escape(project)}\b", " ", text, flags=re.IGNORECASE).split())
    return kept or text


def query_text(query: str) -> str:
    """What the model embeds for ``query``: a short query with any camelCase or snake_case
    identifier in it also spelled out as words, since unit texts carry their names both ways. A
    long one (a snippet, for find_similar_code) is code already, and compares best as it is."""
    if len(query) > MAX_SPELLED_QUERY_CHARS:
        return query
    spelled = [
        split_identifier(word)
        for word in _IDENTIFIER.findall(query)
        if split_identifier(word) != word.lower()
    ]
    return f"{query}\n{' '.join(spelled)}" if spelled else query
