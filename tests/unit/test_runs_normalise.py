"""Normalised messages and failure signatures: the same failure reads the same in every clone."""

from __future__ import annotations

import pytest

from learning_memory.shared.runs import normalise, read_run, signature
from learning_memory.shared.runs.model import Frame, own_frame, relative
from learning_memory.shared.runs.normalise import MAX_MESSAGE_CHARS, mask_paths, strip_ansi
from tests.unit.runs_fixtures import PYTHON, output, read


@pytest.mark.parametrize(
    ("message", "normalised"),
    [
        ("assert 6 == 5", "assert <n> == <n>"),
        ("<Account object at 0x7f72749b5a50>", "<Account object at 0x<hex>>"),
        ("run 3f2a1b7c-1d2e-4f5a-9b8c-7d6e5f4a3b2c failed", "run <uuid> failed"),
        ("commit 7c617ba broke it, see cdef6ff0", "commit <hex> broke it, see <hex>"),
        ("deadbeef and E0308 and utf8 and x86_64", "deadbeef and E0308 and utf8 and x86_64"),
        ("no such file: /tmp/pytest-of-root/pytest-2/test_load0/data.json", "no such file: <tmp>"),
        ("in /var/folders/xy/abc123/T/tmpk2/x.py", "in <tmp>"),
        ("see /home/ann/proj/x.py and /Users/bo/y.py and /root/z", "see ~/proj/x.py and ~/y.py and ~/z"),
        ("C:\\Users\\ann\\AppData\\Local\\Temp\\tmp1\\x.cs", "<tmp>"),
        ("at 2026-11-26T16:49:37Z, then 12:01:02.5", "at <time>, then <time>"),
        ("took 0.23s (limit 500 ms)", "took <dur> (limit <dur>)"),
        ("calc.py:15:9: boom", "calc.py:<n>:<n>: boom"),
        ("version python3.11 v1.2.3 and 1.2.3", "version python3.11 v1.2.3 and <n>"),
        ("  spread\n\tover   lines  ", "spread over lines"),
        ("\x1b[31mred\x1b[39m text", "red text"),
    ],
)
def test_normalise(message: str, normalised: str) -> None:
    assert normalise(message) == normalised


def test_normalise_drops_the_worktree_and_caps_the_length() -> None:
    assert normalise("at /home/a/wt1/src/app.py:3", worktree="/home/a/wt1") == "at src/app.py:<n>"
    assert normalise("rootdir: /tmp/wt2", worktree="/tmp/wt2/") == "rootdir: ."
    assert len(normalise("word " * 200)) <= MAX_MESSAGE_CHARS
    assert normalise("x" * 1000) == normalise("x" * 1000)


def test_mask_paths_and_strip_ansi_leave_plain_text_alone() -> None:
    assert mask_paths("no paths here") == "no paths here"
    assert strip_ansi("plain") == "plain"
    assert strip_ansi("\x1b]8;;file:///x\x1b\\link\x1b]8;;\x1b\\") == "link"


def test_signature_ignores_line_numbers_and_paths() -> None:
    one = signature(
        "pytest", "tests/a.py::t", "ValueError", "bad value 3 at /home/a/wt1/x.py:10", worktree="/home/a/wt1"
    )
    two = signature(
        "pytest", "tests/a.py::t", "ValueError", "bad value 4 at /tmp/wt2/x.py:99", worktree="/tmp/wt2"
    )
    assert one == two and len(one) == 16 and int(one, 16) >= 0
    assert signature("pytest", "tests/a.py::t", "KeyError", "bad value") != signature(
        "pytest", "tests/a.py::t", "ValueError", "bad value"
    )
    assert signature("pytest", "t", None, "first\nsecond") == signature("pytest", "t", None, "\nfirst\nother")
    # A failure without a test is told apart by its file.
    assert signature("ruff", None, "F401", "unused", frame="a.py") != signature(
        "ruff", None, "F401", "unused", frame="b.py"
    )
    assert signature("x", None, None, "") == signature("x", None, None, "   ")


def test_same_output_in_another_worktree_gives_the_same_signatures() -> None:
    """unittest prints absolute paths: moved from /home/a/wt1 to /tmp/wt2, nothing changes."""
    text = output("unittest/failures.txt")
    first = read_run("python -m unittest", text.replace(PYTHON, "/home/a/wt1"), 1, worktree="/home/a/wt1")
    second = read_run("python -m unittest", text.replace(PYTHON, "/tmp/wt2"), 1, worktree="/tmp/wt2")
    assert first.failures and first.failures == second.failures
    assert first.failures[0].frame == "src/app/calc.py:ratio"


def test_a_real_run_in_another_clone_gives_the_same_failures() -> None:
    home = read("pytest/long.txt", "pytest", 1, PYTHON)
    clone = read("pytest/long_other_clone.txt", "pytest", 1, "/tmp/wt2/pyproj")
    assert home.failures == clone.failures


def test_frames() -> None:
    assert relative("/home/a/wt/src/x.py", "/home/a/wt") == "src/x.py"
    assert relative("/usr/lib/python3.11/json/decoder.py", "/home/a/wt") is None
    assert relative("/usr/lib/python3.11/json/decoder.py", None) is None
    assert relative("/home/a/wt/.venv/lib/python3.11/site-packages/x.py", "/home/a/wt") is None
    assert relative("node_modules/jest-circus/build/run.js", None) is None
    assert relative("/root/go/pkg/mod/github.com/x/y.go", None) is None
    assert relative("node:internal/process/task_queues", None) is None
    assert relative("<frozen importlib._bootstrap>", None) is None
    assert relative("C:\\src\\app\\Calc.cs", "C:\\src\\app") == "Calc.cs"
    assert relative("C:\\other\\Calc.cs", "C:\\src\\app") is None
    assert relative("./src/lib.rs", None) == "src/lib.rs"
    frames = [
        Frame("tests/test_x.py", "test_x"),
        Frame("src/x.py", "run"),
        Frame("/usr/lib/python3/json.py", "loads"),
    ]
    assert own_frame(frames, "/w") == "src/x.py:run"
    assert own_frame([Frame("/usr/lib/x.py")], "/w") is None
