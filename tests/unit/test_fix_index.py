"""The fix index (shared.fix_index): exact and close lookups, by file, idempotent recording, a
missing file never created by a read, and two processes writing at once."""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest

from learning_memory.shared.contracts.capture import Failure, RunOutcome
from learning_memory.shared.fix_index import (
    EpisodeRecord,
    FixIndex,
    FixRecord,
    SeenFailure,
    failures_of,
    fix_index_path,
)
from learning_memory.shared.fix_similarity import CLOSE, similarity, tokens
from tests.capture_sessions import LOGIN, LOGOUT, T0, failure

PROJECT = "github.com/acme/app"
SHA = "f" * 40


def fix(
    failure: Failure = LOGIN,
    files: tuple[str, ...] = ("src/app.py",),
    symbols: tuple[str, ...] = ("login",),
    minutes: int = 0,
    commit: str | None = SHA,
) -> FixRecord:
    subject = "Fix login when the session expired" if commit else None
    return FixRecord(failure, files, symbols, commit, subject, T0 + timedelta(minutes=minutes))


def episode(
    episode_id: str = "ep1",
    experience_id: str = "x1",
    *fixes: FixRecord,
    outcome: str = "confirmed",
    absorbed: bool = False,
    minutes: int = 0,
) -> EpisodeRecord:
    at = T0 + timedelta(minutes=minutes)
    entry = None if absorbed else f'{{"episode": "{episode_id}"}}'
    return EpisodeRecord(episode_id, experience_id, outcome, absorbed, at, at, entry, fixes)


@pytest.fixture
def index(tmp_path: Path) -> FixIndex:
    return FixIndex(fix_index_path(tmp_path))


def record(index: FixIndex, session: str, *episodes: EpisodeRecord) -> tuple[str, ...]:
    seen = [SeenFailure(f.failure, f.fixed_at) for e in episodes for f in e.fixes]
    change = index.record_session(PROJECT, session, "/work/app", seen, episodes)
    return change.added


def test_exact_signature_brings_its_fix(index: FixIndex) -> None:
    record(index, "s1", episode("ep0", "x0", fix(LOGOUT)))
    assert index.fixes_for(PROJECT, [LOGIN]) == []
    record(index, "s1", episode("ep1", "x1", fix()))  # seen by the reader already open
    [known] = index.fixes_for(PROJECT, [LOGIN])
    assert known.signature == LOGIN.signature and known.similarity == 1.0
    assert (known.files, known.symbols) == (("src/app.py",), ("login",))
    assert (known.commit, known.subject) == (SHA, "Fix login when the session expired")
    assert (known.test_id, known.error_type, known.message) == (
        LOGIN.test_id,
        "AssertionError",
        LOGIN.message,
    )
    assert (known.experience_id, known.worktree, known.fixed_at, known.times_fixed) == (
        "x1",
        "/work/app",
        T0,
        1,
    )
    assert index.fixes_for("github.com/other/repo", [LOGIN]) == []
    assert index.fixes_for(PROJECT, []) == []


def test_the_same_fix_again_counts_and_the_most_recent_comes_first(index: FixIndex) -> None:
    record(index, "s1", episode("ep1", "x1", fix(minutes=0)))
    record(index, "s2", episode("ep2", "x1", fix(minutes=5), minutes=5))
    record(
        index, "s3", episode("ep3", "x2", fix(files=("src/session.py",), symbols=(), minutes=9, commit=None))
    )
    first, second = index.fixes_for(PROJECT, [LOGIN], limit=5)
    assert (first.files, first.commit, first.times_fixed) == (("src/session.py",), None, 1)
    assert (second.files, second.times_fixed, second.fixed_at) == (
        ("src/app.py",),
        2,
        T0 + timedelta(minutes=5),
    )
    assert (
        len(index.fixes_for(PROJECT, [LOGIN])) == 2 and len(index.fixes_for(PROJECT, [LOGIN], limit=1)) == 1
    )
    state = index.experience("x1")
    assert state is not None and state.occurrences == 2
    assert (state.first_seen, state.last_seen) == (T0, T0 + timedelta(minutes=5))
    assert state.entry == '{"episode": "ep2"}'  # as the latest episode tells it


def test_a_close_failure_comes_after_the_exact_ones(index: FixIndex) -> None:
    sibling = failure("tests/test_app.py::test_login_admin", LOGIN.message)
    record(index, "s1", episode("ep1", "x1", fix(sibling, files=("src/admin.py",), minutes=3)))
    record(index, "s2", episode("ep2", "x2", fix(LOGIN)))
    exact, near = index.fixes_for(PROJECT, [LOGIN])
    assert exact.signature == LOGIN.signature and exact.similarity == 1.0
    assert near.signature == sibling.signature and CLOSE <= near.similarity < 1.0
    assert near.files == ("src/admin.py",)
    # No exact one known: the close ones answer, the closest first.
    found = index.fixes_for(PROJECT, [failure("tests/test_app.py::test_login_admin_staff", LOGIN.message)])
    assert [known.files for known in found] == [("src/admin.py",), ("src/app.py",)]
    assert 1.0 > found[0].similarity > found[1].similarity >= CLOSE
    # The same words but another signature is close, never exact.
    [same_words] = index.fixes_for(
        PROJECT, [failure("tests/test_app.py::test_login_x", LOGIN.message)], limit=1
    )
    assert same_words.signature == LOGIN.signature and same_words.similarity == 0.99


def test_a_failure_not_close_enough_or_of_another_type_brings_nothing(index: FixIndex) -> None:
    record(index, "s1", episode("ep1", "x1", fix(LOGIN)))
    other_assertion = failure(LOGIN.test_id, "assert None is not None")
    other_type = failure("tests/test_app.py::test_login_admin", LOGIN.message, "ValueError")
    assert index.fixes_for(PROJECT, [other_assertion]) == []
    assert index.fixes_for(PROJECT, [other_type]) == []
    assert index.fixes_for(PROJECT, [LOGOUT]) == []


def test_fixes_for_a_file(index: FixIndex) -> None:
    record(index, "s1", episode("ep1", "x1", fix(LOGIN, files=("src/app.py", "src/auth.py"))))
    record(index, "s2", episode("ep2", "x2", fix(LOGOUT, files=("src/app.py",), minutes=2)))
    found = index.fixes_for_file(PROJECT, "src/app.py")
    assert [known.signature for known in found] == [LOGOUT.signature, LOGIN.signature]
    assert [known.signature for known in index.fixes_for_file(PROJECT, "./src/auth.py")] == [LOGIN.signature]
    assert len(index.fixes_for_file(PROJECT, "src/app.py", limit=1)) == 1
    assert index.fixes_for_file(PROJECT, "README.md") == []
    assert index.fixes_for_file("github.com/other/repo", "src/app.py") == []


def test_recording_a_session_again_changes_and_counts_nothing(index: FixIndex) -> None:
    episodes = (episode("ep1", "x1", fix()), episode("ep2", "g-1", fix(LOGOUT), absorbed=True))
    first = index.record_session(PROJECT, "s1", "/work/app", [], episodes)
    assert first.added == ("ep1", "ep2")
    assert first.experiences == first.new_experiences == {"x1"}  # never the agent's entry
    again = index.record_session(PROJECT, "s1", "/work/app", [], episodes)
    assert again.added == () and again.experiences == set() and again.new_experiences == set()
    [known] = index.fixes_for(PROJECT, [LOGIN])
    assert known.times_fixed == 1
    assert index.fixes_for(PROJECT, [LOGOUT])[0].experience_id == "g-1"
    state = index.experience("x1")
    assert state is not None and state.occurrences == 1


def test_an_episode_decided_anew_moves_to_its_new_experience(index: FixIndex) -> None:
    record(index, "s1", episode("ep1", "x-falsified", outcome="falsified"))
    change = index.record_session(PROJECT, "s1", "/work/app", [], [episode("ep1", "x-confirmed", fix())])
    assert change.added == ()
    assert change.experiences == {"x-falsified", "x-confirmed"} and change.new_experiences == {"x-confirmed"}
    assert index.experience("x-falsified") is None
    # An episode the log no longer makes (still in progress after all) leaves nothing behind.
    change = index.record_session(PROJECT, "s1", "/work/app", [], [])
    assert change.experiences == {"x-confirmed"} and index.fixes_for(PROJECT, [LOGIN]) == []


def test_failures_seen_are_noted_once_per_session(index: FixIndex) -> None:
    seen = [SeenFailure(LOGIN, T0), SeenFailure(LOGIN, T0 + timedelta(minutes=1))]
    for _ in range(2):
        index.record_session(PROJECT, "s1", "/work/app", seen, [])
    import sqlite3

    with sqlite3.connect(index.path) as conn:
        rows = conn.execute("SELECT signature, first_seen, last_seen FROM signatures").fetchall()
    assert rows == [(LOGIN.signature, T0.timestamp(), (T0 + timedelta(minutes=1)).timestamp())]


def test_a_missing_index_answers_nothing_and_is_not_created(tmp_path: Path) -> None:
    path = fix_index_path(tmp_path)
    index = FixIndex(path)
    assert index.fixes_for(PROJECT, [LOGIN]) == [] and index.fixes_for_file(PROJECT, "src/app.py") == []
    assert not path.exists() and not path.parent.exists()
    path.parent.mkdir(parents=True)
    assert index.fixes_for(PROJECT, [LOGIN]) == []
    assert list(path.parent.iterdir()) == []
    path.write_bytes(b"not a database at all" * 100)
    assert index.fixes_for(PROJECT, [LOGIN]) == [] and index.fixes_for_file(PROJECT, "a") == []


def test_a_read_is_quick(index: FixIndex) -> None:
    for n in range(200):
        record(
            index, f"s{n}", episode(f"ep{n}", f"x{n}", fix(failure(f"tests/t.py::test_{n}", LOGIN.message)))
        )
    failures = [LOGIN, LOGOUT]
    started = time.perf_counter()
    for _ in range(50):
        index.fixes_for(PROJECT, failures)
    # A generous bound for a shared machine: the hook's budget is far larger, and this catches a
    # lookup that scans or re-creates the file.
    assert (time.perf_counter() - started) / 50 < 0.02


def _write_sessions(path: str, worker: int) -> int:
    index = FixIndex(Path(path))
    for n in range(15):
        failure_n = failure(f"tests/test_{worker}.py::test_{n}", "assert <n> == <n>")
        record(index, f"w{worker}-s{n}", episode(f"w{worker}-ep{n}", f"x{worker}-{n}", fix(failure_n)))
    return worker


def test_two_processes_write_at_once(tmp_path: Path) -> None:
    path = fix_index_path(tmp_path)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        done = list(pool.map(_write_sessions, [str(path)] * 2, [1, 2]))
    assert done == [1, 2]
    index = FixIndex(path)
    for worker in (1, 2):
        for n in range(15):
            mine = failure(f"tests/test_{worker}.py::test_{n}", "assert <n> == <n>")
            [known] = index.fixes_for(PROJECT, [mine], limit=1)
            assert known.experience_id == f"x{worker}-{n}"


def test_an_unparsed_failed_run_is_one_failure_with_a_stable_signature() -> None:
    run = RunOutcome(
        kind="build", runner="make", exit_code=2, passed=False, last_error="ld: symbol not found"
    )
    [first] = failures_of(run)
    assert first.message == "ld: symbol not found" and failures_of(run) == [first]
    assert failures_of(run.model_copy(update={"last_error": None})) == []
    assert failures_of(RunOutcome(kind="test", passed=False, failures=[LOGIN])) == [LOGIN]


# (message, test id) pairs labelled close or not: what the similarity threshold is set against.
CLOSE_PAIRS = [
    (
        ("KeyError: 'user_id'", "tests/test_app.py::test_login"),
        ("KeyError: 'user_id'", "tests/test_app.py::test_signup"),
        True,
    ),
    (
        ("assert <n> == <n>", "tests/test_app.py::test_login"),
        ("assert <n> == <n>", "tests/test_app.py::test_login_admin"),
        True,
    ),
    (
        ('Argument 1 to "login" has incompatible type "str"; expected "int"', None),
        ('Argument 2 to "login" has incompatible type "str"; expected "int"', None),
        True,
    ),
    (
        ('Argument 1 to "login" has incompatible type "str"; expected "int"', None),
        ('Argument 1 to "logout" has incompatible type "str"; expected "int"', None),
        True,
    ),
    (("expected `u32`, found `i64`", None), ("expected `u32`, found `usize`", None), True),
    (
        ("cannot find value `conn` in this scope", None),
        ("cannot find value `pool` in this scope", None),
        True,
    ),
    (
        ("expected 'ok' to equal 'error'", "src/api.test.ts > handles errors"),
        ("expected 'ok' to equal 'error'", "src/api.test.ts > handles timeouts"),
        True,
    ),
    (
        ("KeyError: 'user_id'", "tests/test_app.py::test_login"),
        ("KeyError: 'session_token'", "tests/test_app.py::test_login"),
        False,
    ),
    (
        ("assert <n> == <n>", "tests/test_app.py::test_login"),
        ("assert None is not None", "tests/test_app.py::test_login"),
        False,
    ),
    (
        ('Incompatible return value type (got "str", expected "int")', None),
        ('Item "None" of "Optional[str]" has no attribute "strip"', None),
        False,
    ),
    (
        ("TypeError: 'NoneType' object is not subscriptable", "tests/test_db.py::test_query"),
        ("TypeError: unsupported operand type(s) for +: 'int' and 'str'", "tests/test_db.py::test_query"),
        False,
    ),
    (
        ("ConnectionRefusedError: [Errno <n>] Connection refused", "tests/test_client.py::test_get"),
        ("ConnectionRefusedError: [Errno <n>] Connection refused", "tests/test_server.py::test_start"),
        False,
    ),
    (
        ("assert 'admin' in []", "tests/test_roles.py::test_admin_role"),
        ("assert <n> == <n>", "tests/test_app.py::test_login"),
        False,
    ),
]


@pytest.mark.parametrize(("a", "b", "close"), CLOSE_PAIRS)
def test_the_threshold_separates_the_labelled_pairs(
    a: tuple[str, str | None], b: tuple[str, str | None], close: bool
) -> None:
    assert (similarity(tokens(*a), tokens(*b)) >= CLOSE) is close
