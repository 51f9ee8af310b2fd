"""Recall: how memories, experiences and values are found for a query (the tools and the hooks).

Each kind is searched two ways and the rankings fused: the dense side (the vector store, by
meaning) and the keyword side (BM25 over SQLite FTS5, by the words a person remembers: names,
paths, error strings, dates). ``hybrid`` fuses and reorders; ``gate`` decides whether a hook
speaks; ``keywords`` keeps the keyword rows, mirrored from the vector store's writes.
"""
