"""Benchmarks: ``python -m bench <name>`` runs one, ``python -m bench all`` runs every one.

Each benchmark is a module ``bench/<name>.py`` (or a package ``bench/<name>/``) exposing
``add_arguments(parser)`` and ``async def run(args) -> dict``; it prints its own table and its
result is written, with a block describing the machine, to ``<out>/<name>.json``. Only
benchmarks live here: what tests and benchmarks share (the Claude Code harness, a generated git
history) lives in ``tests/support``, which never imports ``bench``.
"""
