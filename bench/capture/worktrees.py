"""Where a replayed session runs: one git repository per group of transcripts, with N worktrees,
and each session moved into one of them (session k of a group into worktree k mod N, so a
failure met in one worktree can come back in another).

Moving a session rewrites its folder, wherever it appears in the hook inputs (``cwd``, file
paths, commands, outputs), to the worktree's. Files the session wrote are then made real, so
that what the server reads from disk (symbols of an edited file, a re-index) exists: Write's
content, Edit and MultiEdit applied to the file as it is in the worktree or, when it is not
there yet, to the original text Claude Code recorded, and files read whole; the folders sessions
ran in are made too. Other files of the original project are not there (a failing run's code
is, when the session read or edited it); nothing is ever written outside the worktree.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.capture.transcripts import HookEvent

_GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "init.defaultBranch=main"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run([*_GIT, *args], cwd=cwd, check=True, capture_output=True)


def make_repository(root: Path, worktrees: int) -> list[Path]:
    """A repository at ``root/repo`` with ``worktrees`` linked worktrees beside it; their folders."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "README.md").write_text("Replayed sessions run in worktrees of this repository.\n")
    _git(repo, "add", "README.md")
    _git(repo, "commit", "-q", "-m", "start")
    folders = []
    for k in range(worktrees):
        folder = root / f"wt{k}"
        _git(repo, "worktree", "add", "-q", "-b", f"replay-{k}", str(folder))
        folders.append(folder)
    return folders


def rewriter(old: str) -> re.Pattern[str]:
    """Matches ``old`` as a whole path prefix (``/a/b`` in ``/a/b/c`` but not in ``/a/bc``)."""
    return re.compile(re.escape(old.rstrip("/")) + r"(?![\w.-])")


def rewrite(value: Any, pattern: re.Pattern[str], new: str) -> Any:
    """``value`` with every string's matches of ``pattern`` replaced by ``new``, however deep."""
    if isinstance(value, str):
        return pattern.sub(lambda _: new, value)
    if isinstance(value, list):
        return [rewrite(item, pattern, new) for item in value]
    if isinstance(value, dict):
        return {key: rewrite(item, pattern, new) for key, item in value.items()}
    return value


def moved_events(events: list[HookEvent], old_root: str, new_root: Path, transcript: Path) -> list[HookEvent]:
    """The events as they would have been in ``new_root``, pointing at ``transcript``."""
    pattern = rewriter(old_root)
    moved = []
    for event in events:
        hook_input = rewrite(event.input, pattern, str(new_root)) if old_root else dict(event.input)
        hook_input["transcript_path"] = str(transcript)
        if not hook_input.get("cwd"):
            hook_input["cwd"] = str(new_root)
        moved.append(HookEvent(event.name, hook_input, event.line))
    return moved


def move_transcript(source: Path, old_root: str, new_root: Path, target: Path) -> None:
    """A copy of the session's file with its folder rewritten, for hooks that read ``transcript_path``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    text = source.read_text(encoding="utf-8", errors="replace")
    if old_root:
        # In the file the paths sit inside JSON strings: rewrite their JSON-escaped spelling.
        old, new = json.dumps(old_root)[1:-1], json.dumps(str(new_root))[1:-1]
        text = rewriter(old).sub(lambda _: new, text)
    target.write_text(text, encoding="utf-8")


@dataclass
class FileCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0  # outside the worktree, or an edit whose text was not found
    skipped_reasons: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped += 1
        self.skipped_reasons[reason] = self.skipped_reasons.get(reason, 0) + 1


def _replace(text: str, old: str, new: str, every: bool) -> str | None:
    if not old:
        return new if not text else None
    if old not in text:
        return None
    return text.replace(old, new) if every else text.replace(old, new, 1)


def _edited(text: str | None, edits: list[Any]) -> str | None:
    """``text`` with Edit/MultiEdit's edits applied in order, or None when one does not apply."""
    for edit in edits:
        if text is None or not isinstance(edit, dict):
            return None
        old, new = str(edit.get("old_string", "")), str(edit.get("new_string", ""))
        text = _replace(text, old, new, bool(edit.get("replace_all")))
    return text


class Materializer:
    """Makes the files a session wrote (or read whole) real in its worktree."""

    def __init__(self, worktree: Path) -> None:
        self.worktree = worktree.resolve()
        self.counts = FileCounts()

    def _inside(self, file_path: str) -> Path | None:
        path = Path(file_path)
        if not path.is_absolute():
            path = self.worktree / path
        try:
            path.resolve().relative_to(self.worktree)
        except ValueError:
            return None
        return path

    def _write(self, path: Path, text: str) -> None:
        before = path.read_text(errors="replace") if path.exists() else None
        if before == text:
            self.counts.unchanged += 1
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if before is None:
            self.counts.created += 1
        else:
            self.counts.updated += 1

    def apply(self, event: HookEvent) -> None:
        """Bring the worktree to where the session's tool left it, and make sure the folder the
        session was in exists (Claude Code's always does)."""
        folder = self._inside(str(event.input.get("cwd") or ""))
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        if event.name != "PostToolUse":
            return
        tool, tool_input = event.input.get("tool_name"), event.input.get("tool_input") or {}
        response = event.input.get("tool_response")
        response = response if isinstance(response, dict) else {}
        if tool not in ("Edit", "Write", "MultiEdit", "Read"):
            return
        path = self._inside(str(tool_input.get("file_path") or response.get("filePath") or ""))
        if path is None:
            if tool != "Read":
                self.counts.skip("outside the worktree")
            return
        current = path.read_text(errors="replace") if path.exists() else None
        if tool == "Read":
            self._read(path, current, response)
        elif tool == "Write":
            self._write(path, str(tool_input.get("content", "")))
        else:
            edits = tool_input.get("edits") if tool == "MultiEdit" else [tool_input]
            original = response.get("originalFile", response.get("originalFileContents"))
            for base in (current, original if isinstance(original, str) else None):
                text = _edited(base, edits if isinstance(edits, list) else [])
                if text is not None:
                    self._write(path, text)
                    return
            self.counts.skip("edit text not found")

    def _read(self, path: Path, current: str | None, response: dict[str, Any]) -> None:
        file = response.get("file")
        if current is not None or not isinstance(file, dict) or not isinstance(file.get("content"), str):
            return
        whole = file.get("startLine", 1) == 1 and file.get("numLines", 0) >= file.get("totalLines", 0)
        if whole:
            self._write(path, file["content"])
