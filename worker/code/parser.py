"""Parsing source files into code units with tree-sitter. (Interface; implementation pending.)

Grammars come from the per-language wheels (``tree-sitter-python``, ...), never from
``tree-sitter-language-pack``, which downloads grammars at run time and fails offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from shared.contracts.code import CodeUnit, FileError, Language


@dataclass
class ParseResult:
    units: list[CodeUnit] = field(default_factory=list)
    error: FileError | None = None  # set when nothing could be read from the file


def language_for(path: PurePosixPath) -> Language | None:
    """The language of a file by its name, or None if we do not parse it."""
    raise NotImplementedError


def parse_source(source: bytes, *, language: Language, project: str, file_path: str) -> ParseResult:
    """Units of one file. Pure and CPU-bound (callers run it off the event loop). A file with
    syntax errors yields what tree-sitter recovers; undecodable bytes give an encoding_error."""
    raise NotImplementedError
