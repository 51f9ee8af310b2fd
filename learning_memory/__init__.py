"""The Learning Memory Server as installed: ``server``, ``worker`` and ``shared`` under one name,
plus what puts them together: the ``cli`` and the composition root (``composition``).

In the repository ``server``, ``worker`` and ``shared`` are top-level folders that this package
links to, so that a checkout and an installed package import the same names (and mypy, ruff and
import-linter read the same modules). The server and the worker import only ``shared``, never each
other; ``composition`` is the one module that wires them. Kept empty: ``python -m learning_memory
serve`` must start reading the wire before anything heavy is imported.
"""
