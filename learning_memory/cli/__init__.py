"""The ``learning-memory`` command: the outermost layer, the one that may use both the server and
the worker (``serve`` builds its server in ``learning_memory.composition``; ``worker`` runs the worker)."""
