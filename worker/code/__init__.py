"""Code indexing: file discovery, tree-sitter parsing, the incremental indexer."""
