"""Parsing source files into code units with tree-sitter (grammars: :mod:`.grammars`).

One generic walk serves every language; what differs (which nodes are functions, classes,
decision points, comments) is data in :mod:`worker.code.index.languages`.

Encoding: UTF-8 (a BOM is dropped). Bytes containing NUL are binary (or UTF-16) and give an
``encoding_error``. Other bytes that are not UTF-8 are read as Latin-1: legacy sources in
Latin-1/cp1252 are common (old C, PHP), and every byte is a valid Latin-1 character, so the
code structure survives while a few characters in strings and comments may be wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from tree_sitter import Node

from learning_memory.shared.contracts.code import CodeUnit, FileError, Language, UnitType
from learning_memory.shared.log import get_logger
from learning_memory.worker.code.index.grammars import CASE, CLASS, DECISION, grammar, parser_for
from learning_memory.worker.code.index.headers import is_cpp
from learning_memory.worker.code.index.language_spec import (
    DEFAULT_ARM_PREFIXES,
    EXTENSIONS,
    LOGICAL_OPERATORS,
    LangSpec,
)
from learning_memory.worker.code.index.languages import LANGUAGE_SPECS
from learning_memory.worker.code.index.macros import blank_macros
from learning_memory.worker.code.index.module_unit import module_unit
from learning_memory.worker.code.index.parse_docs import leading_comment, python_docstring

log = get_logger(__name__)

MAX_SIGNATURE_CHARS = 300
# Mixed into each file's content hash (worker.code.index.indexer): bump it when parsing yields other
# units from the same bytes, so that files indexed before are parsed again on their next index.
PARSE_VERSION = b"units-2\0"
_BOM = b"\xef\xbb\xbf"
_SPACE = re.compile(r"\s+")
_GENERIC_ARGS = re.compile(r"<[^<>]*>|\[[^\[\]]*\]")
_NAME_SEPARATORS = re.compile(r"::|\.|\\")


@dataclass
class ParseResult:
    units: list[CodeUnit] = field(default_factory=list)
    error: FileError | None = None  # set when nothing could be read from the file


def language_for(path: PurePosixPath) -> Language | None:
    """The language of a file by its name, or None if we do not parse it."""
    return EXTENSIONS.get(path.suffix.lower())


def parse_source(source: bytes, *, language: Language, project: str, file_path: str) -> ParseResult:
    """Units of one file. Pure and CPU-bound (callers run it off the event loop). A file with
    syntax errors yields what tree-sitter recovers; undecodable bytes give an encoding_error.
    A ``.h`` given as C is read as C++, and its units say so, when its text is C++."""
    try:
        return _parse(source, language, project, file_path)
    except Exception as exc:  # one bad file must never stop an indexing run
        log.warning("code_parse_failed", file_path=file_path, language=language, exc_info=True)
        return ParseResult(error=FileError(file_path=file_path, error_type="parse_error", message=repr(exc)))


def _decode(source: bytes) -> bytes | None:
    """UTF-8 bytes to parse, or None for binary input (see the module docstring)."""
    if b"\x00" in source:
        return None
    if source.startswith(_BOM):
        source = source[len(_BOM) :]
    try:
        source.decode("utf-8")
    except UnicodeDecodeError:
        return source.decode("latin-1").encode("utf-8")
    return source


def _parse(source: bytes, language: Language, project: str, file_path: str) -> ParseResult:
    data = _decode(source)
    if data is None:
        message = "binary content (NUL bytes): not a text source file"
        return ParseResult(error=FileError(file_path=file_path, error_type="encoding_error", message=message))
    if not data.strip():
        return ParseResult()
    if language == "c" and file_path.lower().endswith(".h") and is_cpp(data):
        language = "cpp"
    tree = parser_for(language).parse(
        blank_macros(data, cpp=language == "cpp") if language in ("c", "cpp") else data
    )
    walker = _Walker(data, LANGUAGE_SPECS[language], grammar(language).roles, project, file_path, language)
    units = walker.walk(tree.root_node)
    module = module_unit(
        tree.root_node, data, [(start, end) for start, end, _ in walker.closed], walker.spec, walker.common
    )
    if module is not None:
        units.insert(sum(1 for unit in units if unit.start_line < module.start_line), module)
    if not units and tree.root_node.has_error and _mostly_unreadable(tree.root_node, len(data)):
        message = "syntax errors: no function or class could be recovered"
        return ParseResult(error=FileError(file_path=file_path, error_type="parse_error", message=message))
    return ParseResult(units=units)


def _mostly_unreadable(root: Node, size: int) -> bool:
    """Whether syntax errors cover most of a file. A file without units is a parse error only
    then: a header of declarations behind a macro the grammar does not know (``API int f();``)
    has a small error and nothing to index, and nothing is wrong with it."""
    error_bytes = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error:
            error_bytes += node.end_byte - node.start_byte
        elif node.has_error:  # subtrees without errors are skipped
            stack.extend(node.children)
    return 2 * error_bytes > size


@dataclass
class _Frame:
    depth: int
    start: int  # byte offsets of the unit's text, for ordering
    end: int
    path: list[str]
    is_class: bool
    fields: dict[str, Any]
    complexity: int = 1


class _Walker:
    def __init__(
        self,
        data: bytes,
        spec: LangSpec,
        roles: dict[int, int],
        project: str,
        file_path: str,
        language: Language,
    ) -> None:
        self.data = data
        self.spec = spec
        self.roles = roles
        self.common = {"project": project, "file_path": file_path, "language": language}
        self.closed: list[tuple[int, int, CodeUnit]] = []  # (start byte, end byte, unit)

    def walk(self, root: Node) -> list[CodeUnit]:
        """Depth-first over every node with one cursor; a stack of open units takes the
        decision points, so a nested unit's branches never count towards its parent."""
        roles, data = self.roles, self.data
        frames: list[_Frame] = []
        cursor = root.walk()
        depth = 0
        while True:
            node = cursor.node
            assert node is not None
            role = roles.get(node.kind_id)
            if role is not None:
                if role <= CLASS:
                    frame = self._open(node, role == CLASS, depth, frames)
                    if frame is not None:
                        frames.append(frame)
                elif frames:
                    if role == DECISION:
                        frames[-1].complexity += 1
                    elif role == CASE:
                        if not data.startswith(DEFAULT_ARM_PREFIXES, node.start_byte):
                            frames[-1].complexity += 1
                    else:
                        operator = node.child_by_field_name("operator")
                        if (
                            operator is not None
                            and data[operator.start_byte : operator.end_byte] in LOGICAL_OPERATORS
                        ):
                            frames[-1].complexity += 1
            if cursor.goto_first_child():
                depth += 1
                continue
            while True:
                while frames and frames[-1].depth >= depth:
                    self._close(frames.pop())
                if cursor.goto_next_sibling():
                    break
                if not cursor.goto_parent():
                    # Units close innermost first; readers expect source order, outer before inner.
                    self.closed.sort(key=lambda item: (item[0], -item[1]))
                    return [item[2] for item in self.closed]
                depth -= 1

    def _close(self, frame: _Frame) -> None:
        complexity = None if frame.is_class else frame.complexity
        self.closed.append((frame.start, frame.end, CodeUnit(**frame.fields, complexity=complexity)))

    def _open(self, node: Node, is_class: bool, depth: int, frames: list[_Frame]) -> _Frame | None:
        spec = self.spec
        required = spec.requires.get(node.type)
        if required is not None:
            child = node.child_by_field_name(required[0])
            if child is None or (required[1] and child.type not in required[1]):
                return None
        named = self._name(node)
        if named is None:
            return None
        extra, name = named
        parent_path = frames[-1].path if frames else []
        path = [*parent_path, *extra, name]
        unit_type: UnitType = "class"
        if not is_class:
            unit_type = "method" if extra or (frames and frames[-1].is_class) else "function"
        outer = self._outer(node)
        body_node = self._body(node)
        docstring = python_docstring(body_node) if spec.python_docstrings and body_node is not None else None
        if docstring is None:
            docstring = leading_comment(outer, spec)
        body = self._text(outer.start_byte, outer.end_byte).rstrip()
        start_line = outer.start_point.row + 1
        end_line = start_line + body.count("\n")
        fields = {
            **self.common,
            "unit_type": unit_type,
            "name": name,
            "qualified_name": ".".join(path),
            "signature": self._signature(outer, body_node),
            "docstring": docstring,
            "has_docstring": docstring is not None,
            "body": body,
            "start_line": start_line,
            "end_line": end_line,
            "line_count": end_line - start_line + 1,
        }
        return _Frame(depth, outer.start_byte, outer.end_byte, path, is_class, fields)

    def _text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "replace")

    def _name(self, node: Node) -> tuple[list[str], str] | None:
        """(scopes named with the unit, name): ``UserRepo::size`` -> (["UserRepo"], "size")."""
        spec = self.spec
        target: Node | None = None
        for field_name in spec.name_fields.get(node.type, ("name",)):
            target = node.child_by_field_name(field_name)
            if target is not None:
                break
        if target is None and node.parent is not None:
            parent_field = spec.parent_names.get(node.parent.type)
            if parent_field is not None:
                target = node.parent.child_by_field_name(parent_field)
        if target is None:
            default = spec.default_names.get(node.type)
            return ([], default) if default else None
        while (inner := target.child_by_field_name("declarator")) is not None:
            target = inner
        raw = _SPACE.sub("", self._text(target.start_byte, target.end_byte))
        text = raw
        for _ in range(3):  # nested generics: Map<K, List<V>>
            text = _GENERIC_ARGS.sub("", text)
        parts = [p for p in _NAME_SEPARATORS.split(text.lstrip("*&")) if p]
        if not parts:  # an operator, not a generic: Ruby's ``def <=>``
            if not raw:
                return None
            parts = [raw]
        receiver = self._receiver(node)
        return [*receiver, *parts[:-1]], parts[-1]

    def _receiver(self, node: Node) -> list[str]:
        """Go: ``func (r *Repo) Save()`` is a method of ``Repo``."""
        if self.spec.receiver_field is None:
            return []
        receiver = node.child_by_field_name(self.spec.receiver_field)
        if receiver is None or not receiver.named_child_count:
            return []
        param_type = receiver.named_children[0].child_by_field_name("type")
        if param_type is None:
            return []
        text = _GENERIC_ARGS.sub("", self._text(param_type.start_byte, param_type.end_byte)).lstrip("*")
        return [text] if text else []

    def _outer(self, node: Node) -> Node:
        """The node's wrapper when it wraps only this unit (``export``, decorators, ...)."""
        outer = node
        while (parent := outer.parent) is not None and parent.type in self.spec.wrappers:
            kind = outer.kind_id
            if sum(1 for child in parent.named_children if child.kind_id == kind) != 1:
                break
            outer = parent
        return outer

    def _body(self, node: Node) -> Node | None:
        body = node.child_by_field_name("body")
        if body is not None or not self.spec.body_types:
            return body
        for child in node.named_children:
            if child.type in self.spec.body_types:
                return child
            for grandchild in child.named_children:
                if grandchild.type in self.spec.body_types:
                    return grandchild
        return None

    def _signature(self, outer: Node, body: Node | None) -> str:
        end = outer.end_byte
        if body is not None:
            end = body.start_byte
            # A comment between the header and the body (Ruby's ``class X`` then ``# doc``).
            before = body.prev_sibling
            while (
                before is not None
                and before.type in self.spec.comments
                and before.start_byte >= outer.start_byte
            ):
                end = before.start_byte
                before = before.prev_sibling
        end = min(end, outer.start_byte + 4 * MAX_SIGNATURE_CHARS)
        return _SPACE.sub(" ", self._text(outer.start_byte, end)).strip()[:MAX_SIGNATURE_CHARS]
