"""gw's one bounded text reader: regular files only, a size cap, UTF-8; FIFOs are never waited on."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from gateway.adapters.files import TEXT_FILE_BYTES, load_spec_file, read_text
from gateway.errors import SpecError
from tests.cpu_clock import cpu_time


def refused(path, **kwargs) -> str:
    with cpu_time() as spent, pytest.raises(SpecError) as info:
        read_text(path, **kwargs)
    assert spent.seconds < 1.0
    assert info.value.source == os.fspath(path)
    (issue,) = info.value.issues
    return issue.message


def test_a_regular_file_is_read(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("name: é\n", encoding="utf-8")
    assert read_text(path) == "name: é\n"
    link = tmp_path / "link.yaml"
    link.symlink_to(path)
    assert read_text(link) == "name: é\n"  # the user's own symlinks are followed


def test_special_files_are_refused_before_reading(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # nothing ever writes to it: a plain read would block forever
    assert refused(fifo) == "it is a FIFO (named pipe), not a regular file; give the path of a regular file"
    (tmp_path / "to-fifo").symlink_to(fifo)
    assert "FIFO" in refused(tmp_path / "to-fifo")
    assert "a character device" in refused("/dev/zero")
    assert "a directory" in refused(tmp_path)
    sock_path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        assert "a socket" in refused(sock_path)
    assert refused(tmp_path / "missing") == "cannot read it: No such file or directory"


def test_the_size_cap_is_exact(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert read_text(path, max_bytes=100) == "x" * 100
    assert refused(path, max_bytes=99) == "it is 100 bytes; at most 99 are read"
    huge = tmp_path / "huge"
    with huge.open("wb") as handle:
        handle.truncate(2 << 30)  # sparse: nothing written
    assert refused(huge) == f"it is {2 << 30} bytes; at most {TEXT_FILE_BYTES} are read"


def test_text_that_is_not_utf8_says_where(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: x\ntags: [caf\xe9]\n")
    assert refused(path, what="site file") == "it is not UTF-8 text: byte 0xe9 on line 2, column 11"


def test_spec_files_and_their_script_files(tmp_path):
    (tmp_path / "job.sh").write_text("#!/bin/bash\necho hi\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: s\nproject: p\nqueue: cpu\nscript_file: job.sh\n")
    assert load_spec_file(spec).script == "#!/bin/bash\necho hi\n"
    spec.write_text("name: s\nproject: p\nqueue: cpu\nscript_file: /dev/zero\n")
    with pytest.raises(SpecError) as info:
        load_spec_file(spec)
    assert info.value.source == str(spec)
    assert info.value.issues[0].path == "script_file" and "character device" in info.value.issues[0].message
    spec.write_text("name: s\nproject: p\nqueue: cpu\nqueue: gpu\ncommand: 'true'\n")
    with pytest.raises(SpecError, match="duplicate key 'queue', first on line 3"):
        load_spec_file(Path(spec))
