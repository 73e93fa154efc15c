"""The inputs echoed in 4xx bodies are always short and JSON-safe: the echo never turns a 4xx into a 500."""

from __future__ import annotations

import datetime
import json
import math

import pytest

from gateway.api.errors import MAX_INPUT_CHARS, gateway_error_body, safe_input, safe_text
from gateway.errors import NotFound, SpecError, SpecIssue


def deep(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


HOSTILE = [
    math.nan,
    math.inf,
    -math.inf,
    b"\xff\xfe" * 1000,
    bytearray(b"x"),
    10**5000,
    "x" * 1_000_000,
    "\ud800 lone surrogate",
    deep(100_000),
    list(range(1_000_000)),
    {"\ud800" * 1000: math.nan},
    {1, 2},
    datetime.date(2026, 1, 1),
    object(),
]


@pytest.mark.parametrize("value", HOSTILE, ids=lambda v: type(v).__name__)
def test_every_echo_is_short_json_text(value):
    shown = safe_input(value)
    text = json.dumps(shown, allow_nan=False, ensure_ascii=False).encode("utf-8")  # as JSONResponse renders
    assert len(text) < 1000


def test_plain_small_values_come_back_as_they_are():
    assert safe_input({"a": [1, 2.5, None, True, "s"]}) == {"a": [1, 2.5, None, True, "s"]}
    assert safe_input(math.nan) == "NaN" and safe_input(-math.inf) == "-Infinity"
    assert safe_input(b"abc") == "(3 bytes)"
    assert safe_text("x" * (MAX_INPUT_CHARS + 1)).endswith(f"... ({MAX_INPUT_CHARS + 1} characters)")
    assert safe_text("a\ud800") == "a\\ud800"


def test_error_bodies_render_whatever_the_issue_holds():
    exc = SpecError(
        [SpecIssue("params.\ud800", "bad " + "m" * 10_000, math.nan), SpecIssue("x", "y", deep(5000))]
    )
    status, body = gateway_error_body(exc)
    assert status == 422
    rendered = json.dumps(body, allow_nan=False, ensure_ascii=False).encode("utf-8")
    assert len(rendered) < 6000
    assert body["detail"][0]["input"] == "NaN"
    status, body = gateway_error_body(NotFound("no run \ud800"))
    json.dumps(body, ensure_ascii=False).encode("utf-8")
