"""The ``learning-memory`` command."""
