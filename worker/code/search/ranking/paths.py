"""A file's path read as words: what a question's words are matched against."""

from __future__ import annotations

import functools
import re

from learning_memory.worker.code.index.units import split_identifier

_WORD = re.compile(r"[a-z0-9]+")


def path_words(file_path: str) -> set[str]:
    """Every word of the path, folders included, identifiers split."""
    return set(_WORD.findall(split_identifier(file_path.replace("/", " ").replace(".", " "))))


# Cached: the candidates of one search share files, and the same files come back search after search.
@functools.lru_cache(maxsize=4096)
def named_parts(file_path: str) -> frozenset[str]:
    """The words naming a file: its stem's and its folder's, split and whole (shell_completion.go:
    shell, completion, shell_completion is not a word, so ``shell``, ``completion``)."""
    segments = file_path.split("/")
    named = [segments[-1].split(".", 1)[0], *segments[-2:-1]]
    return frozenset(w for part in named for w in _WORD.findall(split_identifier(part) + " " + part.lower()))


def names(word: str, part: str) -> bool:
    """A question word names a path part when one begins the other (cookie, cookies; config,
    configuration; auth, authentication), three letters at least."""
    short, long = (word, part) if len(word) <= len(part) else (part, word)
    return len(short) >= 3 and long.startswith(short)


def path_share(words: frozenset[str], file_path: str) -> float:
    """The share of ``words`` that name the file or its folder."""
    parts = named_parts(file_path)
    return sum(1 for w in words if any(names(w, part) for part in parts)) / len(words)


@functools.lru_cache(maxsize=256)
def telling(words: frozenset[str], project: str) -> frozenset[str]:
    """A question's words less the project's own name, which names no part of it: the module that
    sets the project up is not what "how a <project> router is created" asks for. All of them
    when that is all the question says."""
    own = set(_WORD.findall(split_identifier(project) + " " + project.lower()))
    kept = frozenset(w for w in words if not any(names(w, name) for name in own))
    return kept or words


def stem(file_path: str) -> str:
    # The name without its last extension: Mapper.cs is named after Mapper, and Mapper.Cache.cs
    # (a part of it) is not.
    return file_path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def folded(name: str) -> str:
    """``name`` as compared with a file's stem: case and underscores aside (shell_completion)."""
    return name.replace("_", "").lower()
