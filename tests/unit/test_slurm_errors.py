"""How the CLI adapter reads Slurm's failures.

These replay outputs Slurm printed in the wild (error text with exit 0,
socket time-outs, a controller that is down) through a small named fake
runner, since a healthy cluster will not print them on demand. The real
cluster tests cover the happy paths and the real rejections.
"""

from __future__ import annotations

import pytest

from gateway.adapters.runner import CommandResult, Deferred
from gateway.adapters.slurm import SlurmCLI
from gateway.errors import (
    CommandError,
    CommandTimeout,
    SlurmError,
    SlurmOutputError,
    SlurmUnavailable,
    SubmitRejected,
)


class ReplayRunner:
    """Fake runner: answers every command with one recorded result (or raises)."""

    def __init__(self, stdout: str = "", stderr: str = "", returncode: int = 0, raises=None):
        self.result = (stdout, stderr, returncode)
        self.raises = raises
        self.calls: list[tuple[str, ...]] = []

    def start(self, argv, **options):
        return Deferred(self, argv, **options)

    def run(self, argv, *, stdin=None, timeout_s=30.0, env=None, as_user=None):
        self.calls.append(tuple(argv))
        assert env and env["TZ"] == "UTC"
        if self.raises:
            raise self.raises
        stdout, stderr, code = self.result
        return CommandResult(tuple(argv), code, stdout, stderr, 0.01)


def cli(**kw) -> tuple[SlurmCLI, ReplayRunner]:
    runner = ReplayRunner(**kw)
    return SlurmCLI(runner), runner


def test_submit_reads_job_id_and_cluster_suffix():
    slurm, runner = cli(stdout="4242;gwlocal\n")
    assert slurm.prepare_submit(tag="gw-abc").send("#!/bin/bash\ntrue\n") == "4242"
    assert runner.calls == [("sbatch", "--parsable", "--comment=gw-abc")]


def test_submit_warning_is_not_an_error():
    slurm, _ = cli(stdout="77\n", stderr="sbatch: warning: can't honor --ntasks-per-node set to 2\n")
    assert slurm.prepare_submit(tag="t").send("#!/bin/bash\n") == "77"


def test_submit_rejection_keeps_slurms_message():
    slurm, _ = cli(
        stderr="sbatch: error: Batch job submission failed: Invalid account or account/partition "
        "combination specified\n",
        returncode=1,
    )
    with pytest.raises(SubmitRejected) as info:
        slurm.prepare_submit(tag="t").send("#!/bin/bash\n")
    assert "Invalid account or account/partition combination specified" in str(info.value)
    assert "sbatch: error" in info.value.stderr


def test_busy_controller_notice_then_a_job_id_is_a_submission():
    """Seen on this cluster during a 1,000-job burst: sbatch's retry notice is an "error:" line, but
    sbatch went on and queued the job (exit 0, job id). Calling it a refusal lost a queued job."""
    notice = "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying\n"
    slurm, _ = cli(stdout="9137\n", stderr=notice)
    assert slurm.prepare_submit(tag="t").send("#!/bin/bash\n") == "9137"
    slurm, _ = cli(
        stderr=notice + "sbatch: error: Batch job submission failed: Resource temporarily unavailable\n"
    )
    with pytest.raises(SubmitRejected, match="Resource temporarily unavailable"):
        slurm.prepare_submit(tag="t").send("#!/bin/bash\n")


def test_error_on_stderr_with_exit_zero_is_an_error():
    slurm, _ = cli(stdout="", stderr="sbatch: error: Batch job submission failed: Job violates accounting\n")
    with pytest.raises(SubmitRejected, match="Job violates accounting"):
        slurm.prepare_submit(tag="t").send("#!/bin/bash\n")
    slurm, _ = cli(stdout="", stderr="sacct: error: Unknown field 'Bogus'\n")
    with pytest.raises(SlurmError, match="exit status 0"):
        slurm.accounting(["1"])


@pytest.mark.parametrize(
    "stderr",
    [
        "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation",
        "squeue: error: slurm_receive_msg: Socket timed out on send/recv operation\n"
        "slurm_load_jobs error: Socket timed out on send/recv operation",
        "slurm_load_jobs error: Unable to contact slurm controller (connect failure)",
        "sacct: error: slurm_persist_conn_open_without_init: failed to open persistent connection "
        "to host:localhost:6819: Connection refused\nsacct: error: Problem talking to the database: "
        "Connection refused",
    ],
)
def test_no_answer_is_unavailable_never_rejected(stderr):
    slurm, _ = cli(stderr=stderr, returncode=1)
    with pytest.raises(SlurmUnavailable):
        slurm.prepare_submit(tag="t").send("#!/bin/bash\n")
    with pytest.raises(SlurmUnavailable):
        slurm.status(["1"])
    with pytest.raises(SlurmUnavailable):
        slurm.accounting(["1"])


def test_runner_timeout_and_missing_binary_are_unavailable():
    slurm, _ = cli(raises=CommandTimeout("squeue did not finish within 30 s"))
    with pytest.raises(SlurmUnavailable, match="unknown"):
        slurm.status(["1"])
    slurm, _ = cli(raises=CommandError("cannot run squeue: No such file or directory"))
    with pytest.raises(SlurmUnavailable, match="No such file"):
        slurm.nodes()


def test_invalid_job_id_from_squeue_means_not_live():
    slurm, _ = cli(stderr="slurm_load_jobs error: Invalid job id specified\n", returncode=1)
    assert slurm.status(["123"]) == []


def test_cancel_of_ended_job_is_fine_but_other_errors_are_not():
    slurm, _ = cli(
        stderr="scancel: error: Kill job error on job id 9: Job/step already completing or completed\n",
        returncode=0,
    )
    slurm.cancel("9")
    slurm, _ = cli(stderr="scancel: error: Invalid job id 9_x\n", returncode=1)
    with pytest.raises(SlurmError, match="Invalid job id"):
        slurm.cancel("9")


def test_sbatch_without_job_id_is_an_output_error():
    slurm, _ = cli(stdout="Submitted batch job\n")
    with pytest.raises(SlurmOutputError, match="no job id"):
        slurm.prepare_submit(tag="t").send("#!/bin/bash\n")


def test_one_call_for_many_jobs():
    slurm, runner = cli(stdout="")
    slurm.status([str(i) for i in range(1000)])
    slurm.accounting([str(i) for i in range(1000)])
    assert len(runner.calls) == 2
    assert runner.calls[0][0] == "squeue" and runner.calls[1][0] == "sacct"
    assert "--duplicates" in runner.calls[1]


def test_sbatch_that_cannot_start_is_a_rejection_not_unknown():
    slurm, _ = cli(raises=CommandError("cannot run sbatch: No such file or directory"))
    with pytest.raises(SubmitRejected, match="could not run sbatch"):
        slurm.prepare_submit(tag="t").send("#!/bin/bash\n")
    slurm, _ = cli(raises=CommandTimeout("sbatch did not finish within 60 s"))
    with pytest.raises(SlurmUnavailable):
        slurm.prepare_submit(tag="t").send("#!/bin/bash\n")
