"""The period a query names, if any: "yesterday", "last week", "in March", "on 8 May 2023",
"2023-05-08", "3 days ago", "in 2024"; or the event it is told against ("before the migration",
"since we switched to uv"), which ``worker.recall.search`` dates by the record that tells of it.

A person asking "what did we decide about the cache last week" means notes of that week; recall
prefers records created in the period (``Period.holds``) without leaving the others out: the
date may be misremembered. Relative periods are counted back from ``now``; a month or a day
named without a year is the latest one not after ``now``. Periods are generous at their edges
(a day is the day before and after too), as memory of dates is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

DAY = timedelta(days=1)
MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\b\.?,?(?:\s+(\d{{4}}))?", re.I)
_MONTH_DAY = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b,?(?:\s+(\d{{4}}))?", re.I)
_MONTH_ONLY = re.compile(rf"\b(?:in|during|since|of|from)\s+({_MONTH})\b\.?(?:\s+(\d{{4}}))?", re.I)
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{4}})\b", re.I)
_YEAR = re.compile(r"\b(?:in|during|of)\s+((?:19|20)\d{2})\b", re.I)
_AGO = re.compile(r"\b(\d+|a|an|one|two|three|four|five|six)\s+(day|week|month)s?\s+ago\b", re.I)
# "before the migration", "since we switched to uv": a preposition, then a short phrase naming
# what happened (longer clauses are what the query is about: "fails after a dependency got
# updated, it complains...").
_EVENT = re.compile(r"\b(before|after|since|prior to)\s+(?:the|our|we)\s+([^?.!,;]+?)\s*(?:[?.!,;]|$)", re.I)
EVENT_WORDS = 3
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_RELATIVE: tuple[tuple[re.Pattern[str], int, int], ...] = (
    # (phrase, days back the period starts, days back it ends)
    (re.compile(r"\btoday\b|\bthis morning\b|\bearlier today\b", re.I), 1, 0),
    (re.compile(r"\byesterday\b|\blast night\b", re.I), 2, 0),
    (re.compile(r"\bthis week\b|\bthe past few days\b|\brecently\b", re.I), 8, 0),
    (re.compile(r"\blast week\b|\bthe past week\b|\bprevious week\b", re.I), 15, 4),
    (re.compile(r"\bthis month\b|\bthe past month\b", re.I), 32, 0),
    (re.compile(r"\blast month\b|\bprevious month\b", re.I), 63, 25),
    (re.compile(r"\bthis year\b", re.I), 366, 0),
    (re.compile(r"\blast year\b", re.I), 731, 330),
)


DATE_WEIGHT = 2.0  # records of a period the query names weigh this much more
EVENT_WEIGHT = 1.25  # of the time before or after an event it names: a lighter hand, as the
# event is only known through the record that tells of it best
EVENT_POINT_WEIGHT = 0.5  # that record's own


@dataclass(frozen=True)
class Period:
    start: datetime
    end: datetime
    weight: float = DATE_WEIGHT
    # The record that tells of the event the period is told against: it says when, it is not
    # what the query asks for, though it shares the query's words.
    event_point: str | None = None

    @classmethod
    def before(cls, when: datetime, event_point: str | None = None) -> Period:
        return cls(datetime(1970, 1, 1, tzinfo=UTC), when, EVENT_WEIGHT, event_point)

    @classmethod
    def after(cls, when: datetime, event_point: str | None = None) -> Period:
        # The record that tells of the event is not "after" it.
        start = when + timedelta(microseconds=1)
        return cls(start, datetime(9999, 1, 1, tzinfo=UTC), EVENT_WEIGHT, event_point)

    def holds(self, payload: dict[str, Any]) -> bool:
        """Whether a record (its ``created_ts``) falls in the period."""
        stamp = payload.get("created_ts")
        if not isinstance(stamp, int | float) or isinstance(stamp, bool):
            return False
        return self.start.timestamp() <= stamp < self.end.timestamp()


def _month_start(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _month(now: datetime, month: int, year: int | None) -> Period:
    if year is None:
        year = now.year if month <= now.month else now.year - 1
    end = _month_start(year + (month == 12), month % 12 + 1)
    return Period(_month_start(year, month) - DAY, end + DAY)


def _day(now: datetime, day: int, month: int, year: int | None) -> Period | None:
    try:
        when = datetime(year or now.year, month, day, tzinfo=UTC)
        if year is None and when > now + DAY:
            when = when.replace(year=now.year - 1)
    except ValueError:  # 31 February
        return None
    return Period(when - DAY, when + 2 * DAY)


def period_in(query: str, now: datetime) -> Period | None:
    """The period ``query`` names, or None."""
    if found := _ISO_DAY.search(query):
        return _day(now, int(found[3]), int(found[2]), int(found[1]))
    if found := _DAY_MONTH.search(query):
        return _day(now, int(found[1]), MONTHS[found[2].lower()], int(found[3]) if found[3] else None)
    if found := _MONTH_DAY.search(query):
        return _day(now, int(found[2]), MONTHS[found[1].lower()], int(found[3]) if found[3] else None)
    if found := _MONTH_YEAR.search(query):
        return _month(now, MONTHS[found[1].lower()], int(found[2]))
    if found := _MONTH_ONLY.search(query):
        return _month(now, MONTHS[found[1].lower()], int(found[2]) if found[2] else None)
    if found := _YEAR.search(query):
        year = int(found[1])
        return Period(datetime(year, 1, 1, tzinfo=UTC) - DAY, datetime(year + 1, 1, 1, tzinfo=UTC) + DAY)
    if found := _AGO.search(query):
        count = _COUNTS.get(found[1].lower()) or int(found[1])
        days = count * {"day": 1, "week": 7, "month": 30}[found[2].lower()]
        slack = max(1, days // 3)
        return Period(now - timedelta(days=days + slack), now - timedelta(days=max(days - slack, 0)) + DAY)
    for phrase, start, end in _RELATIVE:
        if phrase.search(query):
            return Period(now - timedelta(days=start), now - timedelta(days=end) + DAY)
    return None


@dataclass(frozen=True)
class Event:
    """A query told against an event: "how did we deploy before the migration"."""

    before: bool  # records before it are meant (else after it)
    words: str  # what names the event: "migration"


def event_in(query: str) -> Event | None:
    """The event ``query`` tells its time against, rather than a date, if any."""
    found = _EVENT.search(query)
    if found is None:
        return None
    phrase = found[2].strip()
    if len(phrase.split()) > EVENT_WORDS or phrase[:1].isdigit():
        return None
    if period_in(phrase, datetime(2000, 1, 1, tzinfo=UTC)) is not None:
        return None  # "before the 8th of May": a date, not an event
    return Event(found[1].lower() in ("before", "prior to"), phrase)
