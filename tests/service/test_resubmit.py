"""A job that resubmits itself, on the real cluster (docs/cli.md, "A job that resubmits itself").

The gateway gives sbatch the rendered script's file (``RUN_DIR/job.sbatch``), so Slurm records it as
the job's Command; the job's copy of a user's script names the queue's Slurm account and partition
and the run's resubmission comment; the refresh adopts the resubmitted job as the run's next attempt.
Each script resubmits itself once: a marker file stops the chain (never an environment variable,
which a named --export would not carry).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from gateway.core.sbatch.options import sbatch_to_spec
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from gateway.services.runs.submission import script_file
from tests.service.conftest import PROJECT, refresh_until, unique_tag

pytestmark = pytest.mark.slurm

CHAIN = """#!/bin/bash
#SBATCH -A {project}
#SBATCH -p cpu
#SBATCH -t 2
#SBATCH -o {out}/slurm-%j.out
if [ ! -e {out}/chained ]; then
  touch {out}/chained
  sbatch "$0" || exit 7
fi
echo "job $SLURM_JOB_ID done"
"""


def sacct(job_ids: list[str]) -> dict[str, tuple[str, str]]:
    """Job id -> (account, comment) as slurmdbd recorded them (allocations only)."""
    out = subprocess.run(
        ["sacct", "-n", "-P", "-X", "--format=JobID,Account,Comment", f"--jobs={','.join(job_ids)}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {line.split("|")[0]: tuple(line.split("|")[1:3]) for line in out.splitlines() if line}  # type: ignore[misc]


def command_of(job_id: str) -> str:
    out = subprocess.run(
        ["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, check=True
    )
    found = re.search(r"\bCommand=(\S+)", out.stdout)
    assert found, out.stdout
    return found[1]


def settled(services, run_id: str, *, attempts: int):
    """The run once it has ``attempts`` attempts and has ended (refresh cycles as gw serve runs)."""
    for _ in range(6):
        run = refresh_until(services, run_id, timeout_s=120)
        if len(run.attempts) >= attempts:
            return run
    return run


def test_a_gw_sbatch_script_that_resubmits_itself_once(services, principal, tmp_path):
    os.chmod(tmp_path, 0o755)
    text = CHAIN.format(project=PROJECT, out=tmp_path)
    request = sbatch_to_spec(
        [], text, script_name="chain.sh", cwd=str(tmp_path), environ={"PATH": os.environ["PATH"]}
    )
    spec = build_spec({**request.spec, "tags": [unique_tag()]})
    run = services.runs.submit(spec, principal=principal)
    first = run.attempts[0].job_id
    assert first and command_of(first) == script_file(run.run_dir)
    assert Path(script_file(run.run_dir)).read_text() == run.script

    run = settled(services, run.id, attempts=2)
    assert [a.origin for a in run.attempts] == ["submit", "resubmit"], run.attempts
    assert [a.state for a in run.attempts] == [RunState.SUCCEEDED, RunState.SUCCEEDED]
    second = run.attempts[1].job_id
    assert second and second != first
    assert run.state is RunState.SUCCEEDED
    assert f"job {second} done" in (tmp_path / f"slurm-{second}.out").read_text()

    booked = sacct([first, second])
    account = booked[first][0]
    assert account != PROJECT, "the gateway's project name is no Slurm account"
    assert booked[second][0] == account, booked  # the resubmission went to the queue's Slurm account
    assert booked[second][1] == f"gw-{run.id}-0"  # the run's resubmission comment


def test_a_job_that_resubmits_the_script_slurm_names_as_its_command(services, principal):
    command = (
        'if [ ! -e "$GW_RUN_DIR/chained" ]; then touch "$GW_RUN_DIR/chained"; '
        'sbatch "$(scontrol show job "$SLURM_JOB_ID" | grep -o "Command=[^ ]*" | cut -d= -f2)" || exit 7; fi'
    )
    spec = build_spec(
        {
            "name": "chain",
            "project": PROJECT,
            "queue": "cpu",
            "command": command,
            "workdir": "/tmp",
            "resources": {"walltime_min": 2},
            "tags": [unique_tag()],
        }
    )
    run = services.runs.submit(spec, principal=principal)
    run = settled(services, run.id, attempts=2)
    assert [a.origin for a in run.attempts] == ["submit", "resubmit"], run.attempts
    assert [a.state for a in run.attempts] == [RunState.SUCCEEDED, RunState.SUCCEEDED]
    first, second = (a.job_id for a in run.attempts)
    assert first and second
    booked = sacct([first, second])
    assert booked[second][0] == booked[first][0]
    # the whole gateway job ran again: its own log, in the run's directory
    assert Path(run.run_dir, f"stdout-{second}.log").exists()
