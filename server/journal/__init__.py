"""The GHAP journal: local JSON files in ``LMS_JOURNAL_DIR``, owned by the server."""
