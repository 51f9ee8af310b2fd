"""Code search, in two rooms.

``index`` turns a directory into searchable units: discovery, tree-sitter parsing, each unit's
keyword row in the unit store (SQLite, one FTS5 index per project), its vector filled in the
background, and, with shared state, the record other workers replicate. ``search`` answers a
query from what ``index`` wrote: dense and BM25 candidates fused, then reordered knowing what a
developer's query means. ``search`` reads the index; the index never imports the search room.
"""
