"""Commit subjects are one line of at most 72 characters, the detail in the body: a history read
with ``git log --oneline`` says what each change did. Checked from the first commit kept to this
rule on; earlier subjects were paragraphs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIRST = "4e961e00f82a255dbb0f53c832b9fb2093ed80a8"
MAX_SUBJECT = 72


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30)


def test_commit_subjects_since_the_rule_are_short() -> None:
    if _git("rev-parse", "--verify", "--quiet", f"{FIRST}^{{commit}}").returncode != 0:
        pytest.skip("not a git checkout holding the history (an sdist, a shallow clone)")
    subjects = _git("log", "--format=%s", f"{FIRST}^..HEAD").stdout.splitlines()
    assert subjects, "no commit found since the rule"
    too_long = [subject for subject in subjects if len(subject) > MAX_SUBJECT]
    assert too_long == []
