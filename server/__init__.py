"""The MCP server. It must start instantly: nothing heavy (torch, sentence-transformers,
hdbscan, qdrant-edge) is imported here; heavy work goes to the worker as jobs."""
