"""The latest fixes of a project, as lines the SessionStart brief reads without a database.

The brief runs as a short command that may not import pydantic or open the fix index, so the
miner leaves ``recent.json`` next to the project's session logs after each mining.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from learning_memory.shared.context_lines import one_line
from learning_memory.shared.contracts.context import item_id
from learning_memory.shared.fix_index import FixIndex, KnownFix
from learning_memory.shared.paths import RECENT_FIXES_FILE

RECENT_FIXES = 5


def fix_text(fix: KnownFix) -> str:
    what = " ".join(part for part in (fix.error_type, fix.message) if part)
    failure = one_line(f"{fix.test_id}: {what}" if fix.test_id else what, 100)
    edited = ", ".join(fix.files[:3]) + (f" ({', '.join(fix.symbols[:3])})" if fix.symbols else "")
    subject = f' "{one_line(fix.subject, 60)}"' if fix.subject else ""
    return f"{failure} — fixed {fix.fixed_at:%Y-%m-%d} by editing {edited}{subject}"


def write_recent(index: FixIndex, project: str, project_dir: Path) -> None:
    items = [
        {"id": item_id("experience", fix.experience_id), "text": fix_text(fix), "times": fix.times_fixed}
        for fix in index.recent(project, RECENT_FIXES)
    ]
    if not items:
        return
    target = project_dir / RECENT_FIXES_FILE
    tmp = target.with_name(f".{RECENT_FIXES_FILE}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(json.dumps(items), encoding="utf-8")
    os.replace(tmp, target)  # readers see the old list or the new, never half of one
