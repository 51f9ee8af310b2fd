"""The git log reader, repository paths and the indexer's plan, on their own."""

from __future__ import annotations

from pathlib import Path

import pytest
from git import GitCommandError

from learning_memory.shared.errors import GitError, ValidationError
from learning_memory.shared.settings import load_settings
from learning_memory.worker.git.indexer import CommitIndexer
from learning_memory.worker.git.log import LOG_FORMAT, iter_log, parse_record, parse_stream
from learning_memory.worker.git.repo import open_repo
from learning_memory.worker.services import WorkerServices
from tests.git_repo import build_repo, cli_log, git


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_repo(tmp_path_factory.mktemp("reader") / "repo")


def test_records_split_anywhere_parse_the_same(repo: Path) -> None:
    raw = git(repo, "log", "-z", "--numstat", LOG_FORMAT)
    whole = list(parse_stream(iter([raw])))
    for size in (1, 7, 64, 1000):
        pieces = [raw[i : i + size] for i in range(0, len(raw), size)]
        assert list(parse_stream(iter(pieces))) == whole
    assert [c.sha for c in whole] == [c.sha for c in cli_log(repo)]


def test_rename_binary_and_merge_records() -> None:
    rename = parse_record(b"abc\x1fp1\x1fA\x1fa@x\x1f10\x1fmsg\n\x1f\x00\n1\t0\t\x00old.py\x00new.py\x00")
    assert rename.files[0].path == "new.py" and rename.files[0].old_path == "old.py"
    binary = parse_record(b"abc\x1fp1\x1fA\x1fa@x\x1f10\x1fmsg\x1f\x00\n-\t-\tlogo.png\x00")
    assert binary.files[0].binary and binary.insertions == binary.deletions == 0
    merge = parse_record(b"abc\x1fp1 p2\x1fA\x1fa@x\x1f10\x1fMerge\x1f\x00")
    assert merge.parents == ("p1", "p2") and merge.files == []


def test_a_failing_git_raises_and_an_abandoned_read_reaps_git(repo: Path) -> None:
    opened = open_repo(str(repo))
    with pytest.raises(GitCommandError):
        list(iter_log(opened.repo, "no-such-revision"))
    reader = iter_log(opened.repo)
    assert next(reader).sha
    reader.close()  # kills git: nothing left running, nothing raised


def test_paths_relative_to_the_root(repo: Path) -> None:
    opened = open_repo(str(repo / "src"))
    assert opened.root == repo.resolve()
    assert opened.relative("src/main.py") == "src/main.py"
    assert opened.relative(str(repo / "docs" / "user guide.md")) == "docs/user guide.md"
    assert opened.relative("src/../README.md") == "README.md"
    for outside in ("..", "../x", "/", "/etc/hosts"):
        with pytest.raises(ValidationError):
            opened.relative(outside)
    with pytest.raises(ValidationError, match="root"):
        opened.relative(".")
    with pytest.raises(GitError, match="LMS_REPO_PATH"):
        open_repo(str(repo.parent / "missing"))


async def test_plan_treats_a_vanished_watermark_as_rewritten(repo: Path, tmp_path: Path) -> None:
    opened = open_repo(str(repo))
    head = opened.head()
    assert head is not None
    services = WorkerServices(load_settings(data_dir=tmp_path, embedding_model="hashing:8"))
    indexer = CommitIndexer(services, opened)
    parent = git(repo, "rev-parse", "HEAD~1").decode().strip()
    assert indexer._plan(head, None, None)[0] == "cold"
    assert indexer._plan(head, (head, None), None)[0] == "up_to_date"
    assert indexer._plan(head, (parent, None), None) == ("incremental", [f"{parent}..{head}"], None)
    assert indexer._plan(head, ("0" * 40, None), None)[0] == "rewritten"  # no such commit
    assert indexer._plan(head, (head, 100.0), 50.0) == ("widened", [head], 50.0)
    assert indexer._plan(head, (head, 100.0), 150.0)[0] == "up_to_date"  # covered already
    assert indexer._plan(None, (head, None), None)[0] == "rewritten"
