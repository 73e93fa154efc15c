"""Failure classes on the real cluster: real jobs fail in each way, and classify() names it.

Every job is submitted once, at the start of the module (the time-limit job
alone needs 1-2 minutes), and each test waits for its own; the whole file
takes about as long as that one job.
"""

from __future__ import annotations

import hashlib
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway.core.runs.failures import EndedAttempt, classify
from gateway.core.runs.steps import StepRecord, parse_steps, steps_file_name
from gateway.core.sbatch.context import SubmitTarget
from gateway.core.sbatch.render import render_sbatch
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import RunSpec, build_spec
from tests.conftest import JOB_ROOT, unique_tag, wait_for, wait_for_accounting

pytestmark = pytest.mark.slurm

# Grows by 2 MB every 0.1 s, so sacct's sampling (every 2 s here) sees MaxRSS climb to the limit.
GROW = "import time\nchunks = []\nwhile True:\n    chunks.append(bytearray(2 << 20))\n    time.sleep(0.1)\n"


@dataclass
class Job:
    spec: RunSpec
    job_id: str
    directory: Path
    tag: str


def make_run_dir(prefix: str) -> str:
    """conftest's ``run_dir``, for a module-wide fixture (the jobs are submitted together)."""
    path = JOB_ROOT / f"{prefix}-{uuid.uuid4().hex[:10]}"
    path.mkdir(parents=True, mode=0o777)
    path.chmod(0o777)
    return str(path)


def submit(slurm, template_env, run_dir, data) -> Job:
    spec = build_spec({"project": "test", "queue": "cpu", **data})
    directory = run_dir(spec.name)
    rendered = render_sbatch(
        spec, template_env, run_id=Path(directory).name, run_dir=directory, target=SubmitTarget(spec.queue)
    )
    tag = unique_tag()
    return Job(spec, slurm.prepare_submit(tag=tag).send(rendered.text), Path(directory), tag)


def case_specs(data_dir: Path) -> dict[str, dict]:
    good_file = data_dir / "train.bin"
    good_file.write_bytes(b"tokens v2")
    stale_digest = hashlib.sha256(b"tokens v1").hexdigest()
    return {
        # first: the longest job starts first
        "time_limit": {"command": "sleep 100", "resources": {"walltime_min": 1}},
        "out_of_memory": {
            "command": [sys.executable, "-c", GROW],
            "resources": {"mem_gb": 0.1, "walltime_min": 3},
        },
        "missing_dataset": {
            "datasets": [str(data_dir / "nope" / "it's missing.bin"), "wiki@3"],
            "command": "echo should not run",
        },
        "digest_mismatch": {
            "datasets": [str(good_file)],
            "dataset_digests": {str(good_file): stale_digest},
            "command": "echo should not run",
        },
        "missing_image": {"container_image": str(data_dir / "images" / "torch.sif"), "command": "true"},
        "missing_venv": {"venv": str(data_dir / "venvs" / "train"), "command": "true"},
        "user_code": {"command": "echo 'about to fail' >&2; exit 1"},
        "cancelled": {"command": "sleep 300", "resources": {"walltime_min": 10}},
    }


@pytest.fixture(scope="module")
def jobs(slurm, template_env):
    data_dir = Path(make_run_dir("fc-data"))
    submitted = {
        case: submit(slurm, template_env, make_run_dir, {"name": f"fc-{case.replace('_', '-')}", **data})
        for case, data in case_specs(data_dir).items()
    }
    yield submitted
    for job in submitted.values():
        slurm.cancel(job.job_id)  # no-op for ended jobs


def outcome(slurm, job: Job, *, timeout_s: float = 90.0):
    (record,) = wait_for_accounting(slurm, job.job_id, tag=job.tag, timeout_s=timeout_s)
    steps_path = job.directory / steps_file_name(record.job_id_raw)
    steps = parse_steps(steps_path.read_text(errors="replace")) if steps_path.exists() else []
    stderr_path = job.directory / f"stderr-{job.job_id}.log"
    stderr = stderr_path.read_text(errors="replace") if stderr_path.exists() else ""
    info = classify(
        EndedAttempt(
            state=record.state,
            slurm_state=record.slurm_state,
            exit_code=record.exit_code,
            exit_signal=record.exit_signal,
            steps=steps,
            stderr_tail=stderr[-8000:],
            max_rss_kb=record.max_rss_kb,
            requested_mem_mb=job.spec.resources.mem_mb,
            walltime_min=job.spec.resources.walltime_min,
            node_list=record.node_list,
            cancelled_by=None if record.cancelled_by_uid is None else str(record.cancelled_by_uid),
            dataset_paths=[d for d in job.spec.datasets if d.startswith("/")],
        )
    )
    return record, steps, info


def started(steps: list[StepRecord]) -> bool:
    return any(s.step == "user_command" for s in steps)


def test_missing_dataset_is_data_access_and_the_command_never_starts(slurm, jobs):
    record, steps, info = outcome(slurm, jobs["missing_dataset"])
    assert record.state is RunState.FAILED and record.exit_code == 80
    assert info.klass == "data_access", info
    assert not started(steps), steps
    missing = jobs["missing_dataset"].spec.datasets[0]
    assert info.evidence["failing_step"] == {"step": "inputs", "detail": f"dataset path missing: {missing}"}
    assert missing in info.evidence["log_tail"]  # the job said it on stderr too


def test_digest_mismatch_is_data_access(slurm, jobs):
    record, steps, info = outcome(slurm, jobs["digest_mismatch"])
    assert info.klass == "data_access" and record.exit_code == 80
    assert info.evidence["failing_step"]["detail"].startswith("dataset digest mismatch: ")
    assert hashlib.sha256(b"tokens v2").hexdigest() in info.evidence["failing_step"]["detail"]
    assert not started(steps)


def test_missing_container_image_is_environment(slurm, jobs):
    record, steps, info = outcome(slurm, jobs["missing_image"])
    assert info.klass == "environment" and record.exit_code == 81
    assert info.evidence["failing_step"]["detail"].startswith("container image missing: ")
    assert [s.step for s in steps] == ["inputs", "environment"]


def test_missing_venv_is_environment(slurm, jobs):
    record, _, info = outcome(slurm, jobs["missing_venv"])
    assert info.klass == "environment" and record.exit_code == 81
    assert "venv" in info.evidence["failing_step"]["detail"] and "venv" in info.action


def test_user_code_failure(slurm, jobs):
    record, steps, info = outcome(slurm, jobs["user_code"])
    assert record.state is RunState.FAILED and record.exit_code == 1
    assert info.klass == "user_code" and not info.retryable_by_default
    assert [(s.step, s.status) for s in steps][-2:] == [
        ("user_command", "started"),
        ("user_command", "failed"),
    ]
    assert steps[-1].detail == "exit 1"
    assert info.evidence["log_tail"].strip() == "about to fail"


def test_cancelled_job(slurm, jobs):
    job = jobs["cancelled"]
    wait_for(
        lambda: any(s.state is RunState.RUNNING for s in slurm.status([job.job_id])),
        timeout_s=60,
        what=f"job {job.job_id} to start",
    )
    wait_for(lambda: started(parse_steps(_read(job.directory / steps_file_name(job.job_id)))), what="command")
    slurm.cancel(job.job_id)
    record, steps, info = outcome(slurm, job)
    assert info.klass == "cancelled", info
    assert info.evidence["cancelled_by"] == str(record.cancelled_by_uid) and "by " in info.summary
    # Slurm's SIGTERM ends the batch shell while its command runs
    assert (steps[-1].step, steps[-1].status, steps[-1].detail) == (
        "user_command",
        "failed",
        "killed by a signal while running",
    )


def test_out_of_memory(slurm, jobs):
    record, _, info = outcome(slurm, jobs["out_of_memory"], timeout_s=120)
    assert record.state is RunState.OUT_OF_MEMORY, record
    assert info.klass == "out_of_memory"
    assert info.evidence["requested_mem_mb"] == 103
    assert record.max_rss_kb and record.max_rss_kb > 20_000, "sacct sampled the growing memory"
    assert "of 0.1 GB requested" in info.action and "mem_gb: " in info.action


def test_time_limit(slurm, jobs):
    record, steps, info = outcome(slurm, jobs["time_limit"], timeout_s=180)
    assert record.state is RunState.TIMED_OUT, record
    assert info.klass == "time_limit" and not info.retryable_by_default
    assert "longer walltime than 1 min" in info.action
    assert steps[-1] == StepRecord("user_command", "failed", "killed by a signal while running", steps[-1].at)


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""
