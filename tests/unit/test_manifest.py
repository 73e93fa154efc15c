"""Dataset manifests as plain values: validation, sha256sum text, digest, diff."""

from __future__ import annotations

import hashlib
import json

import pytest

from gateway.core.lineage import manifest
from gateway.core.lineage.manifest import (
    FileEntry,
    check_entries,
    diff_manifests,
    manifest_digest,
    sha256sum_line,
    sha256sum_text,
    total_bytes,
)

A = "a" * 64
B = "b" * 64
C = "c" * 64


def raw(path, size=1, sha256=A):
    return {"path": path, "size": size, "sha256": sha256}


@pytest.mark.parametrize(
    ("item", "words"),
    [
        (raw("/etc/passwd"), ["entry 1", "'/etc/passwd'", "absolute", "relative"]),
        (raw("a/../b"), ["entry 1", "'a/../b'", "'..' component", "no '.', '..' or empty components"]),
        (raw("a//b"), ["entry 1", "'a//b'", "empty component"]),
        (raw("a/"), ["entry 1", "empty component"]),
        (raw("./a"), ["entry 1", "'.' component"]),
        (raw(""), ["entry 1", "path is empty"]),
        (raw("a\0b"), ["entry 1", "NUL"]),
        (raw("x" * 4097), ["entry 1", "4097 characters", "at most 4096"]),
        (raw("\ud800"), ["entry 1", "lone surrogate"]),
        (raw("b", sha256="xyz"), ["entry 1", "'b'", "sha256 must be 64 lowercase hex", "'xyz'"]),
        (raw("b", sha256="g" * 64), ["entry 1", "64 lowercase hex"]),
        (raw("b", size=-1), ["entry 1", "'b'", "size must be an integer number of bytes from 0 to", "-1"]),
        (raw("b", size=2**53), ["entry 1", f"from 0 to {2**53 - 1}", str(2**53)]),
        (raw("b", size=1.5), ["entry 1", "size must be an integer"]),
        (raw("b", size=True), ["entry 1", "size must be an integer"]),
        (raw("a"), ["entry 1", "'a'", "duplicate path", "entry 0", "each path appears once"]),
        ({"path": "b", "size": 1}, ["entry 1", "missing sha256", "exactly path, size, sha256"]),
        ({**raw("b"), "mtime": 3}, ["entry 1", "unknown mtime"]),
        ("b", ["entry 1", "must be a mapping"]),
    ],
)
def test_bad_entries_name_the_entry_the_problem_and_the_rule(item, words):
    with pytest.raises(ValueError) as caught:
        check_entries([raw("a"), item])
    for word in words:
        assert word in str(caught.value)


def test_files_adding_up_past_what_the_database_holds_are_refused():
    largest = [raw(f"f{i}", size=2**53 - 1) for i in range(1024)]
    check_entries(largest)  # 1024 * (2**53 - 1) < 2**63
    with pytest.raises(
        ValueError, match=r"entry 1024 \(path 'g'\): the files add up to more than 9223372036854775807"
    ):
        check_entries([*largest, raw("g", size=1024)])


def test_entries_sorted_by_utf8_bytes_and_hex_lowered():
    entries = check_entries([raw("é"), raw("z"), raw("a b", sha256=B.upper()), raw("a/b"), raw("\udcff")])
    assert [e.path for e in entries] == ["a b", "a/b", "z", "é", "\udcff"]
    assert entries[0].sha256 == B


def test_file_entry_checks_itself():
    with pytest.raises(ValueError, match="64 lowercase hex"):
        FileEntry("a", 1, A.upper())
    assert check_entries([FileEntry("a", 0, A)]) == [FileEntry("a", 0, A)]


def test_too_many_files(monkeypatch):
    monkeypatch.setattr(manifest, "MAX_FILES", 2)
    with pytest.raises(ValueError, match="entry 2 .*at most 2 files"):
        check_entries([raw("a"), raw("b"), raw("c")])


def test_sha256sum_lines_escape_like_coreutils():
    assert sha256sum_line(FileEntry("a b/c", 1, A)) == f"{A}  a b/c\n"
    assert sha256sum_line(FileEntry("x\\y", 1, A)) == f"\\{A}  x\\\\y\n"
    assert sha256sum_line(FileEntry("n\nl", 1, A)) == f"\\{A}  n\\nl\n"
    assert sha256sum_line(FileEntry("c\rr", 1, A)) == f"\\{A}  c\\rr\n"
    assert sha256sum_line(FileEntry("tab\there", 1, A)) == f"{A}  tab\there\n"
    text = sha256sum_text([FileEntry("b", 1, B), FileEntry("a", 1, A)])
    assert text == f"{B}  b\n{A}  a\n"  # in the order given


def test_digest_is_sha256_of_sorted_text_and_independent_of_order():
    entries = [FileEntry("b", 2, B), FileEntry("a", 1, A), FileEntry("\udcff", 3, C)]
    expected_bytes = f"{A}  a\n{B}  b\n{C}  ".encode() + b"\xff\n"
    assert manifest_digest(entries) == hashlib.sha256(expected_bytes).hexdigest()
    assert manifest_digest(reversed(entries)) == manifest_digest(entries)
    assert manifest_digest([]) == hashlib.sha256(b"").hexdigest()
    assert manifest_digest([FileEntry("a", 1, B)]) != manifest_digest([FileEntry("a", 1, A)])


def test_docstring_pipeline_is_the_tested_one():
    doc = " ".join(manifest.__doc__.replace("\\\n", " ").split())
    assert manifest.SHELL_DIGEST_PIPELINE in doc


def test_diff_by_path():
    old = [raw("keep", 1, A), raw("gone", 2, A), raw("edit", 3, A), raw("grow", 4, A)]
    new = [raw("keep", 1, A), raw("edit", 3, B), raw("grow", 5, A), raw("new", 6, C)]
    diff = diff_manifests(old, new)
    assert [e.path for e in diff.added] == ["new"]
    assert [e.path for e in diff.removed] == ["gone"]
    assert [(o.path, o.sha256, n.sha256) for o, n in diff.changed] == [("edit", A, B), ("grow", A, A)]
    assert diff.changed[1][1].size == 5
    assert diff.unchanged == 1
    as_json = json.loads(json.dumps(diff.to_dict()))
    assert as_json["changed"][0] == {
        "path": "edit",
        "old": {"size": 3, "sha256": A},
        "new": {"size": 3, "sha256": B},
    }
    assert as_json["added"] == [{"path": "new", "size": 6, "sha256": C}]
    assert as_json["unchanged"] == 1


def test_diff_of_identical_manifests_and_bad_input():
    same = diff_manifests([raw("a")], [FileEntry("a", 1, A)])
    assert (same.added, same.removed, same.changed, same.unchanged) == ([], [], [], 1)
    with pytest.raises(ValueError, match="duplicate"):
        diff_manifests([raw("a"), raw("a")], [])


def test_total_bytes():
    assert total_bytes([FileEntry("a", 3, A), FileEntry("b", 0, A), FileEntry("c", 2**40, A)]) == 3 + 2**40
    assert total_bytes([]) == 0
