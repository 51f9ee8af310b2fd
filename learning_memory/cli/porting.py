"""``learning-memory export`` and ``learning-memory import``: the store and the GHAP archive to a
file and back, or the values as Markdown a team can commit.

Like ``mine``, the commands run jobs through the transport the server uses: a worker through
Redis, or this process in inline mode (which opens the embedded store itself: no session may hold
it meanwhile). The GHAP archive is the journal's, read and written here.

What an import does with values depends on where they come from. A whole-store export (no
``--project``) is a backup: importing it restores every value as it was, with the experiences it
was validated against. Values of another project (an export of project P imported in project
Q ≠ P, or ``--values-md``) are suggestions: each counts only once one of this store's clusters
takes it (``adopt_values``); the rest are kept in ``<state>/value_suggestions.json`` and reported.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from learning_memory.cli.export_file import CheckedFile, ExportWriter, check_file, read_lines
from learning_memory.cli.values_markdown import parse_values, render_values
from learning_memory.server.journal.journal import Journal
from learning_memory.server.transport import Transport
from learning_memory.server.value_suggestions import keep_suggestions, suggestions_path
from learning_memory.shared.contracts.porting import (
    ADOPT_VALUES,
    EXPORT_ITEMS,
    IMPORT_ITEMS,
    MAX_SUGGESTIONS,
    STORED_KINDS,
    AdoptedValue,
    AdoptValuesRequest,
    ExportHeader,
    ExportItemsRequest,
    ExportLine,
    GhapLine,
    ImportItemsRequest,
    StoredItem,
    ValueLine,
    ValueSuggestion,
    suggestion_id,
)
from learning_memory.shared.errors import ValidationError
from learning_memory.shared.settings import Settings

PAGE = 200  # records a job reads or writes
PLURAL = {"memory": "memories", "experience": "experiences", "value": "values", "ghap": "ghap"}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def resolve_project(value: str | None) -> str | None:
    """A project id as given, or the project of a folder (``.``: the one this command runs in)."""
    if value is None:
        return None
    folder = Path(value).expanduser()
    if folder.is_dir():
        from learning_memory.server.capture.project import place_of

        return place_of(str(folder)).project
    return value


# --- export ---------------------------------------------------------------------------


async def export_store(
    jobs: Transport, journal: Journal, target: Path, *, project: str | None, with_vectors: bool, model: str
) -> ExportHeader:
    """Write the store's records (and the journal's archive) of ``project`` (None: all) to ``target``."""
    dimension: int | None = None
    with ExportWriter(target) as writer:
        for kind in STORED_KINDS:
            offset: int | None = 0
            while offset is not None:
                request = ExportItemsRequest(
                    kind=kind,
                    project=project,
                    offset=offset,
                    limit=PAGE,
                    with_vectors=with_vectors,
                )
                page = await jobs.run(EXPORT_ITEMS, request, budget_s=EXPORT_ITEMS.timeout_s)
                for item in page.items:
                    writer.write(item)
                model, dimension = page.embedding_model, page.dimension or dimension
                offset = page.next_offset
            _say(f"export: {writer.counts[kind]} {PLURAL[kind]}")
        for entry in await asyncio.to_thread(journal.archived):
            if project is None or entry.project == project:
                writer.write(GhapLine(entry=entry))
        header = ExportHeader(
            exported_at=datetime.now(UTC),
            project=project,
            embedding_model=model,
            dimension=dimension,
            counts=dict(writer.counts),
        )
        await asyncio.to_thread(writer.commit, header)
    return header


async def export_values_markdown(jobs: Transport, target: Path, *, project: str | None, model: str) -> int:
    values: list[ValueLine] = []
    offset: int | None = 0
    while offset is not None:
        request = ExportItemsRequest(kind="value", project=project, offset=offset, limit=PAGE)
        page = await jobs.run(EXPORT_ITEMS, request, budget_s=EXPORT_ITEMS.timeout_s)
        values += [item for item in page.items if isinstance(item, ValueLine)]
        offset, model = page.next_offset, page.embedding_model
    text = render_values(values, project=project, model=model, now=datetime.now(UTC))
    from learning_memory.server.journal.files import atomic_write

    await asyncio.to_thread(atomic_write, target, text.encode())
    return len(values)


# --- import ---------------------------------------------------------------------------


@dataclass
class ImportReport:
    counts: dict[str, dict[str, int]] = field(
        default_factory=lambda: {PLURAL[k]: {"imported": 0, "present": 0} for k in (*STORED_KINDS, "ghap")}
    )
    re_embedded: int = 0
    suggestions: list[AdoptedValue] = field(default_factory=list)
    kept_in: Path | None = None

    def as_dict(self) -> dict[str, Any]:
        outcome = {
            o: sum(1 for s in self.suggestions if s.outcome == o) for o in ("stored", "present", "rejected")
        }
        rejected = [
            {"axis": s.axis, "text": s.text, "reason": s.reason}
            for s in self.suggestions
            if s.outcome == "rejected"
        ]
        report: dict[str, Any] = {**self.counts, "re_embedded": self.re_embedded}
        if self.suggestions:
            report["suggestions"] = {**outcome, "rejected_values": rejected, "kept_in": str(self.kept_in)}
        return report


class _Importer:
    """Sends a checked file's stored records in batches of one kind, and gathers what is foreign."""

    def __init__(self, jobs: Transport, header: ExportHeader, report: ImportReport) -> None:
        self.jobs = jobs
        self.header = header
        self.report = report
        self.batches: dict[str, list[StoredItem]] = {kind: [] for kind in STORED_KINDS}

    async def add(self, item: StoredItem) -> None:
        batch = self.batches[item.kind]
        batch.append(item)
        if len(batch) >= PAGE:
            await self.flush(item.kind)

    async def flush(self, kind: str) -> None:
        batch = self.batches[kind]
        if not batch:
            return
        request = ImportItemsRequest(
            items=list(batch), embedding_model=self.header.embedding_model, dimension=self.header.dimension
        )
        batch.clear()
        done = await self.jobs.run(IMPORT_ITEMS, request, budget_s=IMPORT_ITEMS.timeout_s)
        counts = self.report.counts[PLURAL[kind]]
        counts["imported"] += done.imported
        counts["present"] += done.present
        self.report.re_embedded += done.re_embedded


def _suggestion(line: ValueLine, origin: str | None) -> ValueSuggestion:
    axis, text = str(line.payload["axis"]), str(line.payload["text"])
    return ValueSuggestion(
        id=suggestion_id(axis, text),
        text=text,
        axis=axis,
        created_at=line.payload["created_at"],
        origin=origin,
    )


async def adopt(
    jobs: Transport, suggestions: list[ValueSuggestion], settings: Settings, report: ImportReport
) -> None:
    """Offer ``suggestions`` to this store's clusters; keep the ones none takes."""
    for start in range(0, len(suggestions), MAX_SUGGESTIONS):
        request = AdoptValuesRequest(suggestions=suggestions[start : start + MAX_SUGGESTIONS])
        done = await jobs.run(ADOPT_VALUES, request, budget_s=ADOPT_VALUES.timeout_s)
        report.suggestions += done.results
    if suggestions:
        origins = {s.id: s.origin for s in suggestions}
        report.kept_in = suggestions_path(settings)
        await asyncio.to_thread(keep_suggestions, report.kept_in, report.suggestions, origins)


def _foreign(line: ExportLine, header: ExportHeader, project: str | None) -> str | None:
    """The project a value comes from when that is not ``project`` (None: it is restored)."""
    if project is None or not isinstance(line, ValueLine):
        return None
    origin = line.payload.get("project") or header.project
    return None if origin == project else str(origin or "another store")


async def import_store(
    jobs: Transport,
    journal: Journal,
    source: Path,
    *,
    project: str | None,
    settings: Settings,
    checked: CheckedFile | None = None,
) -> ImportReport:
    """Bring a file's records back (checked whole first, unless ``checked`` already: a bad file
    imports nothing); values of another project than ``project`` come in as suggestions."""
    if checked is None:
        checked = await asyncio.to_thread(check_file, source)
    report = ImportReport()
    importer = _Importer(jobs, checked.header, report)
    suggestions: list[ValueSuggestion] = []
    for line in read_lines(source):
        if isinstance(line, GhapLine):
            # Its experience is in the file, or it is left in the outbox for the server to store.
            persist = line.entry.id not in checked.experience_ids
            written = await asyncio.to_thread(journal.import_archived, line.entry, persist=persist)
            report.counts["ghap"]["imported" if written else "present"] += 1
        elif (origin := _foreign(line, checked.header, project)) is not None:
            suggestions.append(_suggestion(line, origin))  # type: ignore[arg-type]
        else:
            await importer.add(line)
    for kind in STORED_KINDS:
        await importer.flush(kind)
    await adopt(jobs, suggestions, settings, report)
    return report


async def import_values_markdown(jobs: Transport, source: Path, *, settings: Settings) -> ImportReport:
    try:
        text = await asyncio.to_thread(source.read_text, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read {source}: {exc}") from None
    now = datetime.now(UTC)
    suggestions = [
        ValueSuggestion(
            id=suggestion_id(value.axis, value.text),
            text=value.text,
            axis=value.axis,
            created_at=value.created_at or now,
            origin=value.project or source.name,
        )
        for value in parse_values(text, str(source))
    ]
    report = ImportReport()
    await adopt(jobs, suggestions, settings, report)
    return report


# --- the commands -----------------------------------------------------------------------


def _one_file(file: Path | None, values_md: Path | None, command: str) -> tuple[Path, bool]:
    if (file is None) == (values_md is None):
        raise ValidationError(f"{command}: give a FILE, or --values-md FILE (not both)")
    return (values_md, True) if values_md is not None else (file, False)  # type: ignore[return-value]


async def run_export(file: Path | None, values_md: Path | None, project: str | None, vectors: bool) -> int:
    from learning_memory.composition import in_process_executor
    from learning_memory.server.transport import create_transport
    from learning_memory.shared.settings import get_settings

    target, markdown = _one_file(file, values_md, "export")
    target = target.expanduser().absolute()
    if not target.parent.is_dir():
        raise ValidationError(f"export: no folder {target.parent} to write {target.name} in")
    settings = get_settings()
    scope = resolve_project(project)
    jobs = await create_transport(settings, in_process_executor)
    try:
        if markdown:
            count = await export_values_markdown(jobs, target, project=scope, model=settings.embedding_model)
            print(json.dumps({"file": str(target), "values": count}))
            return 0
        journal = Journal(settings.journal_dir, session_id="export")
        try:
            header = await export_store(
                jobs, journal, target, project=scope, with_vectors=vectors, model=settings.embedding_model
            )
        finally:
            journal.close()
    finally:
        await jobs.close()
    print(json.dumps({"file": str(target), "project": scope, "counts": header.counts}))
    return 0


def _import_project(given: str | None, header_project: str | None) -> str | None:
    if given is not None:
        return resolve_project(given)
    # A whole-store export is a backup: restored as it was. One project's export is compared with
    # the project this command runs in: its values count here only if that is the same project.
    return resolve_project(".") if header_project is not None else None


async def run_import(file: Path | None, values_md: Path | None, project: str | None) -> int:
    from learning_memory.composition import in_process_executor
    from learning_memory.server.transport import create_transport
    from learning_memory.shared.settings import get_settings

    source, markdown = _one_file(file, values_md, "import")
    settings = get_settings()
    checked, target = None, None
    if not markdown:
        checked = await asyncio.to_thread(check_file, source)  # before any transport or worker starts
        target = _import_project(project, checked.header.project)
    jobs = await create_transport(settings, in_process_executor)
    try:
        if markdown:
            report = await import_values_markdown(jobs, source, settings=settings)
        else:
            journal = Journal(settings.journal_dir, session_id="import")
            try:
                report = await import_store(
                    jobs, journal, source, project=target, settings=settings, checked=checked
                )
            finally:
                journal.close()
    finally:
        await jobs.close()
    print(json.dumps({"file": str(source), **report.as_dict()}, indent=2))
    return 0
