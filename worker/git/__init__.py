"""Git history: reading it (GitPython, one `git log` pass per question) and indexing commits."""
