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
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from learning_memory.cli.export_file import CheckedFile, ExportWriter, check_file, read_lines
from learning_memory.cli.values_markdown import parse_values, render_values
from learning_memory.server.journal.files import atomic_write
from learning_memory.server.journal.journal import Journal
from learning_memory.server.transport import Transport
from learning_memory.server.value_suggestions import keep_suggestions, suggestions_path
from learning_memory.shared.contracts.experiences import GhapEntry
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
    ExportItemsResponse,
    ExportLine,
    GhapLine,
    ImportItemsRequest,
    StoredItem,
    StoredKind,
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


class _Reader:
    """Pages of one kind's records through ``export_items``, noting the model and the vectors' size."""

    def __init__(self, jobs: Transport, with_vectors: bool, model: str) -> None:
        self.jobs = jobs
        self.with_vectors = with_vectors
        self.model = model
        self.dimension: int | None = None

    async def _run(self, request: ExportItemsRequest) -> ExportItemsResponse:
        page = await self.jobs.run(EXPORT_ITEMS, request, budget_s=EXPORT_ITEMS.timeout_s)
        self.model, self.dimension = page.embedding_model, page.dimension or self.dimension
        return page

    async def pages(self, kind: StoredKind, project: str | None = None) -> AsyncIterator[list[StoredItem]]:
        offset: int | None = 0
        while offset is not None:
            request = ExportItemsRequest(
                kind=kind, project=project, offset=offset, limit=PAGE, with_vectors=self.with_vectors
            )
            page = await self._run(request)
            yield page.items
            offset = page.next_offset

    async def experiences(self, ghap_ids: list[str]) -> AsyncIterator[list[StoredItem]]:
        for start in range(0, len(ghap_ids), PAGE):
            chosen = ghap_ids[start : start + PAGE]
            request = ExportItemsRequest(kind="experience", ghap_ids=chosen, with_vectors=self.with_vectors)
            yield (await self._run(request)).items


def _members(value: ValueLine) -> list[str]:
    try:
        found = json.loads(str(value.payload.get("member_ghap_ids") or "[]"))
    except ValueError:
        return []
    return [str(item) for item in found] if isinstance(found, list) else []


def _of_project(value: ValueLine, project: str, experiences: set[str]) -> bool:
    """A value is a project's when it is anchored there, or, anchored nowhere, when most of the
    experiences it was validated against are that project's."""
    owner = value.payload.get("project")
    if owner is not None:
        return bool(owner == project)
    members = _members(value)
    return bool(members) and 2 * sum(member in experiences for member in members) > len(members)


def _entries(journal: Journal, project: str | None, journal_project: str | None) -> list[GhapEntry]:
    """The archive's entries of ``project``: the agent's own carry none, and are the project's
    whose folder the journal is in (``journal_project``)."""
    return [
        entry
        for entry in journal.archived()
        if project is None
        or entry.project == project
        or (entry.project is None and project == journal_project)
    ]


async def export_store(
    jobs: Transport,
    journal: Journal,
    target: Path,
    *,
    project: str | None,
    with_vectors: bool,
    model: str,
    journal_project: str | None = None,
) -> ExportHeader:
    """Write the store's records and the journal's archive, of ``project`` (None: all), to ``target``."""
    reader = _Reader(jobs, with_vectors, model)
    with ExportWriter(target) as writer:
        async for items in reader.pages("memory", project):
            for item in items:
                writer.write(item)
        exported: set[str] = set()
        entries = await asyncio.to_thread(_entries, journal, project, journal_project)
        async for items in reader.pages("experience", project):
            for item in items:
                writer.write(item)
                exported.add(item.id)
        if project is not None:  # the agent's own experiences, as its journal names them
            async for items in reader.experiences([e.id for e in entries if e.id not in exported]):
                for item in items:
                    writer.write(item)
                    exported.add(item.id)
        async for items in reader.pages("value"):  # few: all read, a project's chosen here
            for item in items:
                if project is None or (isinstance(item, ValueLine) and _of_project(item, project, exported)):
                    writer.write(item)
        for entry in entries:
            writer.write(GhapLine(entry=entry))
        header = ExportHeader(
            exported_at=datetime.now(UTC),
            project=project,
            embedding_model=reader.model,
            dimension=reader.dimension,
            counts=dict(writer.counts),
        )
        await asyncio.to_thread(writer.commit, header)
    _say(f"export: {', '.join(f'{n} {PLURAL[k]}' for k, n in header.counts.items())}")
    return header


async def export_values_markdown(
    jobs: Transport,
    journal: Journal,
    target: Path,
    *,
    project: str | None,
    model: str,
    journal_project: str | None = None,
) -> int:
    reader = _Reader(jobs, False, model)
    experiences: set[str] = set()
    if project is not None:
        entries = await asyncio.to_thread(_entries, journal, project, journal_project)
        experiences = {entry.id for entry in entries}
        async for items in reader.pages("experience", project):
            experiences.update(item.id for item in items)
    values: list[ValueLine] = []
    async for items in reader.pages("value"):
        values += [
            item
            for item in items
            if isinstance(item, ValueLine) and (project is None or _of_project(item, project, experiences))
        ]
    text = render_values(values, project=project, model=reader.model, now=datetime.now(UTC))
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
    # The agent's own GHAP entries carry no project: this folder's journal holds this folder's.
    here = resolve_project(".") if scope is not None else None
    jobs = await create_transport(settings, in_process_executor)
    journal = Journal(settings.journal_dir, session_id="export")
    try:
        if markdown:
            count = await export_values_markdown(
                jobs, journal, target, project=scope, model=settings.embedding_model, journal_project=here
            )
            print(json.dumps({"file": str(target), "project": scope, "values": count}))
            return 0
        header = await export_store(
            jobs,
            journal,
            target,
            project=scope,
            with_vectors=vectors,
            model=settings.embedding_model,
            journal_project=here,
        )
    finally:
        journal.close()
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
