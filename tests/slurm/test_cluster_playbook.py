"""The provisioning is idempotent: a run against the running clusters changes nothing."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.exclusive]
ROOT = Path(__file__).resolve().parents[2]
SECOND_CONF = Path("/etc/slurm-gwlocal2/slurm.conf")


def test_second_playbook_run_changes_nothing(slurm):
    playbook = Path(sys.executable).parent / "ansible-playbook"
    result = subprocess.run(
        [str(playbook), "-i", "ansible/inventory.ini", "ansible/cluster.yml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    recap = result.stdout[result.stdout.rindex("PLAY RECAP") :]
    assert "changed=0" in recap and "failed=0" in recap, recap
    assert slurm.partitions(), "the cluster still answers"
    if SECOND_CONF.exists():  # slurm_second_cluster: true (the default)
        sinfo = subprocess.run(
            ["sinfo", "-h", "-o", "%R %N"],
            env={**os.environ, "SLURM_CONF": str(SECOND_CONF)},
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        assert sinfo.stdout.split("\n")[:2] == ["cpu e[1-2]", "gpu h1"], "the second cluster still answers"
