"""The pages' number filter: fixed decimals, "-" for None, no negative zero."""

from __future__ import annotations

from gateway.web.deps import build_templates, number


def test_numbers_for_tables():
    assert number(0.88333) == "0.8833" and number(-0.11667) == "-0.1167" and number(3) == "3.0000"
    assert number(-0.00001) == "0.0000" and number(-0.0, 2) == "0.00"  # never "-0.0000"
    assert number(None) == "-" and number("n/a") == "n/a" and number(True) == "True"
    assert build_templates().from_string("{{ v | num(2) }}").render(v=0.955) == "0.95"  # float rounding
