"""Keeping the worker's resident memory close to what it uses (glibc's allocator; elsewhere
these do nothing).

glibc gives each thread that allocates its own arena, up to eight per core, and memory freed
in one arena serves only that arena: the threads the worker hands parsing, embedding and vector
writes to leave several arenas each holding the peak of its own work. Two arenas keep that
from multiplying, at no cost measurable here (the threads mostly wait on the GIL anyway).
Blocks of 128 KiB and more are mapped on their own and unmapped when freed. glibc raises that
threshold to the size of each mapped block it frees, up to 32 MiB, so after the first large free
the embedding runs' tensors and the tokenizer's buffers came from the arenas instead, where they
fragment the heap and stay after use; fixing the threshold keeps them out.
``give_back`` returns the free pages at the top of each arena once a large piece of work is
done, so the next one starts from what is in use rather than from the last peak.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache
from typing import Any

from learning_memory.shared.log import get_logger

log = get_logger(__name__)
# mallopt's parameter numbers, from glibc's malloc.h.
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
ARENAS = 2
MMAP_THRESHOLD = 128 * 1024  # glibc's own starting value, no longer raised


@cache
def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:  # another C library (musl): nothing to tune
        return None


def tune(arenas: int = ARENAS) -> bool:
    """Cap the allocator's arenas and fix its mapping threshold; call before the worker starts
    its threads. Whether both were applied."""
    libc = _libc()
    done = bool(
        libc is not None
        and libc.mallopt(M_ARENA_MAX, arenas) == 1
        and libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    )
    log.debug("allocator.tuned", arenas=arenas, mmap_threshold=MMAP_THRESHOLD, applied=done)
    return done


def give_back() -> None:
    """Return freed memory to the system (milliseconds; after an index, a fill, a clustering)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
