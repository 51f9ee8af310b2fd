"""Durable file primitives for the journal: atomic replace, markers, removal, set-aside.

Every change that must survive a crash is followed by an fsync of its folder, because a rename
or an unlink is only durable once the directory entry itself has reached the disk.
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

TEMP_SUFFIX = ".tmp"


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def is_temp_name(name: str) -> bool:
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Readers see the old content or the new, never a torn file, even after a power cut.
    ``durable=False`` skips the fsyncs (most of the cost): still atomic for every process and
    across a crash of ours, but a power cut may lose the write (or, on some file systems, tear it)."""
    # Same folder as the target: os.replace is only atomic within one file system.
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}{TEMP_SUFFIX}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def create_marker(path: Path) -> None:
    """Create an empty file (existing is fine) and make its directory entry durable."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    os.close(fd)
    fsync_dir(path.parent)


def remove_durably(path: Path) -> bool:
    """Remove ``path`` (missing is fine); True when something was removed."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    fsync_dir(path.parent)
    return True


def utc_stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")


def set_aside(path: Path, folder: Path) -> Path:
    """Move an unreadable file into ``folder`` under ``<name>.<UTC timestamp>``; returns where."""
    target = folder / f"{path.name}.{utc_stamp()}"
    if target.exists():  # two set-asides in one microsecond: keep both
        target = folder / f"{target.name}.{uuid.uuid4().hex[:8]}"
    os.replace(path, target)
    fsync_dir(folder)
    fsync_dir(path.parent)
    return target
