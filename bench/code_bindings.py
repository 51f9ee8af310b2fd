"""Symbol queries for values bound at a module's top level, labelled from the corpus itself.

A name such as flask's ``g`` or httpx's ``DEFAULT_TIMEOUT_CONFIG`` is defined by an assignment in
a module, not by a function or class. Python's own parser finds every public name bound that way
in the labelled questions' corpus (each defined in one file only); the query is the bare name and
its answer is any hit in the defining file. Independent of how search_code recognises a binding.
"""

from __future__ import annotations

import ast
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

SAMPLE = 150
MIN_NAME_CHARS = 3


def _bound_names(tree: ast.Module) -> list[str]:
    names = []
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


def labelled(corpus: Path, count: int = SAMPLE, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` names bound at the top level of one module only, public and not too short."""
    files: dict[str, set[str]] = defaultdict(set)
    for path in sorted(corpus.rglob("*.py")):
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        for name in _bound_names(tree):
            if len(name) >= MIN_NAME_CHARS and not name.startswith("_"):
                files[name].add(path.relative_to(corpus).as_posix())
    names = sorted(name for name, where in files.items() if len(where) == 1)
    random.Random(seed).shuffle(names)
    return [{"query": name, "file": next(iter(files[name]))} for name in names[:count]]


def file_rank(hits: list[dict[str, Any]], file_path: str) -> int | None:
    return next((i for i, hit in enumerate(hits, start=1) if hit["file_path"] == file_path), None)
