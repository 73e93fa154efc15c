"""The provisioning is idempotent: a run against a running cluster changes nothing."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.exclusive]
ROOT = Path(__file__).resolve().parents[2]


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
