"""The allocator's knobs: applied on glibc, harmless anywhere."""

from __future__ import annotations

import sys

from learning_memory.worker import allocator


def test_arenas_are_capped_and_memory_given_back_on_glibc() -> None:
    applied = allocator.tune()
    assert applied == (allocator._libc() is not None)
    if sys.platform.startswith("linux"):
        assert applied  # the machines this runs on use glibc
    allocator.give_back()


def test_without_glibc_nothing_is_done(monkeypatch: object) -> None:
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setattr(allocator, "_libc", lambda: None)
    assert allocator.tune() is False
    allocator.give_back()
