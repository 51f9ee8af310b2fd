"""Session logs written by hand for the capture tests: events as the hooks would record them."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from learning_memory.shared.contracts.capture import Failure, LineRange, RunOutcome, SessionEvent

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
PROJECT = "github.com/acme/app"


def failure(test_id: str | None, message: str, error_type: str | None = "AssertionError") -> Failure:
    key = f"{test_id}\0{error_type}\0{message}"
    return Failure(
        test_id=test_id,
        error_type=error_type,
        message=message,
        signature=hashlib.sha256(key.encode()).hexdigest()[:16],
    )


LOGIN = failure("tests/test_app.py::test_login", "assert <n> == <n>")
LOGOUT = failure("tests/test_app.py::test_logout", "KeyError: 'session_token'", "KeyError")


class Script:
    """A session's events in order, one second apart, with ids e1, e2, ..."""

    def __init__(self, session_id: str = "s1", worktree: str = "/work/app", start: datetime = T0) -> None:
        self.session_id = session_id
        self.worktree = worktree
        self.start = start
        self.events: list[SessionEvent] = []

    def _add(self, type: str, **fields: Any) -> SessionEvent:
        n = len(self.events) + 1
        event = SessionEvent(
            id=f"{self.session_id}-e{n}",
            session_id=self.session_id,
            type=type,
            at=self.start + timedelta(seconds=n),
            project=PROJECT,
            worktree=self.worktree,
            **fields,
        )
        self.events.append(event)
        return event

    def prompt(self, text: str) -> Script:
        self._add("prompt", prompt=text)
        return self

    def run(
        self,
        command: str = "pytest",
        *failures: Failure,
        kind: str = "test",
        runner: str | None = "pytest",
        exit_code: int | None = None,
        last_error: str | None = None,
        ghap_id: str | None = None,
    ) -> Script:
        passed = not failures and not exit_code and last_error is None
        code = exit_code if exit_code is not None else (0 if passed else 1)
        outcome = RunOutcome(
            kind=kind,
            runner=runner,
            exit_code=code,
            passed=passed,
            tests_passed=None if kind != "test" else 3,
            tests_failed=None if kind != "test" else len(failures),
            failures=list(failures),
            last_error=last_error,
        )
        self._add("run", command=command, run=outcome, ghap_id=ghap_id)
        return self

    def edit(self, file: str, *ranges: tuple[int, int]) -> Script:
        self._add("edit", file=file, lines=[LineRange(start=a, end=b) for a, b in ranges])
        return self

    def read(self, file: str) -> Script:
        self._add("read", file=file)
        return self

    def commit(self, head: str, previous: str | None = None) -> Script:
        self._add("commit", head=head, previous_head=previous)
        return self

    def injected(self, via: str, *items: str) -> Script:
        self._add("injected", items=list(items), via=via)
        return self

    def stop(self) -> Script:
        self._add("stop")
        return self

    def end(self) -> Script:
        self._add("end")
        return self

    def write(self, path: Path, extra_lines: Sequence[str] = ()) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [event.model_dump_json() for event in self.events]
        path.write_text("".join(f"{line}\n" for line in lines) + "".join(extra_lines))
        return path
