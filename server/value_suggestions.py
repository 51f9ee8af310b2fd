"""Values suggested from elsewhere that no cluster here has taken: ``<state>/value_suggestions.json``.

An imported value from another project (its JSON Lines export, or a team's values Markdown) is
validated against this store's clusters (the ``adopt_values`` job); one that no cluster takes is
kept here, with the nearest cluster's figures and why, and nowhere else: ``list_values``, the
session brief and the hooks never read this file, so a suggestion never counts as a value.
Importing the same file again later, once more experiences are stored, tries them again; one that
is taken then leaves this file. Written whole and atomically (temp file, rename).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError as PydanticValidationError

from learning_memory.server.journal.files import atomic_write
from learning_memory.shared.contracts.porting import AdoptedValue
from learning_memory.shared.jobs import Contract
from learning_memory.shared.log import get_logger
from learning_memory.shared.settings import Settings

log = get_logger(__name__)
FILE_NAME = "value_suggestions.json"


class KeptSuggestion(Contract):
    suggestion: AdoptedValue  # outcome "rejected": its nearest cluster here, and why not
    origin: str | None
    last_tried: datetime


def suggestions_path(settings: Settings) -> Path:
    return settings.state_folder / FILE_NAME


def load_suggestions(path: Path) -> list[KeptSuggestion]:
    """The kept suggestions (none when the file is missing or unreadable: it is only a record)."""
    try:
        raw = json.loads(path.read_bytes())
        return [KeptSuggestion.model_validate(item) for item in raw.get("suggestions", [])]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, AttributeError, PydanticValidationError) as exc:
        log.warning("value_suggestions.unreadable", path=str(path), error=str(exc))
        return []


def keep_suggestions(
    path: Path, results: Iterable[AdoptedValue], origins: Mapping[str, str | None]
) -> list[KeptSuggestion]:
    """Record what became of suggestions: the rejected are kept (replacing what an earlier try
    said of them), the stored or present leave the file. The suggestions kept now."""
    kept = {item.suggestion.id: item for item in load_suggestions(path)}
    now = datetime.now(UTC)
    for result in results:
        if result.outcome == "rejected":
            kept[result.id] = KeptSuggestion(suggestion=result, origin=origins.get(result.id), last_tried=now)
        else:
            kept.pop(result.id, None)
    ordered = sorted(kept.values(), key=lambda k: (k.suggestion.axis, k.suggestion.text))
    document = {"suggestions": [item.model_dump(mode="json") for item in ordered]}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(document, indent=2) + "\n").encode())
    return ordered
