"""What the Claude Code plugin's hooks run: the SessionStart brief (a command, so standard library
only) and the pure pieces the hook tools use (recognising test and build runs)."""
