"""Where in the code a value holds: the files (and functions) a good share of the experiences
it was validated against are anchored to, in one repository. A lesson drawn from fixes to one
module is brought up when that module is read again; a lesson spread over the whole codebase
is anchored nowhere."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from learning_memory.shared.contracts.experiences import Anchor

SHARE = 0.3  # of the anchored members that must name a file (or function)
MIN_MEMBERS = 2  # a single experience's file is its own, not the lesson's
MAX_FILES = 3


def shared_anchors(payloads: Iterable[dict[str, Any]]) -> tuple[str | None, list[Anchor]]:
    """The project and anchors a value takes from its members' payloads (none when its members
    are of several repositories, or agree on no file)."""
    anchored = [p for p in payloads if p.get("anchors") and p.get("project")]
    projects = Counter(str(p["project"]) for p in anchored)
    if not projects:
        return None, []
    project, members = projects.most_common(1)[0]
    files: Counter[str] = Counter()
    symbols: Counter[tuple[str, str]] = Counter()
    for payload in anchored:
        if payload["project"] != project:
            continue
        anchors = [Anchor.model_validate(a) for a in payload["anchors"]]
        files.update({a.file for a in anchors})
        symbols.update({(a.file, a.symbol) for a in anchors if a.symbol})
    needed = max(MIN_MEMBERS, SHARE * members)
    chosen = [file for file, count in files.most_common(MAX_FILES) if count >= needed]
    result: list[Anchor] = []
    for file in chosen:
        named = [s for (f, s), count in symbols.most_common() if f == file and count >= needed]
        result += [Anchor(file=file, symbol=s) for s in named[:MAX_FILES]] or [Anchor(file=file)]
    return (project, result) if result else (None, [])
