"""Search: hybrid candidates (dense + BM25, fused), name lookups, and code-aware reranking."""
