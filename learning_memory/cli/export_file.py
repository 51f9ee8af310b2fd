"""The export file on disk: JSON Lines, a header then one record a line (``shared.contracts.porting``).

Written into a temporary file beside the target and renamed over it once whole, so a reader never
sees half a file and an interrupted export leaves the old one. Read twice on import: once to check
every line (a bad or cut-short file is refused, naming the line, before anything is written), then
to bring the lines in, so a big file is never held in memory whole.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import pydantic
from pydantic import TypeAdapter

from learning_memory.shared.contracts.porting import (
    FORMAT,
    LINE_KINDS,
    VERSION,
    ExperienceLine,
    ExportHeader,
    ExportLine,
    PortedPoint,
    decode_vector,
)
from learning_memory.shared.errors import ValidationError

LINE: TypeAdapter[ExportLine] = TypeAdapter(ExportLine)
SHOWN_PROBLEMS = 3


def _problems(exc: pydantic.ValidationError) -> str:
    shown = [f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}" for e in exc.errors()[:SHOWN_PROBLEMS]]
    more = exc.error_count() - len(shown)
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")


class ExportWriter:
    """Lines go to a temporary body file; :meth:`commit` writes the header (whose counts are only
    known at the end), then the body, into a second temporary file and renames it over the target."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.counts: dict[str, int] = dict.fromkeys(LINE_KINDS, 0)
        self._stem = target.parent / f".{target.name}.{uuid.uuid4().hex}"
        self._body_path = self._stem.with_name(self._stem.name + ".body.tmp")
        self._body: IO[str] = self._body_path.open("w", encoding="utf-8")

    def write(self, line: ExportLine) -> None:
        # The kind first, so a reader (and grep) sees what each line is at once.
        rest = line.model_dump_json(exclude={"kind"})
        self._body.write(f'{{"kind":"{line.kind}",{rest[1:]}\n')
        self.counts[line.kind] += 1

    def commit(self, header: ExportHeader) -> None:
        self._body.close()
        whole = self._stem.with_name(self._stem.name + ".tmp")
        try:
            with whole.open("w", encoding="utf-8") as out, self._body_path.open(encoding="utf-8") as body:
                out.write(header.model_dump_json() + "\n")
                shutil.copyfileobj(body, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(whole, self.target)
        finally:
            whole.unlink(missing_ok=True)
            self._body_path.unlink(missing_ok=True)

    def abort(self) -> None:
        self._body.close()
        self._body_path.unlink(missing_ok=True)

    def __enter__(self) -> ExportWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is not None:
            self.abort()


@dataclass
class CheckedFile:
    """What the first pass found: the header, and the GHAP ids whose experiences the file carries."""

    header: ExportHeader
    counts: dict[str, int] = field(default_factory=dict)
    experience_ids: set[str] = field(default_factory=set)


def _header(path: Path, raw: bytes) -> ExportHeader:
    try:
        data: Any = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValidationError(f"{path} is not a learning-memory export: line 1 is not its header")
    if isinstance(data.get("version"), int) and data["version"] > VERSION:
        raise ValidationError(
            f"{path} was written in export format {data['version']}, newer than this learning-memory "
            f"reads ({VERSION}): upgrade learning-memory to import it"
        )
    try:
        return ExportHeader.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ValidationError(f"{path}, line 1: not a valid header: {_problems(exc)}") from None


def _vectors(line: ExportLine) -> list[PortedPoint]:
    if isinstance(line, ExperienceLine):
        return [point for point in line.axes.values() if point.vector is not None]
    if isinstance(line, PortedPoint) and line.vector is not None:
        return [line]
    return []


def _check_vectors(line: ExportLine, header: ExportHeader) -> None:
    for point in _vectors(line):
        if header.dimension is None:
            raise ValidationError(f"point {point.id} has a vector, but the header names no dimension")
        if len(decode_vector(point.vector or "")) != header.dimension:
            raise ValidationError(f"point {point.id}'s vector does not have {header.dimension} numbers")


def _lines(handle: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    for number, raw in enumerate(handle, start=2):
        if raw.strip():
            yield number, raw


def check_file(path: Path) -> CheckedFile:
    """Read every line and check it; ValidationError naming the first bad line (or a file cut
    short: a last line without its end, or fewer lines than the header counts)."""
    try:
        with path.open("rb") as handle:
            checked = CheckedFile(header=_header(path, handle.readline()))
            counts = dict.fromkeys(LINE_KINDS, 0)
            for number, raw in _lines(handle):
                cut = "" if raw.endswith(b"\n") else " (its last line is cut short: the file is incomplete)"
                try:
                    line = LINE.validate_json(raw)
                    _check_vectors(line, checked.header)
                except pydantic.ValidationError as exc:
                    raise ValidationError(f"{path}, line {number}: {_problems(exc)}{cut}") from None
                except ValidationError as exc:
                    raise ValidationError(f"{path}, line {number}: {exc.message}{cut}") from None
                counts[line.kind] += 1
                if isinstance(line, ExperienceLine):
                    checked.experience_ids.add(line.id)
    except OSError as exc:
        raise ValidationError(f"cannot read {path}: {exc}") from None
    promised = {kind: checked.header.counts.get(kind, 0) for kind in LINE_KINDS}  # type: ignore[call-overload]
    if counts != promised:
        raise ValidationError(
            f"{path} is incomplete or altered: its header counts {promised}, its lines hold {counts}"
        )
    checked.counts = counts
    return checked


def read_lines(path: Path) -> Iterator[ExportLine]:
    """The records of a file :func:`check_file` passed, in order."""
    with path.open("rb") as handle:
        handle.readline()
        for _, raw in _lines(handle):
            yield LINE.validate_json(raw)
