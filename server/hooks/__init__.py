"""Everything the Claude Code plugin's hooks reach: the SessionStart brief (a command, so standard
library only), the hook_* tools the other hooks call, and the pure pieces they use (recognising
test and build runs and reading their outcome)."""
