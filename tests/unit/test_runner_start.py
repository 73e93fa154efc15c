"""LocalRunner.start: a real process starts at once and waits for its input; finish, abandon, time-outs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gateway.adapters.runner import LocalRunner
from gateway.errors import CommandError, CommandTimeout


def wait_for_file(path: Path, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_the_program_runs_before_its_input_comes(tmp_path: Path) -> None:
    started = tmp_path / "started"
    command = LocalRunner().start(["sh", "-c", f"touch {started}; tr a-z A-Z"])
    wait_for_file(started)  # it ran while its input was still held back
    result = command.finish("script text\n")
    assert (result.returncode, result.stdout, result.stderr) == (0, "SCRIPT TEXT\n", "")
    assert result.argv == ("sh", "-c", f"touch {started}; tr a-z A-Z")


def test_an_abandoned_program_gets_no_input_and_is_reaped(tmp_path: Path) -> None:
    started, after = tmp_path / "started", tmp_path / "read-its-input"
    command = LocalRunner().start(["sh", "-c", f"touch {started}; cat > /dev/null; touch {after}"])
    wait_for_file(started)
    command.abandon()
    assert command.proc.returncode == -9  # type: ignore[attr-defined]  # killed, and reaped
    time.sleep(0.2)
    assert not after.exists()
    command.abandon()  # a second time: nothing left to do


def test_the_time_limit_counts_from_the_start() -> None:
    command = LocalRunner().start(["sleep", "30"], timeout_s=0.5)
    time.sleep(0.3)
    began = time.monotonic()
    with pytest.raises(CommandTimeout, match="within 0.5 s"):
        command.finish(None)
    assert time.monotonic() - began < 5
    assert command.proc.returncode is not None  # type: ignore[attr-defined]


def test_a_program_that_cannot_start_fails_at_finish_as_run_does(tmp_path: Path) -> None:
    missing = LocalRunner().start([str(tmp_path / "no-such-program")])
    with pytest.raises(CommandError, match="cannot run"):
        missing.finish("x")
    missing.abandon()
    with pytest.raises(CommandError, match="no OS user 'gw-nobody-here'"):
        LocalRunner().start(["true"], as_user="gw-nobody-here").finish(None)


def test_another_user_runs_through_runuser_with_a_clean_environment(monkeypatch) -> None:
    monkeypatch.setenv("GATEWAY_DATABASE_URL", "postgresql://secret")
    result = LocalRunner().start(["sh", "-c", "id -un; env"], as_user="nobody").finish(None)
    assert result.returncode == 0, result.stderr
    user, *environment = result.stdout.splitlines()
    assert user == "nobody"
    assert not [line for line in environment if "secret" in line]


def test_an_input_and_outputs_larger_than_a_pipe_pass_whole_both_ways() -> None:
    """The input is written while both outputs are read (adapters/pipes.py): nothing waits on a full pipe."""
    text = "".join(f"line {i} é\n" for i in range(100_000))  # about 1.2 MB, several pipe capacities
    command = LocalRunner().start(["sh", "-c", "tee /dev/stderr"], timeout_s=60)
    result = command.finish(text)
    assert (result.returncode, result.stdout, result.stderr) == (0, text, text)


def test_a_program_that_ends_without_reading_its_input_is_no_error() -> None:
    result = LocalRunner().start(["sh", "-c", "echo gone; exit 3"]).finish("x" * 1_000_000)
    assert (result.returncode, result.stdout) == (3, "gone\n")


def test_output_is_decoded_as_text_mode_decoded_it() -> None:
    result = LocalRunner().start(["printf", "a\\r\\nb\\rc\\377\\n"]).finish(None)
    assert result.stdout == "a\nb\nc\ufffd\n"
