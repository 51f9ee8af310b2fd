"""The export file and the values Markdown, without a store: lines checked as they are read, a bad or
cut-short file refused naming its line, the file written atomically, Markdown read back as written,
the kept suggestions, and the journal's archive export and import."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from learning_memory.cli.export_file import ExportWriter, check_file, read_lines
from learning_memory.cli.values_markdown import parse_values, render_values
from learning_memory.server.journal.journal import Journal
from learning_memory.server.value_suggestions import keep_suggestions, load_suggestions
from learning_memory.shared.contracts.experiences import point_id
from learning_memory.shared.contracts.porting import (
    AdoptedValue,
    ExperienceLine,
    ExportHeader,
    GhapLine,
    MemoryLine,
    ValueLine,
    decode_vector,
    encode_vector,
    suggestion_id,
)
from learning_memory.shared.errors import ValidationError
from learning_memory.worker.jobs.experiences import payload as experience_payload
from tests.learning_data import ghap_entry
from tests.unit.test_learning_jobs import SAMPLES

NOW = datetime(2025, 6, 1, 12, tzinfo=UTC)
MEMORY_ID = str(uuid.UUID(int=7))


def memory_line(vector: list[float] | None = None, **changes: Any) -> MemoryLine:
    payload = {
        "content": "The staging database is refreshed every Sunday.",
        "category": "fact",
        "importance": 0.5,
        "tags": [],
        "created_at": "2025-05-01T00:00:00Z",
        "created_ts": 1746057600.0,
        **changes,
    }
    return MemoryLine(id=MEMORY_ID, payload=payload, vector=encode_vector(vector) if vector else None)


def experience_line(number: int = 0) -> ExperienceLine:
    entry = ghap_entry(SAMPLES[number], number)
    assert entry.resolution is not None
    axes = {
        axis: {"id": point_id(entry.id, axis), "payload": experience_payload(entry, entry.resolution, axis)}
        for axis in ("full", "strategy")
    }
    return ExperienceLine.model_validate({"id": entry.id, "axes": axes})


def value_payload(text: str, axis: str = "full", **changes: Any) -> dict[str, Any]:
    return {
        "text": text,
        "axis": axis,
        "cluster_id": f"cluster_{axis}_0",
        "cluster_size": 12,
        "similarity_to_centroid": 0.9,
        "created_at": "2025-05-01T00:00:00Z",
        "clustering_id": f"{axis}-v1-n40",
        "member_ghap_ids": "[]",
        "centroid_distance": 0.41,
        "threshold_distance": 0.52,
        "support": 14,
        "evidence_ts": NOW.timestamp() - 3 * 86_400,
        "project": "repo-abc",
        **changes,
    }


def write_file(path: Path, lines: list[Any], dimension: int | None = None) -> ExportHeader:
    with ExportWriter(path) as writer:
        for line in lines:
            writer.write(line)
        header = ExportHeader(
            exported_at=NOW,
            project=None,
            embedding_model="m",
            dimension=dimension,
            counts=dict(writer.counts),
        )
        writer.commit(header)
    return header


def test_vectors_travel_exactly_and_bad_ones_are_named() -> None:
    vector = [0.25, -1.5, 3.0e-7]
    assert decode_vector(encode_vector(vector)) == pytest.approx(vector, rel=1e-6)
    with pytest.raises(ValidationError, match="not base64"):
        decode_vector("not base64!")
    with pytest.raises(ValidationError, match="is not a list of float32"):
        decode_vector("AAA=")
    assert suggestion_id("full", "Run  the test\nfirst") == suggestion_id("full", "Run the test first")
    assert suggestion_id("full", "Run the test first") != suggestion_id("strategy", "Run the test first")


def test_lines_are_checked_as_stored_records() -> None:
    with pytest.raises(ValueError, match="UUID"):
        MemoryLine(id="not-a-uuid", payload=memory_line().payload)
    with pytest.raises(ValueError, match="category"):
        memory_line(category="gossip")
    with pytest.raises(ValueError, match="text"):
        ValueLine(id=MEMORY_ID, payload={"axis": "full"})
    with pytest.raises(ValueError, match="has no content"):
        memory_line(content=" ")
    with pytest.raises(ValueError, match="has no text"):
        ValueLine(id=MEMORY_ID, payload=value_payload("  "))
    line = experience_line()
    moved = line.axes["strategy"].model_copy(update={"id": str(uuid.UUID(int=1))})
    with pytest.raises(ValueError, match="strategy point's id is not"):
        ExperienceLine(id=line.id, axes={**line.axes, "strategy": moved})
    with pytest.raises(ValueError, match="no point on axis full"):
        ExperienceLine(id=line.id, axes={"strategy": line.axes["strategy"]})
    other = experience_line(1).axes["full"]
    with pytest.raises(ValueError, match="belongs to another entry"):
        ExperienceLine(id=line.id, axes={"full": other.model_copy(update={"id": point_id(line.id, "full")})})
    unresolved = {k: v for k, v in line.axes["full"].payload.items() if k != "resolved_at"}
    with pytest.raises(ValueError, match="Invalid isoformat"):
        ExperienceLine(
            id=line.id, axes={"full": line.axes["full"].model_copy(update={"payload": unresolved})}
        )
    entry = ghap_entry(SAMPLES[0], 0)
    with pytest.raises(ValueError, match="not resolved"):
        GhapLine(entry=entry.model_copy(update={"resolution": None}))
    with pytest.raises(ValueError, match="cannot name a journal file"):
        GhapLine(entry=entry.model_copy(update={"id": "../x"}))


def test_a_file_is_written_whole_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    entry = ghap_entry(SAMPLES[0], 0)
    experience = experience_line()
    lines = [memory_line([0.5, 0.25]), experience, GhapLine(entry=entry)]
    header = write_file(path, lines, dimension=2)
    raw = path.read_text().splitlines()
    assert json.loads(raw[0])["format"] == "learning-memory-export" and raw[1].startswith('{"kind":"memory",')
    assert header.counts == {"memory": 1, "experience": 1, "value": 0, "ghap": 1}
    checked = check_file(path)
    assert checked.header == header and checked.experience_ids == {experience.id}
    assert list(read_lines(path)) == lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]  # no temporary file left


def test_an_interrupted_export_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text("old\n")
    with pytest.raises(RuntimeError), ExportWriter(path) as writer:
        writer.write(memory_line())
        raise RuntimeError("worker gone")
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda lines: ["{}", *lines[1:]], "is not a learning-memory export: line 1"),
        (lambda lines: ["not json", *lines[1:]], "is not a learning-memory export: line 1"),
        (
            lambda lines: [lines[0].replace('"version":1', '"version":9'), *lines[1:]],
            "export format 9, newer than this learning-memory reads",
        ),
        (
            lambda lines: [lines[0].replace('"embedding_model":"m"', '"embedding_model":5'), *lines[1:]],
            "line 1: not a valid header: embedding_model",
        ),
        (lambda lines: [*lines[:2], "{not json", *lines[3:]], "line 3: .*Invalid JSON"),
        (lambda lines: [*lines[:2], '{"kind": "secret"}', *lines[3:]], "line 3: .*does not match any"),
        (lambda lines: lines[:2], "incomplete or altered: its header counts"),
        (lambda lines: [*lines[:2], lines[2][:40]], "line 3: .*its last line is cut short"),
        (
            lambda lines: [lines[0].replace('"dimension":2', '"dimension":3'), *lines[1:]],
            "line 2: point .* vector does not have 3 numbers",
        ),
        (
            lambda lines: [lines[0].replace('"dimension":2', '"dimension":null'), *lines[1:]],
            "line 2: point .* has a vector, but the header names no dimension",
        ),
    ],
)
def test_a_bad_file_is_refused_naming_its_line(tmp_path: Path, damage: Any, message: str) -> None:
    path = tmp_path / "out.jsonl"
    write_file(
        path, [memory_line([0.5, 0.25]), experience_line(), GhapLine(entry=ghap_entry(SAMPLES[0], 0))], 2
    )
    lines = path.read_text().splitlines()
    damaged = damage(lines)
    path.write_text("\n".join(damaged) + ("" if "cut short" in message else "\n"))
    with pytest.raises(ValidationError, match=message):
        check_file(path)


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="cannot read"):
        check_file(tmp_path / "none.jsonl")


def test_values_markdown_reads_back_what_it_wrote() -> None:
    values = [
        ValueLine(id=str(uuid.UUID(int=1)), payload=value_payload("Run the failing test alone first.")),
        ValueLine(
            id=str(uuid.UUID(int=2)),
            payload=value_payload("Read the error\nbefore searching.", support=30, project=None),
        ),
        ValueLine(id=str(uuid.UUID(int=3)), payload=value_payload("Check the clock.", axis="root_cause")),
    ]
    text = render_values(values, project="repo-abc", model="m", now=NOW)
    assert "## full" in text and "## root_cause" in text and "## strategy" not in text
    assert "support: 14 experiences, the latest 3.0 days ago" in text
    assert "distance to the cluster's centroid 0.410 (threshold 0.520)" in text
    # The best supported first.
    assert text.index("Read the error") < text.index("Run the failing test")
    parsed = parse_values(text, "values.md")
    assert [(v.axis, v.text) for v in parsed] == [
        ("full", "Read the error\nbefore searching."),
        ("full", "Run the failing test alone first."),
        ("root_cause", "Check the clock."),
    ]
    assert parsed[1].created_at == datetime(2025, 5, 1, tzinfo=UTC) and parsed[1].project == "repo-abc"
    assert parsed[0].project is None
    # By hand: a quote under an axis heading is enough.
    [by_hand] = parse_values("# Ours\n\n## strategy\n\n> Ask before guessing.\n", "ours.md")
    assert (by_hand.axis, by_hand.text, by_hand.created_at, by_hand.line) == (
        "strategy",
        "Ask before guessing.",
        None,
        5,
    )


@pytest.mark.parametrize(
    ("markdown", "message"),
    [
        ("> A value\n", "line 1: a value before any axis heading"),
        ("## feelings\n", "line 1: 'feelings' is not an axis"),
        ("## full\n>\n>  \n", "line 2: an empty value"),
        ("## full\n> " + "x" * 501 + "\n", "line 2: a value of 501 characters"),
        ("## full\n<!-- learning-memory-value {} -->\n", "line 2: a value's comment with no value above"),
        (
            "## full\n> A value\n<!-- learning-memory-value [1] -->\n",
            "line 3: .* does not hold a JSON object",
        ),
        (
            '## full\n> A value\n<!-- learning-memory-value {"created_at": "soon"} -->\n',
            "line 3: created_at 'soon' is not a time",
        ),
    ],
)
def test_bad_markdown_is_refused_naming_its_line(markdown: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_values(markdown, "values.md")


def adopted(text: str, outcome: str) -> AdoptedValue:
    return AdoptedValue(id=suggestion_id("full", text), text=text, axis="full", outcome=outcome, reason="far")


def test_rejected_suggestions_are_kept_until_a_cluster_takes_them(tmp_path: Path) -> None:
    path = tmp_path / "state" / "value_suggestions.json"
    assert load_suggestions(path) == []
    kept = keep_suggestions(
        path, [adopted("B", "rejected"), adopted("A", "rejected"), adopted("C", "stored")], {}
    )
    assert [k.suggestion.text for k in kept] == ["A", "B"]
    kept = keep_suggestions(path, [adopted("A", "stored")], {suggestion_id("full", "B"): "repo-x"})
    assert [k.suggestion.text for k in load_suggestions(path)] == ["B"] == [k.suggestion.text for k in kept]
    path.write_text("{broken")
    assert load_suggestions(path) == []


def test_the_archive_is_exported_and_imported_once(tmp_path: Path) -> None:
    source = Journal(tmp_path / "a", "s1")
    entry = source.start(
        domain="debugging", strategy="read-the-error", goal="g", hypothesis="h", action="a", prediction="p"
    )[0]
    resolved = source.resolve(status="confirmed", result="ok")
    assert [e.id for e in source.archived()] == [entry.id]
    target = Journal(tmp_path / "b", "s2")
    assert target.import_archived(resolved, persist=True) is True
    assert target.import_archived(resolved, persist=True) is False
    assert target.archived() == [resolved] and [e.id for e in target.outbox()] == [entry.id]
    other = ghap_entry(SAMPLES[1], 1)
    assert target.import_archived(other, persist=False) is True
    assert [e.id for e in target.outbox()] == [entry.id]  # its experience came with it
    with pytest.raises(ValidationError, match="Not a resolved GHAP entry"):
        target.import_archived(other.model_copy(update={"resolution": None}), persist=False)
    source.close()
    target.close()
