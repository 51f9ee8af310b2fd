"""What tests need beyond pytest fixtures: the Claude Code harness (driver, scripted model,
debug-log reader) and a generated git history.

Benchmarks may import these modules; nothing here imports ``bench``.
"""

from pathlib import Path

# The checkout the tests run from: its plugin, its pinned tools, its ``-m learning_memory``.
REPO_ROOT = Path(__file__).resolve().parents[2]
