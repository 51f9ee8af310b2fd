"""Export and import with the real model on real embedded stores: a populated store exported without
vectors (the importing side embeds every text again) or with them, imported into an empty data
folder, answers retrieve_memories, search_experiences and list_values as the original did; and a
second import changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from learning_memory.cli.porting import export_store, import_store
from tests.porting_data import answers, assert_same_answers, place, populate

pytestmark = pytest.mark.slow
MODEL = "all-MiniLM-L6-v2"
EXPERIENCES = 48


@pytest.mark.parametrize("with_vectors", [False, True], ids=["embedded-again", "vectors-in-the-file"])
async def test_a_round_trip_gives_the_same_answers(tmp_path: Path, with_vectors: bool) -> None:
    file = tmp_path / "export.jsonl"
    async with place(tmp_path / "a", MODEL) as source:
        await populate(source, EXPERIENCES)
        before = await answers(source)
        header = await export_store(
            source.jobs, source.journal, file, project=None, with_vectors=with_vectors, model=MODEL
        )
    assert header.embedding_model == MODEL and (header.dimension == 384) == with_vectors

    async with place(tmp_path / "b", MODEL) as target:
        report = await import_store(target.jobs, target.journal, file, project=None, settings=target.settings)
        assert report.counts["experiences"] == {"imported": EXPERIENCES, "present": 0}
        assert (report.re_embedded == 0) == with_vectors
        assert_same_answers(before, await answers(target))
        again = await import_store(target.jobs, target.journal, file, project=None, settings=target.settings)
        assert sum(c["imported"] for c in again.counts.values()) == 0 and again.re_embedded == 0
        assert_same_answers(before, await answers(target))
