"""Learning from a session without the agent's help: its log cut into episodes, their edits
mapped to code units and commits, kept as auto experiences and in the fix index."""
