"""The anchor file on a real file system (gateway/adapters/anchor.py)."""

from __future__ import annotations

import os
import stat
import subprocess
from datetime import UTC, datetime

import pytest

from gateway.adapters.anchor import TAIL_BYTES, AnchorFile
from gateway.core.audit.anchors import Checkpoint
from gateway.errors import AnchorError

T0 = datetime(2026, 11, 30, 4, 58, 58, tzinfo=UTC)


def cp(seq: int) -> Checkpoint:
    return Checkpoint(seq, f"{seq:064x}", T0)


def test_it_is_created_0600_with_its_directory_whatever_the_umask(tmp_path):
    anchors = AnchorFile(tmp_path / "deep" / "dir" / "anchors.jsonl")
    old = os.umask(0)
    try:
        anchors.prepare()
        anchors.append(cp(1))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(anchors.path).st_mode) == 0o600
    assert anchors.read().checkpoints == (cp(1),) and anchors.read().mode == 0o600


def test_appending_never_changes_what_is_there(tmp_path):
    anchors = AnchorFile(tmp_path / "anchors.jsonl")
    for seq in (1, 2, 3):
        anchors.append(cp(seq))
    assert (tmp_path / "anchors.jsonl").read_text() == "".join(cp(s).line() for s in (1, 2, 3))
    anchors.prepare()  # on an existing file: leaves it alone
    assert anchors.read().checkpoints == (cp(1), cp(2), cp(3))


def test_reading_a_missing_a_directory_or_a_garbage_file_describes_it(tmp_path):
    assert AnchorFile(tmp_path / "none").read().exists is False
    assert AnchorFile(tmp_path / "none").read_last().exists is False
    assert AnchorFile(tmp_path).read().error == "Is a directory"
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x00\x01 not json\n")
    read = AnchorFile(garbage).read()
    assert read.checkpoints == () and read.problems[0].startswith("line 1: it is not")


def test_the_last_line_is_read_from_the_tail_of_a_long_file(tmp_path):
    anchors = AnchorFile(tmp_path / "anchors.jsonl")
    with open(anchors.path, "w") as handle:
        handle.writelines(cp(n).line() for n in range(1, 2000))
    assert os.path.getsize(anchors.path) > 10 * TAIL_BYTES
    assert anchors.read_last().checkpoints == (cp(1999),)
    with open(anchors.path, "a") as handle:
        handle.write('{"seq": 2000, "hash": "ab')  # a write cut short
    assert anchors.read_last().problems == (
        "the last line is cut short (no newline at its end: a write was interrupted?)",
    )


def test_retire_moves_it_aside_and_keeps_it(tmp_path):
    anchors = AnchorFile(tmp_path / "anchors.jsonl")
    assert anchors.retire() is None
    anchors.append(cp(1))
    first = anchors.retire()
    anchors.append(cp(2))
    second = anchors.retire()
    assert first != second and not os.path.exists(anchors.path)
    assert AnchorFile(first).read().checkpoints == (cp(1),) and AnchorFile(second).read().checkpoints == (
        cp(2),
    )


def test_an_unwritable_place_raises_anchor_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    anchors = AnchorFile(blocker / "anchors.jsonl")  # its directory would have to be a file
    with pytest.raises(AnchorError, match="cannot create the audit anchor file"):
        anchors.prepare()
    with pytest.raises(AnchorError, match="cannot write the audit anchor file"):
        anchors.append(cp(1))


def test_an_append_only_file_still_takes_checkpoints_but_cannot_be_moved(tmp_path):
    anchors = AnchorFile(tmp_path / "anchors.jsonl")
    anchors.append(cp(1))
    if subprocess.run(["chattr", "+a", anchors.path], capture_output=True, check=False).returncode != 0:
        pytest.skip("chattr +a needs root and a file system that supports it (ext4, xfs)")
    try:
        anchors.append(cp(2))
        assert anchors.read().checkpoints == (cp(1), cp(2))
        with pytest.raises(AnchorError, match=r"Operation not permitted \(is it append-only"):
            anchors.retire()
        with pytest.raises(PermissionError):
            open(anchors.path, "w")  # noqa: SIM115 - the open itself is refused
    finally:
        subprocess.run(["chattr", "-a", anchors.path], check=True)
