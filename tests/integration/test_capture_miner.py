"""mine_session through the worker machinery, on a real repository with a real Python file edited:
the session's fix becomes an auto experience that search_experiences finds, and the fix index
answers the failure with the file, the function, the commit and its subject. Inline (the
server's in-process executor) and through Redis with a real worker process. Later sessions that
rewrite or delete the function make the experience stale."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from learning_memory.cli.samples import generated_entries
from learning_memory.composition import in_process_executor
from learning_memory.server.capture.fix_hints import fix_hints
from learning_memory.server.transport import Transport
from learning_memory.server.transport.arq import ArqTransport
from learning_memory.server.transport.inline import InlineTransport
from learning_memory.shared.contracts.capture import (
    MINE_SESSION,
    MineSessionRequest,
    MineSessionResponse,
    RunOutcome,
)
from learning_memory.shared.contracts.context import AssembleContextRequest
from learning_memory.shared.contracts.experiences import (
    AXES,
    SEARCH_EXPERIENCES,
    Anchor,
    ExperienceHit,
    PersistExperienceRequest,
    SearchExperiencesRequest,
    collection_for,
    point_id,
)
from learning_memory.shared.fix_index import FixIndex, fix_index_path
from learning_memory.worker.capture.source_units import digest
from learning_memory.worker.jobs.capture import mine_session
from learning_memory.worker.jobs.context import assemble_context
from learning_memory.worker.jobs.experiences import persist_experience, search_experiences
from learning_memory.worker.services import JobRun
from tests.capture_sessions import LOGIN, PROJECT, Script
from tests.git_repo import commit, git, write
from tests.helpers import job_run
from tests.learning_data import ghap_entry
from tests.mcp_thread import inline_settings

BROKEN = '''"""Logging in."""


class Session:
    def __init__(self, user):
        self.user = user


def login(user, password):
    if password:
        return None
    return Session(user)
'''
FIXED = BROKEN.replace("if password:", "if not password:")
SUBJECT = "Refuse logins without a password"


@dataclass
class Fixture:
    repo: Path
    head: str
    logs: Path


def session(fx: Fixture, session_id: str, ghap_id: str | None = None) -> MineSessionRequest:
    """A session that makes test_login pass by editing login() (line 10), and commits."""
    script = (
        Script(session_id=session_id, worktree=str(fx.repo))
        .prompt("Logins without a password must be refused. The test says so.")
        .run("pytest -q", LOGIN, ghap_id=ghap_id)
        .read("src/app.py")
        .edit("src/app.py", (10, 10))
        .run("pytest -q", ghap_id=ghap_id)
        .commit(fx.head)
        .stop()
    )
    log = script.write(fx.logs / f"{session_id}.jsonl", extra_lines=['{"id": "torn", "sess'])
    return MineSessionRequest(log_path=str(log), session_id=session_id, project=PROJECT)


@pytest.fixture
def fx(tmp_path: Path) -> Fixture:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, "src/app.py", BROKEN)
    write(
        repo,
        "tests/test_app.py",
        "from src.app import login\n\n\ndef test_login():\n    assert login('a', '') is None\n",
    )
    commit(repo, "Add login", who="alice", days_ago=1)
    write(repo, "src/app.py", FIXED)
    head = commit(repo, f"{SUBJECT}\n\nThe check was inverted.", who="alice", days_ago=0)
    return Fixture(repo, head, tmp_path / "data" / "capture" / "acme-app" / "sessions")


async def search(jobs: Transport, query: str) -> list[ExperienceHit]:
    found = await jobs.run(SEARCH_EXPERIENCES, SearchExperiencesRequest(query=query, limit=50), budget_s=60)
    return list(found.results)


async def check_mining(jobs: Transport, fx: Fixture, data_dir: Path) -> None:
    first = await jobs.run(MINE_SESSION, session(fx, "s1"), budget_s=120)
    assert first == MineSessionResponse(episodes=1, stored=1, merged=0, absorbed=0)

    [hit] = await search(jobs, "logins without a password refused, login test")
    assert (hit.source, hit.outcome_status, hit.confidence_tier) == ("auto", "confirmed", "auto")
    assert hit.goal == SUBJECT and hit.project == PROJECT and hit.occurrences == 1
    login = "def " + FIXED.split("def ")[-1]
    assert hit.anchors == [Anchor(file="src/app.py", symbol="login", commit=fx.head, digest=digest(login))]
    assert hit.stale is None
    assert (
        hit.outcome_result
        == f"pytest went green after editing src/app.py (login); committed {fx.head[:10]} ({SUBJECT})"
    )
    assert [evidence.passed for evidence in hit.evidence] == [False, True]

    [known] = FixIndex(fix_index_path(data_dir)).fixes_for(PROJECT, [LOGIN])
    assert (known.files, known.symbols, known.commit, known.subject) == (
        ("src/app.py",),
        ("login",),
        fx.head,
        SUBJECT,
    )
    assert (known.experience_id, known.worktree, known.times_fixed) == (hit.ghap_id, str(fx.repo), 1)

    # Mined again (the session stopped again, or the job was retried): nothing changes.
    again = await jobs.run(MINE_SESSION, session(fx, "s1"), budget_s=120)
    assert again == MineSessionResponse(episodes=1, stored=0, merged=0, absorbed=0)
    assert [h.ghap_id for h in await search(jobs, "login")] == [hit.ghap_id]

    # The same fix in another session strengthens the same experience.
    other = await jobs.run(MINE_SESSION, session(fx, "s2"), budget_s=120)
    assert other == MineSessionResponse(episodes=1, stored=0, merged=1, absorbed=0)
    [strengthened] = await search(jobs, "logins without a password refused, login test")
    assert strengthened.ghap_id == hit.ghap_id and strengthened.occurrences == 2
    assert FixIndex(fix_index_path(data_dir)).fixes_for(PROJECT, [LOGIN])[0].times_fixed == 2

    # Inside the agent's own GHAP entry: its evidence, not an auto experience of its own.
    absorbed = await jobs.run(MINE_SESSION, session(fx, "s3", ghap_id="agent-entry"), budget_s=120)
    assert absorbed == MineSessionResponse(episodes=1, stored=0, merged=0, absorbed=1)
    [same] = await search(jobs, "login")
    assert same.occurrences == 2


async def test_mine_session_inline(tmp_path: Path, fx: Fixture) -> None:
    settings = inline_settings(tmp_path)
    jobs = InlineTransport(settings, in_process_executor)
    fx.logs.mkdir(parents=True, exist_ok=True)
    forgotten = fx.logs / "s0.jsonl"  # a session long over: pruned at the project's next mining
    forgotten.write_text('{"id": "old"}\n')
    long_ago = time.time() - (settings.capture_keep_days + 1) * 86_400
    os.utime(forgotten, (long_ago, long_ago))
    try:
        await check_mining(jobs, fx, settings.data_dir)
        assert sorted(p.name for p in fx.logs.glob("*.jsonl")) == ["s1.jsonl", "s2.jsonl", "s3.jsonl"]
        missing = MineSessionRequest(log_path=str(tmp_path / "none.jsonl"), session_id="s9", project=PROJECT)
        assert await jobs.run(MINE_SESSION, missing, budget_s=60) == MineSessionResponse(
            episodes=0, stored=0, merged=0, absorbed=0
        )
    finally:
        await jobs.close()


async def test_a_growing_log_revises_what_it_stored(tmp_path: Path, fx: Fixture) -> None:
    """Mined at a stop while still red, then again once green: the falsified experience it stored
    first is replaced, not kept beside the confirmed one."""
    path = fx.logs / "g1.jsonl"
    request = MineSessionRequest(log_path=str(path), session_id="g1", project=PROJECT)
    script = Script(session_id="g1", worktree=str(fx.repo)).prompt("Fix login.").run("pytest", LOGIN)
    script.edit("src/app.py", (10, 10)).run("pytest", LOGIN).stop().write(path)
    async with job_run(tmp_path) as run:
        assert await mine_session(run, request) == MineSessionResponse(
            episodes=1, stored=1, merged=0, absorbed=0
        )
        [falsified] = await search_hits(run, "login")
        assert falsified.outcome_status == "falsified"
        script.prompt("Try again.").edit("src/app.py", (10, 10)).run("pytest").commit(fx.head).write(path)
        assert await mine_session(run, request) == MineSessionResponse(
            episodes=1, stored=1, merged=0, absorbed=0
        )
        [confirmed] = await search_hits(run, "login")
        assert confirmed.outcome_status == "confirmed" and confirmed.ghap_id != falsified.ghap_id
        assert confirmed.goal == SUBJECT
        for axis in AXES:
            store = await run.services.vectors()
            if await store.collection_exists(collection_for(axis)):
                assert await store.get(collection_for(axis), [point_id(falsified.ghap_id, axis)]) == []


async def search_hits(run: JobRun, query: str) -> list[ExperienceHit]:
    return list((await search_experiences(run, SearchExperiencesRequest(query=query, limit=50))).results)


@pytest.fixture
def lms_env(lms_env: dict[str, str]) -> dict[str, str]:
    return {**lms_env, "LMS_EMBEDDING_MODEL": "hashing:384"}


@pytest.fixture
async def worker_jobs(
    live_worker: subprocess.Popen[bytes], arq_jobs: ArqTransport
) -> AsyncIterator[ArqTransport]:
    yield arq_jobs


@pytest.mark.redis
@pytest.mark.slow
async def test_mine_session_on_a_worker_process(
    worker_jobs: ArqTransport, fx: Fixture, lms_env: dict[str, str]
) -> None:
    await check_mining(worker_jobs, fx, Path(lms_env["LMS_DATA_DIR"]))


async def test_later_sessions_that_rewrite_or_delete_the_code_make_it_stale(
    tmp_path: Path, fx: Fixture
) -> None:
    """A later session rewrites login(): the experience says its code changed, here and in the
    fix hints; another deletes it: the experience leaves injection and hints, but search finds it."""
    query = "logins without a password refused, login test"
    context = AssembleContextRequest(query=query, budget_tokens=2_000, min_score=0.0)
    fixes = FixIndex(fix_index_path(tmp_path / "data"))

    async def later(session_id: str, text: str, lines: tuple[int, int]) -> None:
        write(fx.repo, "src/app.py", text)
        path = (
            Script(session_id=session_id, worktree=str(fx.repo)).prompt("Tidy up.").edit("src/app.py", lines)
        )
        log = path.stop().write(fx.logs / f"{session_id}.jsonl")
        await mine_session(run, MineSessionRequest(log_path=str(log), session_id=session_id, project=PROJECT))

    async def experiences() -> list[str]:
        found = await assemble_context(run, context)
        return [item.text for item in found.items if item.kind == "experience"]

    async with job_run(tmp_path) as run:
        await mine_session(run, session(fx, "s1"))
        [hit] = await search_hits(run, query)
        assert hit.stale is None and fixes.fixes_for(PROJECT, [LOGIN])[0].stale is None

        await later("s2", FIXED.replace("return Session(user)", "return Session(user.strip())"), (12, 12))
        [changed] = await search_hits(run, query)
        assert (changed.ghap_id, changed.stale) == (hit.ghap_id, "changed")
        [line] = await experiences()
        assert line.endswith("(code changed since)")
        assert fixes.fixes_for(PROJECT, [LOGIN])[0].stale == "changed"
        failed = RunOutcome(kind="test", runner="pytest", passed=False, exit_code=1, failures=[LOGIN])
        [hint] = fix_hints(fixes, PROJECT, fx.repo, failed).lines
        assert "(code changed since)" in hint

        await later("s3", FIXED.split("\n\ndef login")[0] + "\n", (9, 12))
        [gone] = await search_hits(run, query)
        assert (gone.ghap_id, gone.stale) == (hit.ghap_id, "gone")
        assert await experiences() == []
        assert fix_hints(fixes, PROJECT, fx.repo, failed).lines == []


async def test_the_agents_experience_is_anchored_where_its_edits_were(tmp_path: Path, fx: Fixture) -> None:
    """The edits made while the agent's GHAP entry was active anchor its stored experience, once;
    a later rewrite makes it stale like any other."""
    entry = ghap_entry(generated_entries(1, seed=1)[0], 0).model_copy(update={"id": "agent-entry"})
    async with job_run(tmp_path) as run:
        await persist_experience(run, PersistExperienceRequest(entry=entry))
        await mine_session(run, session(fx, "s1", ghap_id="agent-entry"))
        [hit] = [h for h in await search_hits(run, entry.goal) if h.ghap_id == "agent-entry"]
        login = "def " + FIXED.split("def ")[-1]
        assert hit.anchors == [Anchor(file="src/app.py", symbol="login", digest=digest(login))]
        assert (hit.source, hit.project, hit.stale) == ("agent", PROJECT, None)

        write(fx.repo, "src/app.py", FIXED.replace("return Session(user)", "return Session(user.strip())"))
        await mine_session(run, session(fx, "s2", ghap_id="agent-entry"))  # mined again: anchors kept
        [hit] = [h for h in await search_hits(run, entry.goal) if h.ghap_id == "agent-entry"]
        assert hit.anchors[0].digest == digest(login) and hit.stale == "changed"


async def test_a_file_deleted_in_a_commit_makes_its_experience_gone(tmp_path: Path, fx: Fixture) -> None:
    async with job_run(tmp_path) as run:
        await mine_session(run, session(fx, "s1"))
        git(fx.repo, "rm", "-q", "src/app.py")
        head = commit(fx.repo, "Drop the old login", who="alice", days_ago=0)
        script = Script(session_id="s2", worktree=str(fx.repo)).prompt("Remove the old login.")
        log = script.run("git rm src/app.py && git commit -m 'Drop'").commit(head).stop()
        path = log.write(fx.logs / "s2.jsonl")
        await mine_session(run, MineSessionRequest(log_path=str(path), session_id="s2", project=PROJECT))
        [hit] = await search_hits(run, "logins without a password refused, login test")
        assert hit.stale == "gone"
