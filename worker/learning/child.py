"""An array through a ``python -m`` child process and back: how the worker runs what would leave
large libraries (scikit-learn, scipy) and their allocations in its own memory for good.

The child reads one array on stdin and writes one on stdout (``numpy.save``, no pickle), then
exits and its memory goes back to the system. A plain ``python -m`` child rather than
multiprocessing: spawn would import the parent's main script again in the child, and a script
that runs the worker's jobs in process without a ``__main__`` guard would run again there.
"""

from __future__ import annotations

import asyncio
import io
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from learning_memory.shared.errors import InternalError

STDERR_TAIL = 2_000  # characters of a failed child's stderr told in the error
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def to_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def from_bytes(data: bytes) -> npt.NDArray[Any]:
    array: npt.NDArray[Any] = np.load(io.BytesIO(data), allow_pickle=False)
    return array


async def through_child(
    module: str, args: list[str], array: np.ndarray, what: str, *, threads: int | None = None
) -> npt.NDArray[Any]:
    """What ``python -m module *args`` answers to ``array``; InternalError if it fails (``what``
    names it in the message). ``threads``: the child's native thread pools (OpenMP, BLAS) held to
    that many, else the libraries' default (every core)."""
    env = None
    if threads is not None:
        env = {**os.environ, **{name: str(threads) for name in THREAD_VARS}}
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await child.communicate(to_bytes(array))
    if child.returncode != 0:
        told = err.decode(errors="replace")[-STDERR_TAIL:]
        raise InternalError(f"The {what} process failed (exit status {child.returncode}): {told}")
    return from_bytes(out)


def serve(answer: Callable[[npt.NDArray[Any]], np.ndarray]) -> None:
    """The child's side: the array on stdin, ``answer`` of it on stdout."""
    sys.stdout.buffer.write(to_bytes(answer(from_bytes(sys.stdin.buffer.read()))))
