"""The arq worker: runs every job that embeds, touches vectors, git history, clustering or indexing."""
