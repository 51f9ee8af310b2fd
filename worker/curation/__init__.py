"""Curation: a person's changes to what the server learned, recorded before they are applied so
that each can be undone (``log``), the records' before-states (``snapshots``), and what must
follow a change outside the vector store (``settle``: the fix index, the brief's file)."""
