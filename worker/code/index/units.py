"""What is kept of a code unit: the text its vector is made from, the text of its keyword row, and
its payload (everything but the body), typed as :class:`UnitPayload` for whoever reads it back."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from learning_memory.shared.contracts.code import COLLECTION, CodeUnit, Language, UnitType
from learning_memory.worker.vectors.base import CollectionSpec, PayloadIndexType

# What search filters on (project, language), what re-indexing deletes by (file_path), and unit_type.
INDEXES: dict[str, PayloadIndexType] = {
    "project": "keyword",
    "language": "keyword",
    "file_path": "keyword",
    "unit_type": "keyword",
}

# The model reads ~256 tokens (~1,000 characters of code); tokenising a 50 KB body only costs time.
MAX_TEXT_CHARS = 4_000
MAX_PAYLOAD_DOCSTRING_CHARS = 500
# Splits "HTTPServerError2" into "HTTP", "Server", "Error", "2"; "_" and "." separate too.
_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MIXED_CASE = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")


class UnitPayload(BaseModel):
    """A unit as stored beside its vector and in its keyword row: everything but its body (the
    file on disk holds it), the docstring cut short."""

    # Extra keys are ignored: a point written by an older version may carry fields since dropped.
    model_config = ConfigDict(frozen=True, extra="ignore")

    project: str
    file_path: str  # relative to the indexed directory, with "/" separators
    language: Language
    unit_type: UnitType
    name: str
    qualified_name: str
    signature: str
    docstring: str | None = None
    start_line: int
    end_line: int
    line_count: int
    complexity: int | None = None
    has_docstring: bool

    @property
    def file(self) -> tuple[str, str]:
        """(project, file path): how units are counted per file."""
        return self.project, self.file_path


def collection_spec(dimension: int) -> CollectionSpec:
    """The code units' collection. Half precision: search_code scans every vector of the projects
    searched, and 16-bit floats halve the bytes read; the quality sets rank the same either way."""
    return CollectionSpec(COLLECTION, dimension, INDEXES, half_precision=True)


def split_identifier(name: str) -> str:
    """``Outer.calculateRetryDelay`` -> ``outer calculate retry delay``; snake_case likewise."""
    return " ".join(part.lower() for part in _PART.findall(name))


def spelled_identifiers(text: str) -> str:
    """The words of every camelCase or PascalCase identifier in ``text``, space-separated."""
    # Each distinct name once: a unit repeats its identifiers, and the case test is the cost.
    words = {split_identifier(name) for name in set(_IDENTIFIER.findall(text)) if _MIXED_CASE.search(name)}
    return " ".join(sorted(words))


def embedding_text(unit: CodeUnit) -> str:
    """What a reader needs, most telling first, so the model's truncation cuts the body's tail.

    The file path is left out on purpose: a renamed file's units keep their text, and the
    embedding cache spares re-embedding them.
    """
    parts = [split_identifier(unit.qualified_name), unit.signature, unit.docstring or "", unit.body]
    return "\n".join(part for part in parts if part)[:MAX_TEXT_CHARS]


def keyword_text(unit: CodeUnit) -> str:
    """The text BM25 indexes: the name on a line of its own, the embedding text, and its
    identifiers spelled as words (a developer types "retry delay", the code says retryDelay)."""
    text = embedding_text(unit)
    return f"{unit.name}\n{text}\n{spelled_identifiers(text)}"


def embedding_text_of(text: str) -> str:
    """The unit's embedding text back from its :func:`keyword_text`: the lines between its name's
    (a name has no line break) and the spelled identifiers' (one line, maybe empty)."""
    return text.split("\n", 1)[1].rsplit("\n", 1)[0] if "\n" in text else ""


def unit_payload(unit: CodeUnit) -> dict[str, Any]:
    """A :class:`UnitPayload`'s fields, as written to a point and a keyword row."""
    payload = unit.model_dump(mode="json", exclude={"body"})
    if unit.docstring is not None:
        payload["docstring"] = unit.docstring[:MAX_PAYLOAD_DOCSTRING_CHARS]
    return payload
