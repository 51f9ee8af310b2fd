"""Docstrings and leading comments of code units, cleaned of comment markers."""

from __future__ import annotations

import ast
import inspect
import re

from tree_sitter import Node

from learning_memory.worker.code.index.language_spec import LangSpec

# One line's comment opener: /** /* /*! /// //! // # and a Javadoc-style leading "*".
_OPENER = re.compile(r"^\s*(?:/\*+!?|//[/!]?|#+!?|\*(?!/))\s?")
_CLOSER = re.compile(r"\s*\*+/\s*$")
# C# XML doc wrappers carry no meaning for a reader; <param> and friends keep their text.
_XML_WRAPPER = re.compile(r"</?(?:summary|remarks|returns|value|para)\s*>")


def clean_comment(text: str) -> str:
    lines = []
    for raw in text.splitlines():
        line = _OPENER.sub("", _CLOSER.sub("", raw), count=1)
        lines.append(_XML_WRAPPER.sub("", line).rstrip())
    return inspect.cleandoc("\n".join(lines))


def _end_row(node: Node) -> int:
    """Last row holding text: some comment nodes (Rust ``//``) include their newline."""
    row, col = node.end_point
    return row - 1 if col == 0 and row > node.start_point.row else row


def leading_comment(anchor: Node, spec: LangSpec) -> str | None:
    """The contiguous comment block ending on the line above ``anchor`` (or on its first line)."""
    node = anchor
    # A unit that opens its parent's body (Ruby ``class`` inside ``module``): the comment is
    # the body's previous sibling.
    while node.prev_sibling is None and node.parent is not None and node.parent.start_byte == node.start_byte:
        node = node.parent
    sib = node.prev_sibling
    expect_row = anchor.start_point.row
    while sib is not None and sib.type in spec.between and _end_row(sib) >= expect_row - 1:
        expect_row = sib.start_point.row
        sib = sib.prev_sibling
    texts: list[str] = []
    while sib is not None and sib.type in spec.comments:
        if _end_row(sib) < expect_row - 1:
            break
        before = sib.prev_sibling
        if (
            before is not None
            and before.type not in spec.comments
            and _end_row(before) == sib.start_point.row
        ):
            break  # a trailing comment of the code line above, not ours
        texts.append(sib.text.decode("utf-8", "replace") if sib.text else "")
        expect_row = sib.start_point.row
        sib = before
    if not texts:
        return None
    cleaned = clean_comment("\n".join(reversed(texts)))
    return cleaned or None


def python_docstring(body: Node | None) -> str | None:
    if body is None:
        return None
    first = body.named_children[0] if body.named_child_count else None
    if first is None or first.type != "expression_statement" or first.named_child_count != 1:
        return None
    string = first.named_children[0]
    if string.type != "string" or string.text is None:
        return None
    raw = string.text.decode("utf-8", "replace")
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None  # an f-string is not a docstring
    if not isinstance(value, str):
        return None
    return inspect.cleandoc(value) or None
