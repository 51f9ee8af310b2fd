"""Handing the pages of a store's mapped files back to the kernel's page cache (Linux; elsewhere
this does nothing).

Qdrant Edge maps each collection's write-ahead log and reads all of it when the shard loads
(to check it), and every point written passes through it: those pages stay mapped, and counted
in the worker's resident memory, though nothing reads them again until the next load.
The payload indexes are the same: their mapped pages (a few MiB a field a segment, a dozen
fields a collection of experiences) are read whole when the shard loads and touched by every
write, and only a filtered query reads a few of them again. ``MADV_PAGEOUT`` asks the kernel to
reclaim them. It never loses data: dirty pages are left
until they are written back, and if an address range changed hands since ``/proc/self/maps``
was read, the worst outcome is a page read again from disk.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Collection
from functools import cache
from pathlib import Path
from typing import Any

from learning_memory.shared.log import get_logger

log = get_logger(__name__)
MADV_PAGEOUT = 21  # from the kernel's mman-common.h (Linux 5.4 and later)
_MAPS = Path("/proc/self/maps")


class _State:
    supported = sys.platform.startswith("linux")


@cache
def _madvise() -> Any:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    fn = libc.madvise
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def shared_mappings(folder: Path, maps: str, within: Collection[str] | None = None) -> list[tuple[int, int]]:
    """The address ranges (start, end) of shared mappings of files under ``folder`` in ``maps``;
    with ``within``, only of files inside a folder (at any depth below) of one of those names."""
    prefix = f"{folder}/"
    ranges = []
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith(prefix) and fields[1].endswith("s"):
            inside = fields[5][len(prefix) :].split("/")[:-1]
            if within is not None and not set(inside) & set(within):
                continue
            start, _, end = fields[0].partition("-")
            ranges.append((int(start, 16), int(end, 16)))
    return ranges


def page_out(folder: Path, within: Collection[str] | None = None) -> int:
    """Ask the kernel to reclaim the mapped pages of the files under ``folder`` (and inside a
    folder named in ``within``, when given); the bytes asked."""
    if not _State.supported:
        return 0
    try:
        ranges = shared_mappings(folder.resolve(), _MAPS.read_text(), within)
        advise = _madvise()
    except (OSError, AttributeError) as exc:  # no /proc, no madvise: nothing to tune
        _State.supported = False
        log.debug("mapped_pages.unsupported", error=str(exc))
        return 0
    asked = 0
    for start, end in ranges:
        if advise(start, end - start, MADV_PAGEOUT) != 0:
            error = ctypes.get_errno()
            if error == 22:  # EINVAL: a kernel older than 5.4 does not know the advice
                _State.supported = False
                log.debug("mapped_pages.unsupported", errno=error)
                return asked
            continue  # ENOMEM: the range was unmapped meanwhile; nothing to reclaim there
        asked += end - start
    return asked
