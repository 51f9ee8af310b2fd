"""A stand-in parser for the indexer tests: Python ``def``/``class`` lines by regex, no tree-sitter.

It follows the parser's contract (units with deterministic ids, an encoding_error for undecodable
bytes) closely enough to test the indexing pipeline on its own; the real parser has its own tests.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from learning_memory.shared.contracts.code import CodeUnit, FileError, Language
from learning_memory.worker.code.index.parser import ParseResult

_HEAD = re.compile(r"^(\s*)(def|class)\s+(\w+)\s*(\([^)]*\))?")


def fake_language_for(path: PurePosixPath) -> Language | None:
    return "python" if path.suffix == ".py" else None


def fake_parse_source(source: bytes, *, language: Language, project: str, file_path: str) -> ParseResult:
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ParseResult(
            error=FileError(file_path=file_path, error_type="encoding_error", message=str(exc))
        )
    lines = text.splitlines()
    heads = [(i, m) for i, line in enumerate(lines) if (m := _HEAD.match(line))]
    units: list[CodeUnit] = []
    classes: list[tuple[int, str]] = []  # (indent, name) of the enclosing classes
    for n, (i, match) in enumerate(heads):
        indent = len(match.group(1))
        while classes and classes[-1][0] >= indent:
            classes.pop()
        end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        body = "\n".join(lines[i:end]).rstrip()
        name = match.group(3)
        qualified = ".".join([*(c for _, c in classes), name])
        kind = "class" if match.group(2) == "class" else ("method" if classes else "function")
        doc_line = lines[i + 1].strip() if i + 1 < len(lines) else ""
        docstring = doc_line.strip('"') if doc_line.startswith('"""') else None
        units.append(
            CodeUnit(
                project=project,
                file_path=file_path,
                language=language,
                unit_type=kind,
                name=name,
                qualified_name=qualified,
                signature=lines[i].strip().rstrip(":"),
                docstring=docstring,
                body=body,
                start_line=i + 1,
                end_line=i + body.count("\n") + 1,
                line_count=body.count("\n") + 1,
                complexity=1,
                has_docstring=docstring is not None,
            )
        )
        if kind == "class":
            classes.append((indent, name))
    return ParseResult(units=units)
