"""start_daemon: a real long-lived process, started by the runner, its log, pid, exit status and stop."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gateway.adapters.runner import start_daemon
from gateway.errors import CommandError


def wait_for(predicate, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.01)


def test_a_daemon_runs_in_its_directory_with_exactly_its_environment(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    log.write_text("earlier\n")
    daemon = start_daemon(
        ["sh", "-c", 'echo "cwd=$(pwd) tz=$TZ home=${HOME-unset}"; echo oops >&2; exec sleep 30'],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "TZ": "UTC"},
        log_path=log,
    )
    try:
        wait_for(lambda: "oops" in log.read_text())
        assert log.read_text().startswith("earlier\n")  # appended, not replaced
        assert f"cwd={tmp_path} tz=UTC home=unset\n" in log.read_text()  # nothing of ours leaks in
        assert daemon.exit_status() is None
        assert Path(f"/proc/{daemon.pid}").exists()
        assert os.readlink(f"/proc/{daemon.pid}/cwd") == str(tmp_path)
    finally:
        daemon.stop()
    assert daemon.exit_status() == -15  # SIGTERM, and reaped
    assert not Path(f"/proc/{daemon.pid}").exists()  # reaped: no zombie left
    daemon.stop()  # a second time: nothing left to do


def test_a_daemon_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    daemon = start_daemon(
        ["sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        log_path=log,
    )
    wait_for(lambda: "ready" in log.read_text())
    began = time.monotonic()
    daemon.stop(grace_s=0.3)
    assert daemon.exit_status() == -9
    assert time.monotonic() - began < 5


def test_an_ended_daemon_says_how_it_ended(tmp_path: Path) -> None:
    daemon = start_daemon(["sh", "-c", "exit 3"], cwd=tmp_path, env={}, log_path=tmp_path / "log")
    wait_for(lambda: daemon.exit_status() is not None)
    assert daemon.exit_status() == 3
    daemon.stop()
    assert daemon.exit_status() == 3


@pytest.mark.parametrize("case", ["no program", "no directory", "no log directory"])
def test_a_daemon_that_cannot_start_is_a_command_error(tmp_path: Path, case: str) -> None:
    argv = [str(tmp_path / "no-such-program")] if case == "no program" else ["sleep", "30"]
    cwd = tmp_path / "gone" if case == "no directory" else tmp_path
    log = tmp_path / "gone" / "log" if case == "no log directory" else tmp_path / "log"
    with pytest.raises(CommandError, match=r"cannot start (.*no-such-program|sleep): "):
        start_daemon(argv, cwd=cwd, env={"PATH": "/usr/bin:/bin"}, log_path=log)
