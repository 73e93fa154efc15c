"""Report periods: a calendar month, an ISO week or a range of days, all in UTC.

``parse_period`` reads what a person types after ``--period``:

    2026-11                  the month: 2026-11-01T00:00Z up to 2026-12-01T00:00Z
    2026-W47                 ISO week 47 of 2026: Monday 2026-11-16 up to Monday 2026-11-23
    2026-11-01..2026-11-15   days, both ends included: up to 2026-11-16T00:00Z

``resolve_period`` also reads what is said relative to a day (``gw report`` passes today, UTC) and
turns it into one of those: ``today``, ``yesterday``, ``this-week``, ``last-week``, ``this-month``,
``last-month``, and a single day ``2026-11-02`` (the range ``2026-11-02..2026-11-02``).

A period is half open, ``[start, end)``, so consecutive periods never count a
moment twice. ``buckets`` cuts it into days (or weeks, for long ranges) for
the plots of usage over time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

PERIOD_HELP = (
    "YYYY-MM (a month), YYYY-Www (an ISO week, e.g. 2026-W47) or YYYY-MM-DD..YYYY-MM-DD (days, both included)"
)
RELATIVE_HELP = (
    "today, yesterday, this-week, last-week, this-month, last-month, a day YYYY-MM-DD, " + PERIOD_HELP
)
RELATIVE = ("today", "yesterday", "this-week", "last-week", "this-month", "last-month")
# The API's query parameter pattern: the three shapes with years 1970 to 2999, months 01-12, weeks
# W01-W53, days 01-31. What a pattern cannot say (W53 of a 52-week year, 30 February, a range that ends
# before it starts or spans more than MAX_RANGE_DAYS) parse_period checks.
_YEAR, _MON, _DAY = r"(19[7-9]\d|2\d{3})", r"(0[1-9]|1[0-2])", r"(0[1-9]|[12]\d|3[01])"
_DATE = f"{_YEAR}-{_MON}-{_DAY}"
PERIOD_PATTERN = rf"^({_YEAR}-{_MON}|{_YEAR}-W(0[1-9]|[1-4]\d|5[0-3])|{_DATE}\.\.{_DATE})$"
FIRST_YEAR, LAST_YEAR = 1970, 2999  # no accounting record is older; a later year is a typo
MAX_RANGE_DAYS = 3700  # about ten years: a longer range is a typo, and would make 500 weekly buckets
DAILY_BUCKETS_UP_TO_DAYS = 62  # a period of at most this many days is plotted per day, longer ones per week

_MONTH = re.compile(r"(\d{4})-(\d{2})")
_WEEK = re.compile(r"(\d{4})-W(\d{2})")
_RANGE = re.compile(r"(\d{4}-\d{2}-\d{2})\.\.(\d{4}-\d{2}-\d{2})")
_ONE_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Period:
    """A half-open span of UTC time ``[start, end)`` with the label it was asked for by."""

    label: str
    start: datetime
    end: datetime

    @property
    def days(self) -> int:
        """Whole days in the period."""
        return (self.end - self.start).days

    def buckets(self) -> list[tuple[datetime, datetime]]:
        """The period cut into days (periods up to ``DAILY_BUCKETS_UP_TO_DAYS`` days) or weeks; the last
        bucket ends at ``end``. Half open like the period; together they cover it exactly."""
        step = timedelta(days=1 if self.days <= DAILY_BUCKETS_UP_TO_DAYS else 7)
        cuts = []
        at = self.start
        while at < self.end:
            cuts.append((at, min(at + step, self.end)))
            at += step
        return cuts

    def overlap_h(self, start: datetime, end: datetime) -> float:
        """Hours of ``[start, end)`` that fall inside the period (0 when none)."""
        lo, hi = max(start, self.start), min(end, self.end)
        return max((hi - lo).total_seconds(), 0.0) / 3600


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a date of the calendar (YYYY-MM-DD)") from None


def _check_year(text: str, year: int) -> None:
    if not FIRST_YEAR <= year <= LAST_YEAR:
        raise ValueError(f"{text!r}: year {year} is out of range ({FIRST_YEAR} to {LAST_YEAR})")


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def parse_period(text: str) -> Period:
    """The period ``text`` names (module docstring); every bound is midnight UTC.

    Raises ValueError saying what is wrong and which forms are valid: an unknown shape, month 13,
    week 54 (or 53 in a year with 52 ISO weeks), 2026-02-30, a range whose end is before its start,
    or one longer than ``MAX_RANGE_DAYS`` days.
    """
    text = text.strip()
    if match := _MONTH.fullmatch(text):
        year, month = int(match[1]), int(match[2])
        if not 1 <= month <= 12:
            raise ValueError(f"{text!r}: month {month} does not exist (01 to 12)")
        _check_year(text, year)
        start = datetime(year, month, 1, tzinfo=UTC)
        end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
        return Period(f"{year:04d}-{month:02d}", start, end)
    if match := _WEEK.fullmatch(text):
        year, week = int(match[1]), int(match[2])
        _check_year(text, year)
        weeks_in_year = date(year, 12, 28).isocalendar().week  # 28 December is always in the last week
        if not 1 <= week <= weeks_in_year:
            raise ValueError(f"{text!r}: ISO year {year} has weeks W01 to W{weeks_in_year:02d}")
        monday = date.fromisocalendar(year, week, 1)
        start = _midnight(monday)
        return Period(f"{year:04d}-W{week:02d}", start, start + timedelta(days=7))
    if match := _RANGE.fullmatch(text):
        first, last = _day(match[1]), _day(match[2])
        if last < first:
            raise ValueError(f"{text!r}: the range ends ({last}) before it starts ({first})")
        _check_year(text, first.year)
        _check_year(text, last.year)
        if (last - first).days + 1 > MAX_RANGE_DAYS:
            raise ValueError(f"{text!r}: a range may span at most {MAX_RANGE_DAYS} days")
        return Period(f"{first}..{last}", _midnight(first), _midnight(last) + timedelta(days=1))
    raise ValueError(f"{text!r} is not a period; use {PERIOD_HELP}")


def resolve_period(text: str, today: date) -> Period:
    """``parse_period``, plus the words of ``RELATIVE`` (UTC days, weeks from Monday, calendar months,
    seen from ``today``) and a single day. The label is always a form ``parse_period`` reads (what
    the API takes). Raises ValueError naming every valid form."""
    word = text.strip().lower()
    if word in ("today", "yesterday"):
        day = today - timedelta(days=0 if word == "today" else 1)
        return parse_period(f"{day}..{day}")
    if word in ("this-week", "last-week"):
        monday = today - timedelta(days=today.weekday() + (7 if word == "last-week" else 0))
        year, week, _ = monday.isocalendar()
        return parse_period(f"{year:04d}-W{week:02d}")
    if word in ("this-month", "last-month"):
        first = today.replace(day=1)
        if word == "last-month":
            first = (first - timedelta(days=1)).replace(day=1)
        return parse_period(f"{first.year:04d}-{first.month:02d}")
    if _ONE_DAY.fullmatch(word):
        _day(word)
        return parse_period(f"{word}..{word}")
    try:
        return parse_period(text)
    except ValueError as exc:
        if "is not a period" in str(exc):
            raise ValueError(f"{text!r} is not a period; use {RELATIVE_HELP}") from None
        raise
