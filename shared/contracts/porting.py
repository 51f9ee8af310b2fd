"""Export and import: the lines of an export file, and the jobs that read and write the store's side.

An export file is JSON Lines: an :class:`ExportHeader`, then one object a line, each a memory, an
experience (its points on every axis it has), a value, or an archived GHAP entry. Stored records
travel with their exact payloads, so an import restores them as they were (their ids too: an
import is an upsert, and importing twice changes nothing); their vectors travel only when asked
for, else the importing worker embeds their text again. The GHAP archive is the server's (its
journal), so ``ghap`` lines never reach a job.

Values from another project are not restored as they were (their clusters are that project's):
they come in as *suggestions* (:data:`ADOPT_VALUES`), each validated against this store's clusters
of its axis, and stored as a value only when one takes it.
"""

from __future__ import annotations

import base64
import struct
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, Field, field_validator, model_validator

from learning_memory.shared.contracts.experiences import Axis, ExperienceHit, GhapEntry, point_id
from learning_memory.shared.contracts.learning import MAX_VALUE_CHARS, ValueRecord
from learning_memory.shared.contracts.memory import MemoryRecord
from learning_memory.shared.errors import ValidationError
from learning_memory.shared.jobs import Contract, JobSpec
from learning_memory.shared.keys import Queue

FORMAT = "learning-memory-export"
VERSION = 1
StoredKind = Literal["memory", "experience", "value"]  # what lives in the vector store
LineKind = Literal["memory", "experience", "value", "ghap"]
STORED_KINDS: tuple[str, ...] = get_args(StoredKind)
LINE_KINDS: tuple[str, ...] = get_args(LineKind)
MAX_PAGE = 1_000
MAX_SUGGESTIONS = 200
# Fixed, so a suggestion gets the same id from every file that carries its words.
SUGGESTION_NAMESPACE = uuid.UUID("0c3e6f4a-7d51-4a8e-b2f9-5e1d2c4b7a90")


def encode_vector(vector: Sequence[float]) -> str:
    """A vector as base64 of little-endian float32: exact for what the store holds, and a quarter
    of the size of its numbers in decimal."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


def decode_vector(text: str) -> list[float]:
    """The inverse of :func:`encode_vector`; ValidationError for anything else."""
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError as exc:
        raise ValidationError(f"a vector is not base64: {exc}") from None
    if not raw or len(raw) % 4:
        raise ValidationError(f"a vector of {len(raw)} bytes is not a list of float32")
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def suggestion_id(axis: str, text: str) -> str:
    """A suggested value's id, from its axis and words (spacing aside)."""
    return str(uuid.uuid5(SUGGESTION_NAMESPACE, f"{axis}:{' '.join(text.split())}"))


def _record_fields(model: type[BaseModel], payload: dict[str, Any], skip: set[str]) -> dict[str, Any]:
    return {key: value for key, value in payload.items() if key in model.model_fields and key not in skip}


class PortedPoint(Contract):
    """One point of the vector store as it is stored: its id, its payload, and its vector when
    the export was asked for vectors."""

    id: str
    payload: dict[str, Any]
    vector: str | None = Field(default=None, exclude_if=lambda value: value is None)

    @field_validator("id")
    @classmethod
    def _uuid(cls, value: str) -> str:
        return str(uuid.UUID(value))  # what the vector store takes (ValueError otherwise)


class MemoryLine(PortedPoint):
    kind: Literal["memory"] = "memory"

    @model_validator(mode="after")
    def _a_memory(self) -> MemoryLine:
        # The payload must read back as the tools read a stored memory.
        MemoryRecord(**_record_fields(MemoryRecord, self.payload, {"id"}), id=self.id)
        if not str(self.payload["content"]).strip():
            raise ValueError(f"memory {self.id} has no content")
        return self


class ValueLine(PortedPoint):
    kind: Literal["value"] = "value"

    @model_validator(mode="after")
    def _a_value(self) -> ValueLine:
        # As list_values reads it; the member ids are stored as one JSON string (learning jobs).
        skip = {"id", "member_ghap_ids", "age_days", "weight"}
        ValueRecord(**_record_fields(ValueRecord, self.payload, skip), id=self.id, member_ghap_ids=[])
        if not str(self.payload["text"]).strip():
            raise ValueError(f"value {self.id} has no text")
        return self


class ExperienceLine(Contract):
    """An experience: its points on each axis it was stored on, by axis (full always)."""

    kind: Literal["experience"] = "experience"
    id: str = Field(min_length=1)  # the GHAP entry's id
    axes: dict[Axis, PortedPoint]

    @model_validator(mode="after")
    def _an_experience(self) -> ExperienceLine:
        if "full" not in self.axes:
            raise ValueError(f"experience {self.id} has no point on axis full")
        for axis, point in self.axes.items():
            # Ids follow from the entry's id, so persisting it again replaces these very points.
            if point.id != point_id(self.id, axis):
                raise ValueError(
                    f"experience {self.id}: its {axis} point's id is not {point_id(self.id, axis)}"
                )
            if point.payload.get("ghap_id") != self.id:
                raise ValueError(f"experience {self.id}: its {axis} point belongs to another entry")
            fields = _record_fields(ExperienceHit, point.payload, {"id", "score"})
            ExperienceHit(**fields, id=point.id, score=0.0)
            # What the axis texts are rebuilt from, when the vectors are made again, beyond a hit's.
            datetime.fromisoformat(str(point.payload.get("resolved_at")))
        return self


class GhapLine(Contract):
    kind: Literal["ghap"] = "ghap"
    entry: GhapEntry  # resolved: only the archive is exported

    @model_validator(mode="after")
    def _archived(self) -> GhapLine:
        if self.entry.resolution is None:
            raise ValueError(f"GHAP entry {self.entry.id} is not resolved; only the archive is exported")
        if "/" in self.entry.id or self.entry.id.startswith(".") or not self.entry.id.strip():
            raise ValueError(f"{self.entry.id!r} cannot name a journal file")
        return self


StoredItem = Annotated[MemoryLine | ExperienceLine | ValueLine, Field(discriminator="kind")]
ExportLine = Annotated[MemoryLine | ExperienceLine | ValueLine | GhapLine, Field(discriminator="kind")]


class ExportHeader(Contract):
    """The first line of an export file."""

    format: Literal["learning-memory-export"] = "learning-memory-export"
    version: int = VERSION
    exported_at: datetime
    project: str | None  # the one project exported, None for all
    embedding_model: str
    dimension: int | None  # of the vectors in the file; None when it carries none
    counts: dict[LineKind, int]


# --- jobs --------------------------------------------------------------------------


class ExportItemsRequest(Contract):
    kind: StoredKind
    project: str | None = None
    # Pages are in point id order: the same store gives the same pages, none skipped or repeated.
    offset: int = Field(default=0, ge=0)
    limit: int = Field(default=200, ge=1, le=MAX_PAGE)
    with_vectors: bool = False
    # Experiences only: these (by GHAP id), whatever their project, in one page (offset ignored).
    # The agent's own entries carry no project; its journal (in the project's folder) says whose.
    ghap_ids: list[str] | None = Field(default=None, max_length=MAX_PAGE)


class ExportItemsResponse(Contract):
    items: list[StoredItem]
    next_offset: int | None  # None: this was the last page
    total: int  # records of this kind (and project) when the page was read
    embedding_model: str
    dimension: int | None  # of the vectors sent, when any


class ImportItemsRequest(Contract):
    items: list[StoredItem] = Field(max_length=MAX_PAGE)
    # What the items' vectors were made with: used when both match this worker's model, else
    # the text is embedded again.
    embedding_model: str | None = None
    dimension: int | None = None


class ImportItemsResponse(Contract):
    imported: int
    present: int  # an item with that id is in the store already: left as it is
    # Texts embedded here (the file had no vectors, or another model's): one per experience axis.
    re_embedded: int


class ValueSuggestion(Contract):
    id: str  # suggestion_id(axis, text): the same suggestion from every file
    text: str = Field(min_length=1, max_length=MAX_VALUE_CHARS)
    axis: Axis
    created_at: datetime
    origin: str | None = None  # the project (or file) it came from


SuggestionOutcome = Literal["stored", "present", "rejected"]


class AdoptedValue(Contract):
    id: str
    text: str
    axis: Axis
    outcome: SuggestionOutcome
    cluster_id: str | None = None  # the cluster that took it, or the nearest one that did not
    centroid_distance: float | None = None
    threshold_distance: float | None = None
    reason: str | None = None  # why it was not stored


class AdoptValuesRequest(Contract):
    suggestions: list[ValueSuggestion] = Field(max_length=MAX_SUGGESTIONS)


class AdoptValuesResponse(Contract):
    results: list[AdoptedValue]  # in the order of the suggestions


# Batch: a big export or import must never hold up a search.
EXPORT_ITEMS: JobSpec[ExportItemsRequest, ExportItemsResponse] = JobSpec(
    "export_items", ExportItemsRequest, ExportItemsResponse, Queue.BATCH, timeout_s=300
)
IMPORT_ITEMS: JobSpec[ImportItemsRequest, ImportItemsResponse] = JobSpec(
    "import_items", ImportItemsRequest, ImportItemsResponse, Queue.BATCH, timeout_s=900
)
ADOPT_VALUES: JobSpec[AdoptValuesRequest, AdoptValuesResponse] = JobSpec(
    "adopt_values", AdoptValuesRequest, AdoptValuesResponse, Queue.BATCH, timeout_s=900
)
