"""`gw report --period` in the words people use: today, yesterday, this and last week or month, a
single day, besides a month, an ISO week and a range; what it refuses names every form taken."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from gateway.core.reports.periods import parse_period, resolve_period

THURSDAY = date(2026, 12, 3)


@pytest.mark.parametrize(
    ("said", "label", "start", "end"),
    [
        ("today", "2026-12-03..2026-12-03", date(2026, 12, 3), date(2026, 12, 4)),
        ("Yesterday", "2026-12-02..2026-12-02", date(2026, 12, 2), date(2026, 12, 3)),
        ("this-week", "2026-W49", date(2026, 11, 30), date(2026, 12, 7)),
        ("last-week", "2026-W48", date(2026, 11, 23), date(2026, 11, 30)),
        ("this-month", "2026-12", date(2026, 12, 1), date(2027, 1, 1)),
        ("last-month", "2026-11", date(2026, 11, 1), date(2026, 12, 1)),
        ("2026-12-02", "2026-12-02..2026-12-02", date(2026, 12, 2), date(2026, 12, 3)),
        ("2026-11-01..2026-11-15", "2026-11-01..2026-11-15", date(2026, 11, 1), date(2026, 11, 16)),
        ("2026-W47", "2026-W47", date(2026, 11, 16), date(2026, 11, 23)),
    ],
)
def test_periods_people_say(said, label, start, end):
    period = resolve_period(said, today=THURSDAY)
    assert period.label == label
    assert (period.start, period.end) == (
        datetime(start.year, start.month, start.day, tzinfo=UTC),
        datetime(end.year, end.month, end.day, tzinfo=UTC),
    )
    assert parse_period(period.label) == period  # the label is what the API takes


def test_year_boundaries():
    assert resolve_period("last-month", today=date(2026, 1, 15)).label == "2025-12"
    assert resolve_period("this-week", today=date(2027, 1, 1)).label == "2026-W53"
    assert resolve_period("yesterday", today=date(2026, 3, 1)).label == "2026-02-28..2026-02-28"


@pytest.mark.parametrize(
    ("said", "message"),
    [
        ("tomorrow", "'tomorrow' is not a period; use today, yesterday, this-week, last-week, this-month"),
        ("2026-02-30", "'2026-02-30' is not a date of the calendar"),
        ("2026-13", "month 13 does not exist"),
    ],
)
def test_what_is_refused_says_what_is_taken(said, message):
    with pytest.raises(ValueError, match=message):
        resolve_period(said, today=THURSDAY)
