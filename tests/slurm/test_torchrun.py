"""A 2-node torchrun job, really spread over two Slurm nodes, joining one rendezvous.

torch is not a dependency of the gateway; CI installs the CPU build so this
runs there. Elsewhere the test skips with the reason.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from gateway.core.sbatch.context import SubmitTarget
from gateway.core.sbatch.render import render_sbatch
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from tests.conftest import unique_tag, wait_for_accounting

pytestmark = [pytest.mark.slurm, pytest.mark.exclusive]

WORKER = r"""
import json, os, socket
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
value = torch.tensor([rank + 1.0])
dist.all_reduce(value)
print(json.dumps({
    "rank": rank,
    "world_size": world,
    "all_reduce_sum": value.item(),
    "node": os.environ.get("SLURMD_NODENAME"),
    "slurm_nodeid": os.environ.get("SLURM_NODEID"),
    "rdzv": os.environ.get("TORCHELASTIC_RUN_ID"),
    "master": f"{os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}",
}), flush=True)
dist.destroy_process_group()
"""


def test_two_node_torchrun_joins_one_rendezvous(slurm, template_env, run_dir):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed in this environment (CI installs torch==2.13.0 CPU build)")
    directory = Path(run_dir("ddp"))
    (directory / "worker.py").write_text(WORKER)
    bin_dir = str(Path(sys.executable).parent)
    spec = build_spec(
        {
            "name": "ddp2",
            "project": "test",
            "queue": "cpu",
            "launcher": "torchrun",
            "command": [sys.executable, str(directory / "worker.py")],
            "workdir": str(directory),
            "env": {"PATH": f"{bin_dir}:{os.environ['PATH']}", "OMP_NUM_THREADS": "1"},
            "resources": {"nodes": 2, "cpus_per_task": 1, "mem_gb": 1.5, "walltime_min": 5},
        }
    )
    rendered = render_sbatch(
        spec, template_env, run_id=directory.name, run_dir=str(directory), target=SubmitTarget("cpu")
    )
    job_id = slurm.prepare_submit(tag=unique_tag()).send(rendered.text)
    (record,) = wait_for_accounting(slurm, job_id, timeout_s=180)
    stdout = (directory / f"stdout-{job_id}.log").read_text()
    stderr = (directory / f"stderr-{job_id}.log").read_text()
    assert record.state is RunState.SUCCEEDED, f"stdout:\n{stdout}\nstderr:\n{stderr[-3000:]}"
    assert record.alloc_nodes == 2
    ranks = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    assert sorted(r["rank"] for r in ranks) == [0, 1], stdout
    assert {r["world_size"] for r in ranks} == {2}
    assert {r["all_reduce_sum"] for r in ranks} == {3.0}  # (0 + 1) + (1 + 1): both ranks joined
    assert {r["node"] for r in ranks} == {"c1", "c2"}, "one rank on each Slurm node"
    assert len({r["rdzv"] for r in ranks}) == 1 and ranks[0]["rdzv"] == job_id
    assert len({r["master"] for r in ranks}) == 1
