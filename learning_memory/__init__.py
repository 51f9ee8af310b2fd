"""The Learning Memory Server as installed: ``server``, ``worker`` and ``shared`` under one name.

In the repository these are top-level folders that this package links to, so that a checkout and
an installed package import the same names. Kept empty: ``python -m learning_memory serve`` must
start reading the wire before anything heavy is imported.
"""
