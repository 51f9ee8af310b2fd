"""Loop state on disk: one small JSON file in the state folder, shared by server processes.

``<state>/loops.json`` holds the retained loops, oldest first (the most recent ``retain``,
10 by default, so the oldest is dropped first). Every operation holds an exclusive ``flock``
on ``<state>/.loops.lock`` for its whole read-decide-write, so decisions on one loop are
serialized across threads and processes (two Claude Code sessions may share the folder), and
writes are atomic (the GHAP journal's temp file and rename, without its fsyncs: see ``_write``):
a restart, which Claude Code does often, finds every loop as it was last decided. An unreadable
file is set aside in ``<state>/corrupt/`` and reported, never silently reset.

Each method takes ``wait``: with ``wait=False`` it raises :class:`Busy` instead of waiting for
the locks, so the server can work on its event loop when nobody else holds them (a thread
hand-off costs as much as the work) and go to a thread only when it must wait.
"""

from __future__ import annotations

import fcntl
import os
import threading
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from learning_memory.server.journal import files
from learning_memory.server.loops import rules
from learning_memory.server.loops.rules import Loop
from learning_memory.shared.errors import NotFoundError, StorageError
from learning_memory.shared.log import get_logger
from learning_memory.shared.loop_settings import LoopSettings, LoopType

log = get_logger(__name__)
RETAINED_LOOPS = 10


class Busy(Exception):
    """Another thread or process holds the state (only with ``wait=False``)."""


class _Stored(BaseModel):
    version: int = 1
    loops: list[Loop] = []


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


class LoopStore:
    def __init__(self, root: Path, limits: LoopSettings, retain: int = RETAINED_LOOPS) -> None:
        self.root = Path(root)
        self.limits = limits
        self.retain = retain
        self._path = self.root / "loops.json"
        self._corrupt_dir = self.root / "corrupt"
        try:
            self._corrupt_dir.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(self.root / ".loops.lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StorageError(f"Cannot open the loop state folder {self.root}: {exc}") from exc
        self._finalizer = weakref.finalize(self, _close, self._lock_fd)
        # flock is per open file description: this process's threads share ours, so they also
        # take this lock to exclude each other.
        self._thread_lock = threading.Lock()
        self._swept = False

    def close(self) -> None:
        self._finalizer()

    def create(self, loop_type: LoopType, *, wait: bool = True) -> Loop:
        """A new loop with this type's limits; the oldest is dropped beyond ``retain``."""
        with self._locked(wait) as loops:
            taken = {loop.id for loop in loops}
            loop_id = uuid.uuid4().hex[:8]
            while loop_id in taken:  # 8 hex characters can collide; retained ids must not
                loop_id = uuid.uuid4().hex[:8]
            now = datetime.now(UTC)
            loop = Loop(
                id=loop_id,
                loop_type=loop_type,
                threshold=self.limits.threshold(loop_type),
                max_iterations=self.limits.max_iterations(loop_type),
                created_at=now,
                updated_at=now,
            )
            kept = [*loops, loop][-self.retain :]
            for dropped in loops[: len(loops) + 1 - len(kept)]:
                log.info("loop.dropped", loop_id=dropped.id, status=dropped.status)
            self._write(kept)
            return loop

    def decide(self, loop_id: str, score: int, *, wait: bool = True) -> Loop:
        """Judge ``score`` for the loop (see :func:`rules.decide`) and save the outcome."""
        with self._locked(wait) as loops:
            index = self._index(loops, loop_id)
            decided = rules.decide(loops[index], score, datetime.now(UTC))
            loops[index] = decided
            self._write(loops)
            return decided

    def get(self, loop_id: str, *, wait: bool = True) -> Loop:
        with self._locked(wait) as loops:
            return loops[self._index(loops, loop_id)]

    def newest_first(self, *, wait: bool = True) -> list[Loop]:
        with self._locked(wait) as loops:
            return loops[::-1]

    # --- internals -------------------------------------------------------------------

    @staticmethod
    def _index(loops: list[Loop], loop_id: str) -> int:
        wanted = loop_id.strip().lower()
        for index, loop in enumerate(loops):
            if loop.id == wanted:
                return index
        raise NotFoundError(
            f"No refinement loop {loop_id!r}: use an id initialize_refinement_loop returned. Only the "
            f"{RETAINED_LOOPS} most recent loops are kept; list_active_loops shows them."
        )

    @contextmanager
    def _locked(self, wait: bool) -> Iterator[list[Loop]]:
        """Hold both locks for the operation, yielding the loops, oldest first; turn I/O
        failures into StorageError. With ``wait=False``, raise Busy rather than wait."""
        if not self._thread_lock.acquire(blocking=wait):
            raise Busy
        try:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise Busy from None
            try:
                if not self._swept:
                    self._sweep_temp_files()
                yield self._read()
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        except OSError as exc:
            log.error("loop_state_io_failed", root=str(self.root), error=str(exc))
            raise StorageError(f"The loop state in {self.root} could not be read or written: {exc}") from exc
        finally:
            self._thread_lock.release()

    def _sweep_temp_files(self) -> None:
        """Temp files exist only while a writer holds the lock: any seen under it were left by
        a crashed process, and the file they were to replace is intact."""
        for item in os.scandir(self.root):
            if files.is_temp_name(item.name):
                os.unlink(item.path)
                log.warning("loop_state_temp_file_removed", path=item.path)
        self._swept = True

    def _read(self) -> list[Loop]:
        try:
            raw = self._path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            return _Stored.model_validate_json(raw).loops
        except (PydanticValidationError, ValueError) as exc:
            where = files.set_aside(self._path, self._corrupt_dir)
            log.error("loop_state_corrupt", path=str(where), error=str(exc))
            raise StorageError(
                f"The loop state file was unreadable and has been moved to {where}; no loops are "
                "known now (call initialize_refinement_loop to start again)."
            ) from exc

    def _write(self, loops: list[Loop]) -> None:
        # Not fsync'd: two fsyncs cost more than the tools' whole latency budget, and what they
        # buy is only the last decisions after a power cut; a restart or a crash loses nothing.
        files.atomic_write(self._path, _Stored(loops=loops).model_dump_json().encode(), durable=False)
