"""The local set-up's second cluster (gwlocal2) beside gwlocal, on the same slurmdbd.

``make cluster`` brings it up (ansible/cluster.yml, docs/cluster.md#the-second-cluster-gwlocal2).
These tests use Slurm's own multi-cluster commands (``sbatch -M``, ``sacct -M``,
``SLURM_CONF``), as a user would, and cancel exactly the jobs they submit.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.conftest import JOB_ROOT, wait_for

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[2]
FIRST, SECOND = "gwlocal", "gwlocal2"
SECOND_CONF = Path("/etc/slurm-gwlocal2/slurm.conf")
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL")
# Prints which cluster, node and job it ran on, also from a step: srun inside a job sent with
# -M must reach that job's own cluster (its slurmd sets SLURM_CONF in the job's environment).
PROBE = (
    "#!/bin/bash\n"
    'echo "batch $SLURM_CLUSTER_NAME $SLURMD_NODENAME $SLURM_JOB_ID"\n'
    "srun -n1 bash -c 'echo \"step $SLURM_CLUSTER_NAME $SLURMD_NODENAME $SLURM_JOB_ID\"'\n"
)


@pytest.fixture(scope="module")
def second_cluster():
    if not SECOND_CONF.exists():
        pytest.skip(f"no {SECOND_CONF}: the playbook ran with slurm_second_cluster=false")
    return SECOND_CONF


@pytest.fixture
def job_dir():
    path = JOB_ROOT / f"two-clusters-{uuid.uuid4().hex[:10]}"
    path.mkdir(parents=True, mode=0o777)
    path.chmod(0o777)
    return path


@pytest.fixture
def cancel_afterwards():
    """Jobs to cancel at the end, as (cluster, job id): exactly the ones a test submitted."""
    jobs: list[tuple[str, str]] = []
    yield jobs
    for cluster, job_id in jobs:
        slurm("scancel", "-M", cluster, job_id, check=False)


def slurm(*argv: str, conf: Path | None = None, stdin: str | None = None, check: bool = True) -> str:
    """Run a Slurm command (with SLURM_CONF=conf when given); its stdout."""
    env = {**os.environ, "TZ": "UTC"}
    env.pop("SLURM_CONF", None)
    if conf is not None:
        env["SLURM_CONF"] = str(conf)
    result = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, timeout=60)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {result.returncode}: {result.stderr.strip()}")
    return result.stdout


def submit(*options: str, conf: Path | None = None, script: str = PROBE) -> str:
    """sbatch the script; the job id (without the ';cluster' that --parsable adds under -M)."""
    out = slurm("sbatch", "--parsable", "--time=2", "--mem=64M", *options, stdin=script, conf=conf)
    return out.strip().split(";")[0]


def accounting(job_id: str, clusters: str = f"{FIRST},{SECOND}") -> dict[str, tuple[str, str]]:
    """Cluster -> (state, job name) of ``job_id`` in ``sacct -M clusters``, for this test's jobs only."""
    text = slurm("sacct", "-M", clusters, "-X", "-n", "-P", "-j", job_id, "-o", "Cluster,State,JobName")
    rows = [line.split("|") for line in text.splitlines() if line.strip()]
    return {cluster: (state, name) for cluster, state, name in rows if name.startswith("gwt2c-")}


def settled(job_id: str, names: dict[str, str]) -> dict[str, tuple[str, str]] | None:
    """The sacct rows of ``job_id`` once every named cluster has its job there in a final state."""
    rows = accounting(job_id)
    done = all(rows.get(c, ("", ""))[1] == n and rows[c][0].split()[0] in TERMINAL for c, n in names.items())
    return rows if done else None


def test_both_clusters_are_registered_on_one_slurmdbd(second_cluster):
    rows = slurm("sacctmgr", "-nP", "show", "cluster", "format=Cluster,ControlHost,ControlPort").splitlines()
    clusters = {line.split("|")[0]: line.split("|")[1:] for line in rows}
    assert clusters[FIRST] == ["127.0.0.1", "6817"] and clusters[SECOND] == ["127.0.0.1", "6827"], rows
    assocs = slurm("sacctmgr", "-nP", "show", "assoc", "where", f"cluster={SECOND}", "format=Account,User")
    assert "root|root" in assocs.splitlines(), assocs
    # The same partition names on both: a queue is (cluster, partition).
    for conf, nodes in (
        (None, {"cpu": "c[1-2]", "gpu": "g[1-2]"}),
        (second_cluster, {"cpu": "e[1-2]", "gpu": "h1"}),
    ):
        parts = dict(line.split() for line in slurm("sinfo", "-h", "-o", "%R %N", conf=conf).splitlines())
        assert parts == nodes


def test_a_job_runs_on_each_cluster_and_sacct_tells_them_apart(second_cluster, job_dir, cancel_afterwards):
    name = f"gwt2c-{uuid.uuid4().hex[:8]}"
    out = str(job_dir / "%x-%j.out")
    first = submit("-J", f"{name}-a", "-o", out)
    cancel_afterwards.append((FIRST, first))
    by_name = submit("-M", SECOND, "-J", f"{name}-b", "-o", out)  # from gwlocal's slurm.conf
    cancel_afterwards.append((SECOND, by_name))
    by_conf = submit("-J", f"{name}-c", "-o", out, conf=second_cluster)  # the second cluster's own
    cancel_afterwards.append((SECOND, by_conf))

    wanted = {
        (first, FIRST, "a", ("c1", "c2")),
        (by_name, SECOND, "b", ("e1", "e2")),
        (by_conf, SECOND, "c", ("e1", "e2")),
    }
    for job_id, cluster, letter, nodes in wanted:
        rows = wait_for(
            lambda j=job_id, c=cluster, n=f"{name}-{letter}": settled(j, {c: n}),
            timeout_s=180,
            what=f"{cluster} job {job_id}",
        )
        assert rows[cluster] == ("COMPLETED", f"{name}-{letter}")
        lines = (job_dir / f"{name}-{letter}-{job_id}.out").read_text().split("\n")
        batch, step = lines[0].split(), lines[1].split()
        assert batch[0] == "batch" and batch[1] == cluster and batch[2] in nodes and batch[3] == job_id, lines
        assert step[0] == "step" and step[1:] == batch[1:], lines
    everywhere = slurm(
        "sacct", "-M", "all", "-X", "-n", "-P", "-j", f"{first},{by_name}", "-o", "Cluster,JobID,JobName"
    )
    assert f"{FIRST}|{first}|{name}-a" in everywhere and f"{SECOND}|{by_name}|{name}-b" in everywhere


def test_the_same_job_id_on_both_clusters(second_cluster, job_dir, cancel_afterwards):
    """22.05 has no ``sbatch --jobid``: scripts/slurm-jobid-floor raises gwlocal2's next id to gwlocal's."""
    name = f"gwt2c-{uuid.uuid4().hex[:8]}"
    out = str(job_dir / "%x-%j.out")
    script = '#!/bin/bash\necho "$SLURM_CLUSTER_NAME $SLURM_JOB_ID"\n'
    seen = []
    for _ in range(3):  # another engineer's job on gwlocal2 may take the id in between: try again
        first = submit("-H", "-J", f"{name}-a", "-o", out, script=script)
        cancel_afterwards.append((FIRST, first))
        floor = subprocess.run(
            [str(ROOT / "scripts/slurm-jobid-floor"), str(second_cluster), first],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        assert floor.returncode == 0, floor.stderr
        second = submit("-M", SECOND, "-H", "-J", f"{name}-b", "-o", out, script=script)
        cancel_afterwards.append((SECOND, second))
        seen.append((first, second))
        if second == first:
            break
    else:
        pytest.fail(
            f"no collision forced in 3 tries (gwlocal, gwlocal2 ids): {seen}; the floor only raises "
            "gwlocal2's counter, so it fails when gwlocal2's ids are ahead of gwlocal's"
        )

    job_id = first
    # Both held jobs with this id are in the queues at once, each on its own cluster.
    queued = slurm(
        "squeue", "-M", f"{FIRST},{SECOND}", "--noheader", "-O", "Cluster:|,JobID:|,Name:|", "-j", job_id
    )
    assert sorted(queued.split()) == sorted([f"{FIRST}|{job_id}|{name}-a|", f"{SECOND}|{job_id}|{name}-b|"])
    slurm("scontrol", "release", job_id)
    slurm("scontrol", "-M", SECOND, "release", job_id)
    rows = wait_for(
        lambda: settled(job_id, {FIRST: f"{name}-a", SECOND: f"{name}-b"}),
        timeout_s=180,
        what=f"job {job_id} on both",
    )
    assert rows == {FIRST: ("COMPLETED", f"{name}-a"), SECOND: ("COMPLETED", f"{name}-b")}
    assert (job_dir / f"{name}-a-{job_id}.out").read_text() == f"{FIRST} {job_id}\n"
    assert (job_dir / f"{name}-b-{job_id}.out").read_text() == f"{SECOND} {job_id}\n"


def test_the_job_id_floor_refuses_bad_input(second_cluster):
    script = str(ROOT / "scripts/slurm-jobid-floor")
    for argv, words in (
        ([str(second_cluster), "x"], "whole number from 1"),
        ([str(second_cluster), "0"], "whole number from 1"),
        (["/etc/slurm/slurm.conf", "5"], "does not include /etc/slurm/jobid.conf"),
        (["/nonexistent/slurm.conf", "5"], "no readable slurm.conf"),
        ([str(second_cluster)], "usage"),
    ):
        result = subprocess.run([script, *argv], capture_output=True, text=True, timeout=30, check=False)
        assert result.returncode == 2 and words in result.stderr, (argv, result.stderr)
