"""Keeping the worker's resident memory close to what it uses (glibc's allocator; elsewhere
these do nothing).

glibc gives each thread that allocates its own arena, up to eight per core, and memory freed
in one arena serves only that arena: the threads the worker hands parsing, embedding and vector
writes to leave several arenas each holding the peak of its own work. Two arenas keep that
from multiplying, at no cost measurable here (the threads mostly wait on the GIL anyway).
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
M_ARENA_MAX = -8  # mallopt's parameter number, from glibc's malloc.h
ARENAS = 2


@cache
def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:  # another C library (musl): nothing to tune
        return None


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap the allocator's arenas; call before the worker starts its threads."""
    libc = _libc()
    done = bool(libc is not None and libc.mallopt(M_ARENA_MAX, arenas) == 1)
    log.debug("allocator.arenas", arenas=arenas, applied=done)
    return done


def give_back() -> None:
    """Return freed memory to the system (milliseconds; after an index, a fill, a clustering)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
