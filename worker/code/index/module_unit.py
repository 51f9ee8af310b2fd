"""A file's code outside its functions and classes, as one unit of its own (``unit_type`` "module").

Much of what a question asks about lives there: a Python module's docstring and its globals
(a web framework's ``g = LocalProxy(...)``), signal and constant tables, a Rust ``mod.rs`` re-exporting
``FromRequest``, a Go file's ``var`` block, a JavaScript module's ``exports.x = ...``. Without
this unit such a file is invisible to search however well it answers.

What is kept: every syntax node that lies outside all units (descending into containers that
hold units, such as a C++ namespace), except imports (they name other files, not this one's
subject; a Rust ``pub use`` re-exports, so it stays), C and C++ function prototypes (they repeat
a definition, which is a unit of its own), a unit's own leading comment (the unit has it) and
licence headers. Named after the file (``signals.py``), so that no query for an
identifier mistakes it for that identifier's definition.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from typing import Any

from tree_sitter import Node

from learning_memory.shared.contracts.code import CodeUnit
from learning_memory.worker.code.index.language_spec import LangSpec

# Less code than this (white space and comments aside) is a package line or a stray brace.
MIN_CHARS = 60
MAX_BODY_CHARS = 20_000
_LICENCE = re.compile(r"copyright|licen[cs]e|SPDX-", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
# What C and C++ wrap around a header's whole text (include guards, extern "C"): read through, so
# that its imports and prototypes are left out as anywhere else.
_CONTAINERS = frozenset(
    {
        "preproc_ifdef",
        "preproc_if",
        "preproc_else",
        "preproc_elif",
        "linkage_specification",
        "declaration_list",
    }
)


def module_unit(
    root: Node, data: bytes, spans: Sequence[tuple[int, int]], spec: LangSpec, common: dict[str, Any]
) -> CodeUnit | None:
    """The module unit of a file whose units cover ``spans`` (byte ranges), or None when what
    lies outside them says nothing."""
    outer = _outermost(spans)
    starts = [start for start, _ in outer]
    kept: list[Node] = []
    _collect(root, outer, starts, spec, kept)
    if not kept:
        return None
    code = [n for n in kept if n.type not in spec.comments]
    # Comments alone (a banner repeated in every file of a folder) do not make a module worth a hit.
    if sum(len(_SPACE.sub("", (n.text or b"").decode("utf-8", "replace"))) for n in code) < MIN_CHARS:
        return None
    body = "\n".join(data[n.start_byte : n.end_byte].decode("utf-8", "replace") for n in kept)
    file_path = str(common["file_path"])
    name = file_path.rsplit("/", 1)[-1]
    start_line = kept[0].start_point.row + 1
    end_line = max(start_line, kept[-1].end_point.row + (0 if kept[-1].end_point.column == 0 else 1))
    return CodeUnit(
        **common,
        unit_type="module",
        name=name,
        qualified_name=name,
        signature=file_path,
        docstring=None,
        has_docstring=False,
        body=body[:MAX_BODY_CHARS],
        start_line=start_line,
        end_line=end_line,
        line_count=end_line - start_line + 1,
    )


def _outermost(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans not inside another, in order."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans, key=lambda span: (span[0], -span[1])):
        if out and start < out[-1][1]:
            continue
        out.append((start, end))
    return out


def _collect(
    node: Node, spans: list[tuple[int, int]], starts: list[int], spec: LangSpec, kept: list[Node]
) -> None:
    children = node.named_children
    for i, child in enumerate(children):
        overlap = _overlap(child, spans, starts)
        if overlap == "inside":
            continue
        if node.type in _CONTAINERS and node.field_name_for_named_child(i) in ("name", "condition", "value"):
            continue  # a guard's name, an #if's condition, extern "C"'s "C"
        if overlap == "some" or child.type in _CONTAINERS:
            _collect(child, spans, starts, spec, kept)
        elif _keep(child, children[i + 1] if i + 1 < len(children) else None, spans, starts, spec):
            kept.append(child)


def _declares_function(node: Node) -> bool:
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type in ("pointer_declarator", "reference_declarator"):
        declarator = declarator.child_by_field_name("declarator")
    return declarator is not None and declarator.type == "function_declarator"


def _overlap(node: Node, spans: list[tuple[int, int]], starts: list[int]) -> str:
    """Where ``node`` is: "inside" a unit, holding "some" unit text, or "none" of either."""
    i = bisect.bisect_right(starts, node.start_byte) - 1
    if i >= 0 and spans[i][1] >= node.end_byte and spans[i][0] <= node.start_byte:
        return "inside"
    # Any span starting before the node ends and ending after it starts.
    j = bisect.bisect_left(starts, node.end_byte)
    for start, end in spans[max(0, i) : j]:
        if start < node.end_byte and end > node.start_byte:
            return "some"
    return "none"


def _keep(
    node: Node, after: Node | None, spans: list[tuple[int, int]], starts: list[int], spec: LangSpec
) -> bool:
    text = node.text or b""
    if node.type in spec.imports:
        return text.lstrip().startswith(b"pub")  # Rust re-exports name this module's API
    if node.type in spec.prototypes and _declares_function(node):
        return False
    if node.type == "preproc_call":
        return False  # a stray #endif or #pragma once
    if node.type == "preproc_def" and node.child_by_field_name("value") is None:
        return False  # #define UV_SRC_IDNA_H_: an include guard or a bare flag
    if node.type in spec.comments:
        if _LICENCE.search(text.decode("utf-8", "replace")):
            return False
        # A unit's leading comment is that unit's docstring already.
        if after is None or after.start_point.row > node.end_point.row + 1:
            return True
        return _overlap(after, spans, starts) == "none"
    return True
