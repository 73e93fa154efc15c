"""Strict JSON for request bodies: what Python's json lets through is refused, with the field path."""

from __future__ import annotations

import json

import pytest

from gateway.core.json_input import MAX_ISSUES, load_json
from gateway.core.yaml_input import MAX_DEPTH
from gateway.errors import SpecError
from tests.cpu_clock import cpu_time


def issues(data: bytes | str) -> dict[str, str]:
    with cpu_time() as spent, pytest.raises(SpecError) as info:
        load_json(data)
    assert spent.seconds < 1.0
    assert info.value.location == "body"
    return {issue.path: issue.message for issue in info.value.issues}


@pytest.mark.parametrize(
    ("text", "path", "shown"),
    [
        ('{"x": NaN}', "x", "NaN"),
        ('{"a": {"b": [1, Infinity]}}', "a.b.1", "Infinity"),
        ('{"a": -Infinity}', "a", "-Infinity"),
        ('{"mem_gb": 1e999}', "mem_gb", "Infinity"),
        ('{"mem_gb": -1e999}', "mem_gb", "-Infinity"),
        ("NaN", "", "NaN"),
    ],
)
def test_non_finite_numbers_are_refused_at_their_path(text, path, shown):
    assert (
        issues(text)[path]
        == f"{shown} is not a finite number; JSON has no NaN or Infinity and no field takes one"
    )


def test_duplicate_keys_are_refused_at_their_object():
    found = issues('{"name": "a", "n": {"x": 1, "x": 2, "y": 3, "y": 4}, "name": "b"}')
    assert found == {
        "": "duplicate key 'name'; give each key once",
        "n": "duplicate key 'x', 'y'; give each key once",
    }


def test_nesting_is_capped_exactly():
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    (path, message), *_ = issues("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)).items()
    assert (
        path == ".".join(["0"] * MAX_DEPTH)
        and message == f"nested more than {MAX_DEPTH} levels of lists and objects; at most {MAX_DEPTH}"
    )
    for depth in (1000, 100_000):
        assert "nested more than 64" in issues("[" * depth + "]" * depth)[""]
    assert "nested more than 64" in issues('{"a": ' * 100_000 + "1" + "}" * 100_000)[""]


def test_integers_too_long_to_read_are_refused_at_their_path():
    assert issues('{"x": [1, ' + "9" * 5000 + "]}") == {"x.1": "an integer of 5000 digits; at most 4300"}
    assert load_json("-" + "9" * 4300) == -int("9" * 4300)
    # a long integer first, then nesting too deep for the decoder: still one clear refusal
    assert "nested" in issues("[" + "9" * 5000 + "," + "[" * 100_000 + "]" * 100_000 + "]")[""]


def test_text_that_is_not_utf8_or_not_json():
    assert issues(b'{"a": "caf\xe9"}') == {"": "is not UTF-8 text: byte 0xe9 at offset 10"}
    assert issues('{"a": ') == {"": "not valid JSON: Expecting value (at line 1, column 7)"}
    assert "BOM" in issues(b"\xef\xbb\xbf{}")[""]


def test_issues_are_capped():
    text = json.dumps({f"k{i}": 0 for i in range(100)}).replace("0", "NaN")
    with pytest.raises(SpecError) as info:
        load_json(text)
    assert len(info.value.issues) == MAX_ISSUES


def test_valid_json_reads_as_json_reads_it():
    for text in (
        '{"a": [1, 2.5, -0.0, true, null, "\\u00e9", {"b": {}}], "c": ""}',
        "[]",
        "1",
        '"s"',
        "null",
    ):
        assert load_json(text.encode()) == json.loads(text)
    manifest = json.dumps(
        {"files": [{"path": f"f{i}", "size": i, "sha256": "0" * 64} for i in range(50_000)]}
    )
    with cpu_time() as spent:
        assert len(load_json(manifest.encode())["files"]) == 50_000
    assert spent.seconds < 2.0
