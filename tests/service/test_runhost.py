"""The run host: file work done with the job's OS user's permissions, bounded in time and size.

Each test runs twice: on the local run host (the gateway on the login node)
and on the SSH run host (the same machine reached as a submit host through a
real sshd on loopback, logging in with each user's own key). The tests run
as root; ``gwtalice`` is a real OS user, so every call as her goes through
the agent started as her (``runuser``, or her SSH login) and the kernel
decides what she may read. Nothing here is faked.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.adapters.runhost import RunHost
from gateway.adapters.runhost_local import LocalRunHost
from gateway.adapters.runner import LocalRunner
from gateway.errors import RunHostError
from gateway.settings import Settings
from gateway.wiring import build_machine
from tests.conftest import JOB_ROOT
from tests.service.conftest import ensure_os_users

USER = "gwtalice"


@pytest.fixture(scope="module", params=["local", "ssh"])
def host(request) -> Iterator[RunHost]:
    ensure_os_users()
    if request.param == "local":
        yield LocalRunHost(LocalRunner(), timeout_s=20)
        return
    server = request.getfixturevalue("ssh_server")
    settings = Settings(**{k.removeprefix("GATEWAY_").lower(): v for k, v in server.settings().items()})
    runner, ssh_host, _ = build_machine(settings)
    yield ssh_host
    runner.close()


@pytest.fixture
def place(tmp_path_factory) -> Path:
    """A directory every user may enter and make run directories in, like a runs_dir (pytest's own
    tmp dirs are root's alone)."""
    path = JOB_ROOT / f"runhost-{os.urandom(4).hex()}"
    path.mkdir(parents=True)
    path.chmod(0o1777)
    return path


def test_a_root_only_file_gives_the_job_user_nothing(host, place):
    secret = place / "secret.txt"
    secret.write_text("root's secret\n")
    secret.chmod(0o600)
    read = host.read_file(str(secret), as_user=USER, max_bytes=1 << 20)
    assert read.data == b"" and read.exists and "ermission denied" in (read.error or "")
    as_root = host.read_file(str(secret), as_user="root", max_bytes=1 << 20)
    assert as_root.data == b"root's secret\n" and as_root.error is None


def test_a_file_of_hers_is_read_from_an_offset_and_as_a_tail(host, place):
    own = place / "own.log"
    own.write_text("".join(f"line {i}\n" for i in range(100)))
    os.chown(own, pwd.getpwnam(USER).pw_uid, -1)
    own.chmod(0o600)
    tail = host.read_file(str(own), as_user=USER, max_bytes=1 << 20, tail_lines=2)
    assert tail.text() == "line 98\nline 99\n" and tail.end_bytes == tail.size_bytes
    chunk = host.read_file(str(own), as_user=USER, max_bytes=7, offset_bytes=7)
    assert chunk.text() == "line 1\n" and chunk.offset_bytes == 7 and chunk.end_bytes == 14


def test_a_fifo_is_refused_at_once_not_waited_on(host, place):
    fifo = place / "pipe"
    os.mkfifo(fifo, 0o666)  # nothing ever writes to it: an open() for reading would block forever
    started = time.monotonic()
    for user in (USER, "root"):  # as her through the agent, and in this process
        read = host.read_file(str(fifo), as_user=user, max_bytes=1024)
        assert read.data == b"" and "not a regular file" in (read.error or ""), read
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    "path", ["/proc/self/environ", "/proc/1/status", "/sys/kernel/hostname", "/dev/zero"]
)
def test_pseudo_file_systems_are_never_read(host, path):
    for user in (USER, "root"):
        read = host.read_file(path, as_user=user, max_bytes=1024)
        assert read.data == b"" and read.error, (user, read)


def test_a_symlink_to_a_pseudo_file_is_refused_too(host, place):
    link = place / "env"
    link.symlink_to("/proc/self/environ")
    read = host.read_file(str(link), as_user="root", max_bytes=1024)
    assert read.data == b"" and "/proc" in (read.error or "")


def test_a_missing_file_is_not_an_error(host, place):
    read = host.read_file(str(place / "later.log"), as_user=USER, max_bytes=1024)
    assert not read.exists and read.error is None and read.data == b""


def test_reads_are_bounded_in_size(host, place):
    big = place / "big.log"
    big.write_bytes(b"x" * (3 << 20))
    big.chmod(0o644)
    read = host.read_file(str(big), as_user=USER, max_bytes=1 << 20, offset_bytes=0)
    assert len(read.data) == 1 << 20 and read.size_bytes == 3 << 20
    tail = host.read_file(str(big), as_user=USER, max_bytes=1 << 20, tail_lines=10)  # one long line
    assert len(tail.data) <= 1 << 20


def test_run_directories_are_private_to_their_user(host, place):
    (place / "runs").mkdir(mode=0o777)
    (place / "runs").chmod(0o1777)  # the runs_dir: every job user makes run directories in it
    run_dir = place / "runs" / "r-0123456789abcdef"
    host.make_run_dir(str(run_dir), owner=USER)
    info = run_dir.stat()
    assert info.st_uid == pwd.getpwnam(USER).pw_uid and stat.S_IMODE(info.st_mode) == 0o700
    with pytest.raises(RunHostError, match="exists"):
        host.make_run_dir(str(run_dir), owner=USER)  # a new run never reuses a directory
    other = host.read_file(str(run_dir / "x"), as_user="gwtbob", max_bytes=10)
    assert "ermission denied" in (other.error or "")


def test_files_are_written_as_the_job_user(host, place):
    run_dir = place / "r-written"
    host.make_run_dir(str(run_dir), owner=USER)
    host.write_file(str(run_dir / "inputs" / "m.sha256"), b"abc  x\n", as_user=USER)
    written = run_dir / "inputs" / "m.sha256"
    assert written.read_bytes() == b"abc  x\n"
    assert written.stat().st_uid == pwd.getpwnam(USER).pw_uid
    assert not list((run_dir / "inputs").glob("*.tmp"))
    with pytest.raises(RunHostError, match="ermission denied"):
        host.write_file("/root/planted", b"x", as_user=USER)


def test_writable_dir_says_why_not(host, place):
    assert host.writable_dir(str(place.parent), as_user="root") is None
    assert host.writable_dir("/tmp", as_user=USER) is None
    assert "not writable" in host.writable_dir("/root", as_user=USER)
    assert "does not exist" in host.writable_dir(str(place / "nope"), as_user=USER)
    assert "pseudo" in host.writable_dir("/proc/self", as_user="root")


def test_outputs_are_hashed_as_the_job_user(host, place):
    run_dir = place / "r-outputs"
    host.make_run_dir(str(run_dir), owner=USER)
    host.write_file(str(run_dir / "outputs" / "model.bin"), b"weights", as_user=USER)
    planted = run_dir / "outputs" / "root.bin"  # root's, in her directory: she cannot read it
    planted.write_bytes(b"secret")
    planted.chmod(0o600)
    scan = host.scan_outputs(str(run_dir), ["outputs/*"], as_user=USER, max_files=10)
    assert [(f.path, f.size_bytes) for f in scan.files] == [("outputs/model.bin", 7)]
    assert scan.files[0].sha256 == hashlib.sha256(b"weights").hexdigest()
    assert scan.errors == ["outputs/root.bin: Permission denied"]


def test_python_env_is_read_as_the_job_user(host, place):
    venv = place / "venv"
    site = venv / "lib" / "python3.11" / "site-packages" / "demo-1.2.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Name: Demo\nVersion: 1.2\n\nbody\n")
    for path in [venv, *venv.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    info = host.python_env(str(venv), as_user=USER)
    assert info["packages"] == 1 and info["python"] == "3.11" and len(info["packages_sha256"]) == 64
    venv.chmod(0o700)  # root's alone now
    assert "error" in host.python_env(str(venv), as_user=USER)


def test_an_unknown_user_is_an_error_not_a_crash(host, place):
    assert host.account("gw-no-such-user") is None
    with pytest.raises(RunHostError, match="gw-no-such-user"):
        host.read_file(str(place / "x"), as_user="gw-no-such-user", max_bytes=10)
