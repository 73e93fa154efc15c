"""The run host agent's ``readable_file`` (a secret's file, checked at submission): a regular file
this user can open, never a FIFO (opened without blocking), a directory or a pseudo file system."""

from __future__ import annotations

import os

from gateway.adapters.runhost_agent import handle, readable_file


def test_a_regular_file_is_readable(tmp_path):
    path = tmp_path / "token"
    path.write_text("value\n")
    path.chmod(0o600)
    assert readable_file(str(path)) == {"error": None}
    assert handle({"op": "readable_file", "args": {"path": str(path)}}) == {
        "ok": True,
        "result": {"error": None},
    }


def test_what_is_not_a_readable_regular_file_is_refused_with_why(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert readable_file(str(fifo))["error"] == f"{fifo} is not a regular file"  # and it did not block
    assert readable_file(str(tmp_path))["error"] == f"{tmp_path} is not a regular file"
    assert "No such file" in readable_file(str(tmp_path / "missing"))["error"]
    assert readable_file("relative")["error"] == "relative is not an absolute path"
    assert "pseudo file system" in readable_file("/proc/self/environ")["error"]
