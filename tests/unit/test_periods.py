"""Report periods: months, ISO weeks, day ranges (UTC, half open) and the errors for bad ones."""

from datetime import UTC, datetime

import pytest

from gateway.core.reports.periods import PERIOD_HELP, parse_period


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("2026-11", utc(2026, 11, 1), utc(2026, 12, 1)),
        ("2026-12", utc(2026, 12, 1), utc(2027, 1, 1)),
        ("2024-02", utc(2024, 2, 1), utc(2024, 3, 1)),
        ("2026-W47", utc(2026, 11, 16), utc(2026, 11, 23)),
        ("2026-W01", utc(2025, 12, 29), utc(2026, 1, 5)),  # ISO week 1 starts in the year before
        ("2026-W53", utc(2026, 12, 28), utc(2027, 1, 4)),  # 2026 has 53 ISO weeks
        ("2026-11-01..2026-11-15", utc(2026, 11, 1), utc(2026, 11, 16)),
        ("2026-11-30..2026-11-30", utc(2026, 11, 30), utc(2026, 12, 1)),
        (" 2026-11 ", utc(2026, 11, 1), utc(2026, 12, 1)),
    ],
)
def test_periods_are_half_open_in_utc(text, start, end):
    period = parse_period(text)
    assert (period.start, period.end) == (start, end)
    assert period.start.tzinfo is UTC


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("2026-13", "month 13 does not exist"),
        ("2026-00", "month 0 does not exist"),
        ("2025-W53", "weeks W01 to W52"),
        ("2026-W00", "weeks W01 to W53"),
        ("2026-02-30..2026-03-01", "not a date of the calendar"),
        ("2026-11-15..2026-11-01", "ends (2026-11-01) before it starts"),
        ("2000-01-01..2026-01-01", "at most 3700 days"),
        ("1969-12", "year 1969 is out of range (1970 to 2999)"),
        ("3000-01", "year 3000 is out of range"),
        ("2999-12-01..3000-01-01", "year 3000 is out of range"),
        ("november", "is not a period"),
        ("2026-11-01", "is not a period"),
        ("2026-11-01..", "is not a period"),
        ("", "is not a period"),
    ],
)
def test_bad_periods_say_what_is_wrong(text, says):
    with pytest.raises(ValueError) as caught:
        parse_period(text)
    assert says in str(caught.value)


def test_the_api_pattern_admits_the_valid_shapes_only():
    import re

    from gateway.core.reports.periods import PERIOD_PATTERN

    good = ["2026-11", "2026-W47", "2026-W53", "2026-11-01..2026-11-15", "1970-01", "2999-12"]
    bad = ["0000-00", "2026-13", "1969-12", "3000-01", "2026-W54", "2026-W00", "2026-11-32..2026-12-01"]
    assert all(re.fullmatch(PERIOD_PATTERN, t) for t in good)
    assert not any(re.fullmatch(PERIOD_PATTERN, t) for t in bad)
    for text in good:
        parse_period(text)  # every shape the pattern admits and the calendar has is a period


def test_unknown_shape_lists_the_valid_forms():
    with pytest.raises(ValueError) as caught:
        parse_period("last month")
    assert PERIOD_HELP in str(caught.value)


def test_buckets_cover_the_period_exactly():
    month = parse_period("2026-11")
    days = month.buckets()
    assert len(days) == 30 and days[0][0] == month.start and days[-1][1] == month.end
    assert all(a[1] == b[0] for a, b in zip(days, days[1:], strict=False))
    long = parse_period("2026-01-01..2026-12-31")
    weeks = long.buckets()
    assert len(weeks) == 53 and weeks[-1][1] == long.end and (weeks[-1][1] - weeks[-1][0]).days == 1


def test_overlap_hours_clip_to_the_period():
    week = parse_period("2026-W47")
    assert week.overlap_h(utc(2026, 11, 15, 22), utc(2026, 11, 16, 3)) == 3.0
    assert week.overlap_h(utc(2026, 11, 10), utc(2026, 11, 11)) == 0.0
