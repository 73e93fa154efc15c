"""Where a job's output goes: patterns checked at submission, expanded when read (no I/O)."""

from __future__ import annotations

import pytest

from gateway.core.sbatch.log_paths import default_pattern, fixed_directory, pattern_problem


@pytest.mark.parametrize(
    "pattern",
    [
        "/proc/self/environ",
        "/proc",
        "/sys/kernel/x",
        "/dev/shm/out.log",
        "/tmp/../proc/1/environ",
    ],
)
def test_pseudo_file_systems_are_no_place_for_output(pattern):
    assert "not a place for job output" in pattern_problem(pattern)


@pytest.mark.parametrize("pattern", ["/tmp/out-%j.log", "/srv/proc/x", "/devices/x", "/home/a/%u/%x.log"])
def test_ordinary_places_are_fine(pattern):
    assert pattern_problem(pattern) is None


def test_the_fixed_directory_stops_at_the_first_token():
    assert fixed_directory("/scratch/alice/run-%j/out.log") == "/scratch/alice"
    assert fixed_directory("/scratch/alice/out-%j.log") == "/scratch/alice"
    assert fixed_directory("/%u/out.log") == "/"
    assert fixed_directory("/out.log") == "/"


def test_default_patterns_live_in_the_run_directory():
    assert default_pattern("/runs/r-1", "stdout", array=False) == "/runs/r-1/stdout-%j.log"
    assert default_pattern("/runs/r-1", "stderr", array=True) == "/runs/r-1/stderr-%A_%a.log"


def test_dev_null_is_where_sbatch_output_may_be_thrown_away():
    assert pattern_problem("/dev/null") is None
