"""Values as a Markdown file a team can read, review and commit; and read back as suggestions.

One section per axis (``## full``), one value a block quote, then what it rests on: its cluster,
its support and age, how close it came to the cluster's centroid. A comment under each keeps
what a machine needs (id, axis, creation time, project); a value someone writes by hand needs
only its quote under an axis heading.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from learning_memory.shared.contracts.experiences import AXES
from learning_memory.shared.contracts.learning import MAX_VALUE_CHARS
from learning_memory.shared.contracts.porting import ValueLine
from learning_memory.shared.errors import ValidationError

COMMENT = "<!-- learning-memory-value "
SECONDS_PER_DAY = 86_400.0
AXIS_NOTES = {
    "full": "the whole story: goal, hypothesis, action, outcome, lesson",
    "strategy": "how problems were approached",
    "surprise": "what turned out otherwise than predicted",
    "root_cause": "why things went wrong",
}


def _number(payload: dict[str, Any], *keys: str) -> float | None:
    for key in keys:
        value = payload.get(key)
        if isinstance(value, int | float):
            return float(value)
    return None


def _value_block(value: ValueLine, now: datetime) -> list[str]:
    data = value.payload
    text = str(data.get("text", ""))
    support = int(_number(data, "support", "cluster_size") or 0)
    # The clock of a value's weight is its latest supporting experience (worker.learning.decay).
    evidence = _number(data, "evidence_ts", "created_ts")
    age = (
        f"{max(0.0, (now.timestamp() - evidence) / SECONDS_PER_DAY):.1f} days ago" if evidence else "unknown"
    )
    distance, threshold = _number(data, "centroid_distance"), _number(data, "threshold_distance")
    created = str(data.get("created_at", ""))
    meta = {"id": value.id, "axis": data.get("axis"), "created_at": created, "project": data.get("project")}
    lines = [f"> {line}" if line else ">" for line in text.splitlines() or [""]]
    return [
        *lines,
        "",
        f"- cluster `{data.get('cluster_id')}`, {data.get('cluster_size')} experiences when validated",
        f"- support: {support} experiences, the latest {age}",
        f"- distance to the cluster's centroid {distance:.3f} (threshold {threshold:.3f})"
        if distance is not None and threshold is not None
        else "- distance to the cluster's centroid unknown",
        f"- project `{data.get('project') or 'none'}`, stored {created[:10]}",
        "",
        f"{COMMENT}{json.dumps(meta)} -->",
        "",
    ]


def render_values(values: Sequence[ValueLine], *, project: str | None, model: str, now: datetime) -> str:
    """The Markdown of ``values``: by axis, the best supported first."""
    scope = f"project `{project}`" if project else "every project"
    lines = [
        "# Values learned",
        "",
        f"Exported by learning-memory on {now:%Y-%m-%d %H:%M} UTC from {scope} ({len(values)} values, "
        f"model {model}).",
        "",
        "Each value was validated against a cluster of experiences on its axis: its distance to the",
        "cluster's centroid was within the cluster's threshold (mean + k·std of the members' distances).",
        "`learning-memory import --values-md FILE` brings them into another project as suggestions:",
        "each counts there only once one of that project's clusters takes it.",
        "",
    ]
    for axis in AXES:
        mine = [v for v in values if v.payload.get("axis") == axis]
        if not mine:
            continue
        lines += [f"## {axis} — {AXIS_NOTES[axis]}", ""]
        mine.sort(
            key=lambda v: (-(_number(v.payload, "support", "cluster_size") or 0), str(v.payload.get("text")))
        )
        for value in mine:
            lines += _value_block(value, now)
    return "\n".join(lines).rstrip() + "\n"


@dataclass
class ParsedValue:
    text: str
    axis: str
    line: int
    created_at: datetime | None = None
    project: str | None = None


def _meta(raw: str, where: str) -> dict[str, Any]:
    body = raw.strip().removeprefix(COMMENT.strip()).removesuffix("-->").strip()
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ValidationError(f"{where}: the value's comment does not hold a JSON object")
    return data


def _time(value: Any, where: str) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        raise ValidationError(f"{where}: created_at {value!r} is not a time") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_values(markdown: str, source: str) -> list[ParsedValue]:
    """The values of a Markdown file :func:`render_values` wrote (or a person, in its shape);
    ValidationError naming the line of anything it cannot read."""
    values: list[ParsedValue] = []
    axis: str | None = None
    quote: list[str] = []
    start = 0

    def close_quote() -> None:
        if not quote:
            return
        text = "\n".join(quote).strip()
        where = f"{source}, line {start}"
        if not text:
            raise ValidationError(f"{where}: an empty value")
        if len(text) > MAX_VALUE_CHARS:
            raise ValidationError(f"{where}: a value of {len(text)} characters (at most {MAX_VALUE_CHARS})")
        assert axis is not None
        values.append(ParsedValue(text=text, axis=axis, line=start))
        quote.clear()

    for number, line in enumerate(markdown.splitlines(), start=1):
        where = f"{source}, line {number}"
        if line.startswith(">"):
            if axis is None:
                raise ValidationError(f"{where}: a value before any axis heading (## {' | '.join(AXES)})")
            if not quote:
                start = number
            quote.append(line[1:].removeprefix(" "))
            continue
        close_quote()
        if line.startswith("## "):
            word = (line[3:].split() or [""])[0].lower()
            if word not in AXES:
                raise ValidationError(f"{where}: {word!r} is not an axis ({', '.join(AXES)})")
            axis = word
        elif line.strip().startswith(COMMENT.strip()):
            if not values:
                raise ValidationError(f"{where}: a value's comment with no value above it")
            meta = _meta(line, where)
            values[-1].created_at = _time(meta.get("created_at"), where)
            project = meta.get("project")
            values[-1].project = project if isinstance(project, str) else None
    close_quote()
    return values
