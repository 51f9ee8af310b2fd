"""How a code unit is embedded and stored: its embedding text, its point payload, and back to a hit."""

from __future__ import annotations

import re
from typing import Any

from learning_memory.shared.contracts.code import COLLECTION, CodeHit, CodeUnit
from learning_memory.worker.vectors.base import CollectionSpec, PayloadIndexType

# What search filters on (project, language), what re-indexing deletes by (file_path), and unit_type.
INDEXES: dict[str, PayloadIndexType] = {
    "project": "keyword",
    "language": "keyword",
    "file_path": "keyword",
    "unit_type": "keyword",
}


def file_of(payload: dict[str, Any]) -> tuple[str, str]:
    """(project, file path) of a unit's payload: how units are counted per file."""
    return str(payload.get("project")), str(payload.get("file_path"))


def collection_spec(dimension: int) -> CollectionSpec:
    """The code units' collection. Half precision: search_code scans every vector of the projects
    searched, and 16-bit floats halve the bytes read; rankings are the same to the benchmarks."""
    return CollectionSpec(COLLECTION, dimension, INDEXES, half_precision=True)


# The model reads ~256 tokens (~1,000 characters of code); tokenising a 50 KB body only costs time.
MAX_TEXT_CHARS = 4_000
MAX_PAYLOAD_DOCSTRING_CHARS = 500
MAX_SPELLED_QUERY_CHARS = 300
# Splits "HTTPServerError2" into "HTTP", "Server", "Error", "2"; "_" and "." separate too.
_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def split_identifier(name: str) -> str:
    """``Outer.calculateRetryDelay`` -> ``outer calculate retry delay``; snake_case likewise."""
    return " ".join(part.lower() for part in _PART.findall(name))


def embedding_text(unit: CodeUnit) -> str:
    """What a reader needs, most telling first, so the model's truncation cuts the body's tail.

    The file path is left out on purpose: a renamed file's units keep their text, and the
    embedding cache spares re-embedding them.
    """
    parts = [split_identifier(unit.qualified_name), unit.signature, unit.docstring or "", unit.body]
    return "\n".join(part for part in parts if part)[:MAX_TEXT_CHARS]


def query_text(query: str) -> str:
    """A short query, with any camelCase or snake_case identifier in it also spelled out as words,
    since unit texts carry their names both ways. A long one (a snippet, for find_similar_code) is
    code already, and compares best with unit texts as it is."""
    if len(query) > MAX_SPELLED_QUERY_CHARS:
        return query
    spelled = [
        split_identifier(word)
        for word in _IDENTIFIER.findall(query)
        if split_identifier(word) != word.lower()
    ]
    return f"{query}\n{' '.join(spelled)}" if spelled else query


def unit_payload(unit: CodeUnit) -> dict[str, Any]:
    """Everything but the body (the file on disk holds it; payloads stay small)."""
    payload = unit.model_dump(mode="json", exclude={"body"})
    if unit.docstring is not None:
        payload["docstring"] = unit.docstring[:MAX_PAYLOAD_DOCSTRING_CHARS]
    return payload


def code_hit(
    point_id: str, payload: dict[str, Any], score: float, similarity: float | None = None
) -> CodeHit:
    fields = {key: value for key, value in payload.items() if key in CodeHit.model_fields}
    # Cosine similarity is in [-1, 1]; the contract promises [0, 1] for the score.
    return CodeHit(**{**fields, "id": point_id, "score": min(1.0, max(0.0, score)), "similarity": similarity})
