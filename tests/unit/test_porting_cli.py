"""Export and import as the commands run them, on inline transports (hashing embedder, real embedded
stores, real journals): a round trip gives the same answers, importing twice changes nothing, a
bad file imports nothing, one project's values imported elsewhere come in as suggestions, and the
values Markdown brings values in only through this store's clusters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from learning_memory.cli.export_file import check_file
from learning_memory.cli.porting import (
    export_store,
    export_values_markdown,
    import_store,
    import_values_markdown,
    resolve_project,
)
from learning_memory.server.value_suggestions import load_suggestions
from learning_memory.shared.contracts.experiences import PERSIST_EXPERIENCE, PersistExperienceRequest
from learning_memory.shared.contracts.learning import LIST_VALUES, ListValuesRequest
from learning_memory.shared.contracts.memory import LIST_MEMORIES, ListMemoriesRequest
from learning_memory.shared.errors import ValidationError
from tests.learning_data import ghap_entry
from tests.porting_data import BUDGET_S, FACTS, PROJECT, answers, assert_same_answers, place, populate
from tests.unit.test_learning_jobs import SAMPLES

EXPERIENCES = 40


async def test_a_round_trip_gives_the_same_answers_and_twice_changes_nothing(tmp_path: Path) -> None:
    file = tmp_path / "export.jsonl"
    async with place(tmp_path / "a") as source:
        await populate(source, EXPERIENCES)
        before = await answers(source)
        header = await export_store(
            source.jobs, source.journal, file, project=None, with_vectors=False, model="hashing:384"
        )
    assert header.counts == {"memory": len(FACTS), "experience": EXPERIENCES, "value": 1, "ghap": EXPERIENCES}
    assert header.dimension is None and check_file(file).header == header

    async with place(tmp_path / "b") as target:
        report = await import_store(target.jobs, target.journal, file, project=None, settings=target.settings)
        done = report.as_dict()
        assert done["memories"] == {"imported": len(FACTS), "present": 0}
        assert done["experiences"] == {"imported": EXPERIENCES, "present": 0}
        assert done["values"] == {"imported": 1, "present": 0}
        assert done["ghap"] == {"imported": EXPERIENCES, "present": 0}
        assert done["re_embedded"] > EXPERIENCES * 2 and "suggestions" not in done
        assert_same_answers(before, await answers(target))
        assert target.journal.outbox() == []  # every entry's experience came with it

        again = (
            await import_store(target.jobs, target.journal, file, project=None, settings=target.settings)
        ).as_dict()
        assert again["memories"] == {"imported": 0, "present": len(FACTS)}
        assert again["ghap"] == {"imported": 0, "present": EXPERIENCES} and again["re_embedded"] == 0
        assert_same_answers(before, await answers(target))


async def test_one_projects_export_with_vectors(tmp_path: Path) -> None:
    file = tmp_path / "project.jsonl"
    async with place(tmp_path / "a") as source:
        await populate(source, EXPERIENCES)
        # The agent's own entry carries no project: the journal it is in (this project's) says whose.
        own = ghap_entry(SAMPLES[0], 999)
        await source.jobs.run(PERSIST_EXPERIENCE, PersistExperienceRequest(entry=own), budget_s=BUDGET_S)
        source.journal.import_archived(own, persist=False)
        header = await export_store(
            source.jobs,
            source.journal,
            file,
            project=PROJECT,
            with_vectors=True,
            model="hashing:384",
            journal_project=PROJECT,
        )
        elsewhere = await export_store(
            source.jobs,
            source.journal,
            tmp_path / "other.jsonl",
            project="repo-other",
            with_vectors=False,
            model="m",
        )
    assert header.project == PROJECT and header.dimension == 384
    assert header.counts == {
        "memory": len([n for n in range(len(FACTS)) if n % 2]),
        "experience": EXPERIENCES + 1,
        "value": 1,  # anchored nowhere, but validated on this project's experiences
        "ghap": EXPERIENCES + 1,
    }
    assert elsewhere.counts == {"memory": len(FACTS) // 2, "experience": 0, "value": 0, "ghap": 0}
    async with place(tmp_path / "b") as target:
        report = await import_store(
            target.jobs, target.journal, file, project=PROJECT, settings=target.settings
        )
        assert report.re_embedded == 0 and report.counts["values"]["imported"] == 1
        listed = await target.jobs.run(
            LIST_MEMORIES, ListMemoriesRequest(limit=50, offset=0), budget_s=BUDGET_S
        )
        assert {m.project for m in listed.results} == {PROJECT}


async def test_another_projects_values_come_as_suggestions(tmp_path: Path) -> None:
    file = tmp_path / "theirs.jsonl"
    async with place(tmp_path / "a") as source:
        await populate(source, EXPERIENCES)
        await export_store(source.jobs, source.journal, file, project=PROJECT, with_vectors=False, model="x")
    async with place(tmp_path / "b") as target:
        # Validated again here, against this store's clusters (its experiences came in the file).
        done = (
            await import_store(
                target.jobs, target.journal, file, project="repo-ours", settings=target.settings
            )
        ).as_dict()
        assert done["values"] == {"imported": 0, "present": 0}
        assert done["suggestions"]["stored"] == 1 and done["suggestions"]["rejected"] == 0
        [value] = (await target.jobs.run(LIST_VALUES, ListValuesRequest(), budget_s=BUDGET_S)).results
        assert value.cluster_id.startswith("cluster_full_")
        assert load_suggestions(Path(done["suggestions"]["kept_in"])) == []
        again = await import_store(
            target.jobs, target.journal, file, project="repo-ours", settings=target.settings
        )
        assert [s.outcome for s in again.suggestions] == ["present"]


async def test_a_bad_file_imports_nothing(tmp_path: Path) -> None:
    file = tmp_path / "export.jsonl"
    async with place(tmp_path / "a") as source:
        await populate(source, EXPERIENCES)
        await export_store(source.jobs, source.journal, file, project=None, with_vectors=False, model="m")
    lines = file.read_text().splitlines()
    file.write_text("\n".join([*lines[:-3], lines[-3][:-20]]))  # cut short, as a full disk leaves it
    async with place(tmp_path / "b") as target:
        with pytest.raises(ValidationError, match=rf"line {len(lines) - 2}: .*cut short"):
            await import_store(target.jobs, target.journal, file, project=None, settings=target.settings)
        listed = await target.jobs.run(
            LIST_MEMORIES, ListMemoriesRequest(limit=5, offset=0), budget_s=BUDGET_S
        )
        assert listed.total == 0 and target.journal.archived() == []


async def test_values_markdown_brings_values_in_through_this_stores_clusters(tmp_path: Path) -> None:
    markdown = tmp_path / "VALUES.md"
    async with place(tmp_path / "a") as source:
        await populate(source, EXPERIENCES)
        assert (
            await export_values_markdown(source.jobs, source.journal, markdown, project=None, model="m") == 1
        )
        stored = (await source.jobs.run(LIST_VALUES, ListValuesRequest(), budget_s=BUDGET_S)).results[0]
    text = markdown.read_text()
    assert stored.text.splitlines()[0] in text and "cluster `cluster_full_0`" in text
    markdown.write_text(text + "\n## full\n\n> Water the office plants twice a week.\n")

    async with place(tmp_path / "b") as target:
        await populate(target, EXPERIENCES)  # the same experiences: its clusters take the value
        report = (await import_values_markdown(target.jobs, markdown, settings=target.settings)).as_dict()
        assert report["suggestions"]["present"] == 1  # this store holds that value already
        assert report["suggestions"]["rejected"] == 1
        [rejected] = report["suggestions"]["rejected_values"]
        assert rejected["text"] == "Water the office plants twice a week."
        assert "No cluster here takes it" in rejected["reason"]
        [kept] = load_suggestions(Path(report["suggestions"]["kept_in"]))
        assert kept.origin == "VALUES.md" and kept.suggestion.text == rejected["text"]
    async with place(tmp_path / "c") as fresh:
        await populate(fresh, EXPERIENCES)
        values = await fresh.jobs.run(LIST_VALUES, ListValuesRequest(), budget_s=BUDGET_S)
        assert values.count == 1
    with pytest.raises(ValidationError, match="cannot read"):
        await import_values_markdown(fresh.jobs, tmp_path / "none.md", settings=fresh.settings)


def test_a_project_is_named_or_found_from_a_folder(tmp_path: Path) -> None:
    assert resolve_project(None) is None
    assert resolve_project("repo-abc") == "repo-abc"
    assert resolve_project(str(tmp_path)).startswith("dir-")  # type: ignore[union-attr]
    assert json.loads(json.dumps(resolve_project(str(tmp_path)))) == resolve_project(str(tmp_path))
