"""Scanning real trees in tmp_path, cross-checked with coreutils sha256sum and find."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
import tracemalloc
from pathlib import Path

import pytest

from gateway.adapters.files import scan, sha256_file
from gateway.core.lineage.manifest import (
    SHELL_DIGEST_PIPELINE,
    FileEntry,
    manifest_digest,
    sha256sum_text,
    total_bytes,
)
from gateway.errors import SpecError

pytestmark = pytest.mark.skipif(shutil.which("sha256sum") is None, reason="needs GNU coreutils")

NON_UTF8 = b"caf\xe9-\xff.bin"  # latin-1 bytes: not valid UTF-8


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_tree(tmp_path: Path) -> Path:
    """A dataset with every kind of name and link the scanner must handle."""
    root = tmp_path / "data"
    (root / "nested" / "deeper").mkdir(parents=True)
    (root / "nested" / "deeper" / "leaf.txt").write_bytes(b"leaf\n")
    (root / "empty").write_bytes(b"")
    (root / "with space.txt").write_bytes(b"space")
    (root / "new\nline").write_bytes(b"newline")
    (root / "back\\slash").write_bytes(b"backslash")
    (root / "carriage\rreturn").write_bytes(b"cr")
    with open(os.path.join(os.fsencode(root), NON_UTF8), "wb") as handle:
        handle.write(b"latin")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shared.bin").write_bytes(b"shared" * 1000)
    (root / "link-to-file").symlink_to(outside / "shared.bin")
    (root / "link-to-dir").symlink_to(outside, target_is_directory=True)
    return root


def scan_with_timeout(path: Path, timeout_s: float = 20.0):
    """scan() in a daemon thread: a scanner that opened a fifo would hang, and fail here instead."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["result"] = scan(path)
        except BaseException as exc:  # re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert not thread.is_alive(), "scan hung (did it open a fifo?)"
    if "error" in box:
        raise box["error"]
    return box["result"]


def test_tree_entries_follow_symlinks_and_keep_odd_names(tmp_path):
    root = build_tree(tmp_path)
    result = scan(root)
    assert result.kind == "directory" and result.root == str(root.resolve())
    by_path = {entry.path: entry for entry in result.entries}
    weird = os.fsdecode(NON_UTF8)
    assert set(by_path) == {
        "nested/deeper/leaf.txt",
        "empty",
        "with space.txt",
        "new\nline",
        "back\\slash",
        "carriage\rreturn",
        weird,
        "link-to-file",
        "link-to-dir/shared.bin",
    }
    assert by_path["empty"].size == 0 and by_path["empty"].sha256 == sha(b"")
    assert by_path["link-to-file"] == FileEntry("link-to-file", 6000, sha(b"shared" * 1000))
    assert by_path["link-to-dir/shared.bin"].sha256 == by_path["link-to-file"].sha256
    assert by_path[weird].sha256 == sha(b"latin")
    assert os.fsencode(weird) == NON_UTF8  # round-trips to the bytes on disk
    keys = [entry.path.encode("utf-8", "surrogateescape") for entry in result.entries]
    assert keys == sorted(keys)
    assert result.skipped == []


def test_sha256sum_check_accepts_the_text_and_the_shell_pipeline_agrees(tmp_path):
    root = build_tree(tmp_path)
    result = scan(root)
    check_file = tmp_path / "SHA256SUMS"  # outside the root
    check_file.write_bytes(sha256sum_text(result.entries).encode("utf-8", "surrogateescape"))
    checked = subprocess.run(
        ["sha256sum", "--check", "--strict", str(check_file)], cwd=root, capture_output=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count(b": OK\n") == len(result.entries)

    shell = subprocess.run(["bash", "-c", SHELL_DIGEST_PIPELINE], cwd=root, capture_output=True, check=True)
    assert shell.stdout.split()[0].decode() == manifest_digest(result.entries)


def test_digest_stable_on_rescan_and_changes_with_one_byte(tmp_path):
    root = build_tree(tmp_path)
    first = manifest_digest(scan(root).entries)
    assert manifest_digest(scan(root).entries) == first
    leaf = root / "nested" / "deeper" / "leaf.txt"
    leaf.write_bytes(b"leag\n")  # same size, one byte differs
    assert manifest_digest(scan(root).entries) != first


def test_fifo_is_skipped_and_never_read(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    (root / "real").write_bytes(b"x")
    fifo = root / "pipe"
    os.mkfifo(fifo)
    # Hold the fifo open read-write with bytes in it: a scanner that read it would take them.
    holder = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(holder, b"sentinel")
        result = scan_with_timeout(root)
        assert os.read(holder, 100) == b"sentinel"
    finally:
        os.close(holder)
    assert [entry.path for entry in result.entries] == ["real"]
    assert result.skipped == ["pipe"]
    with pytest.raises(SpecError, match="not a regular file"):
        sha256_file(fifo)


def test_dangling_symlink_is_skipped_like_find(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    (root / "dangling").symlink_to(tmp_path / "nowhere")
    result = scan(root)
    assert (result.entries, result.skipped) == ([], ["dangling"])


def test_directory_loop_is_a_clear_error(tmp_path):
    root = tmp_path / "data"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "up").symlink_to(root / "a", target_is_directory=True)
    with pytest.raises(SpecError) as caught:
        scan_with_timeout(root)
    message = str(caught.value)
    assert "directory loop" in message and "'a/b/up'" in message and "'a'" in message
    assert "symlink" in message


def test_symlink_loop_is_a_clear_error(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    (root / "self").symlink_to(root / "self")
    with pytest.raises(SpecError, match="symlink loop: 'self'"):
        scan(root)


def test_missing_path_says_which_and_why(tmp_path):
    with pytest.raises(SpecError, match="cannot read .*nope.*No such file or directory"):
        scan(tmp_path / "nope")
    with pytest.raises(SpecError, match="not a regular file"):
        sha256_file(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_says_which_and_why(tmp_path):
    locked = tmp_path / "locked"
    locked.write_bytes(b"x")
    locked.chmod(0)
    with pytest.raises(SpecError, match="cannot read .*locked.*Permission denied"):
        scan(tmp_path)


def test_file_scan_gives_the_basename_entry(tmp_path):
    target = tmp_path / "weights.bin"
    target.write_bytes(b"w" * 10)
    result = scan(target)
    assert result.kind == "file" and result.root == str(target.resolve())
    assert [(e.path, e.size, e.sha256) for e in result.entries] == [("weights.bin", 10, sha(b"w" * 10))]
    shell = subprocess.run(
        "sha256sum -- weights.bin | sha256sum", shell=True, cwd=tmp_path, capture_output=True, check=True
    )
    assert shell.stdout.split()[0].decode() == manifest_digest(result.entries)


def test_progress_is_called_and_ends_at_total_bytes(tmp_path):
    root = build_tree(tmp_path)
    calls: list[tuple[int, int, str]] = []
    result = scan(root, progress=lambda done, total, name: calls.append((done, total, name)))
    total = total_bytes(result.entries)
    assert calls and calls[-1][:2] == (total, total)
    assert all(call[1] == total for call in calls)
    assert [call[0] for call in calls] == sorted(call[0] for call in calls)
    assert {call[2] for call in calls} == {entry.path for entry in result.entries}  # empty file too


def test_sha256_file_chunks_and_memory_do_not_grow_with_size(tmp_path):
    sparse = tmp_path / "sparse.bin"
    with open(sparse, "wb") as handle:
        handle.write(b"head")
    os.truncate(sparse, 64 << 20)
    chunks: list[int] = []
    tracemalloc.start()
    try:
        digest, size = sha256_file(sparse, progress=chunks.append)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert size == 64 << 20 and sum(chunks) == size and max(chunks) <= 1 << 20
    assert peak < 3 << 20, f"traced peak {peak / 2**20:.1f} MiB"
    expected = hashlib.sha256(b"head" + bytes((64 << 20) - 4)).hexdigest()
    assert digest == expected
