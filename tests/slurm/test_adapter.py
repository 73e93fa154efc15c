"""The Slurm backends against the real local cluster: real jobs, real sacct / slurmdbd.

Every test runs against both backends (``cli``: sbatch and friends as root; ``rest``:
slurmrestd daemons, submitting as gwtalice), so both give the same typed values.
"""

from __future__ import annotations

import json
import os
import pwd
import socket
import time
from pathlib import Path

import pytest

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm import SlurmCLI
from gateway.core.sbatch.context import SubmitTarget
from gateway.core.sbatch.render import render_sbatch
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from gateway.errors import SlurmUnavailable, SpecError, SubmitRejected
from tests.conftest import SESSION_START, unique_tag, wait_for, wait_for_accounting
from tests.slurm.rest_world import Backend, ensure_rest_users, remove, rest_backend, socket_dir

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module", params=["cli", "rest"])
def slurm(request):
    """The backend under test, submitting as its user (root for cli, gwtalice for rest)."""
    if request.param == "cli":
        yield Backend(SlurmCLI(LocalRunner()), None, os.getuid())
        return
    ensure_rest_users()
    directory = socket_dir()
    rest = rest_backend(directory)
    try:
        yield Backend(rest, "gwtalice", pwd.getpwnam(rest.query_user).pw_uid)
    finally:
        rest.close()
        remove(directory)


def submit(slurm, template_env, run_dir, data, *, partition=None):
    spec = build_spec({"project": "test", "queue": "cpu", **data})
    directory = run_dir(spec.name)
    rendered = render_sbatch(
        spec,
        template_env,
        run_id=Path(directory).name,
        run_dir=directory,
        target=SubmitTarget(partition or spec.queue),
    )
    tag = unique_tag()
    job_id = slurm.prepare_submit(tag=tag).send(rendered.text)
    return job_id, Path(directory), tag


def read_stdout(directory: Path, job_id: str) -> str:
    return (directory / f"stdout-{job_id}.log").read_text()


def test_completed_job_is_accounted(slurm, template_env, run_dir):
    job_id, directory, tag = submit(
        slurm,
        template_env,
        run_dir,
        {
            "name": "ok",
            "command": 'echo started; sleep 2; echo "lr=$GW_PARAM_LR"',
            "params": {"lr": 0.25},
            "resources": {"cpus_per_task": 2, "mem_gb": 0.5, "walltime_min": 5},
        },
    )
    (record,) = wait_for_accounting(slurm, job_id)
    assert record.state is RunState.SUCCEEDED and record.slurm_state == "COMPLETED"
    assert (record.exit_code, record.exit_signal) == (0, 0)
    assert record.elapsed_s >= 2
    assert record.alloc_cpus == 2
    assert record.alloc_mem_mb == 512
    assert record.alloc_nodes == 1
    assert record.node_list in {"c1", "c2"}
    assert record.timelimit_min == 5
    assert record.start_time and record.end_time and record.start_time <= record.end_time
    assert record.start_time.tzinfo is not None
    assert record.max_rss_kb is not None and record.max_rss_kb > 0
    assert record.comment == tag
    assert read_stdout(directory, job_id).splitlines() == ["started", "lr=0.25"]
    assert json.loads((directory / "params.json").read_text()) == {"lr": 0.25}


def test_exit_code_is_recorded(slurm, template_env, run_dir):
    job_id, _, _ = submit(slurm, template_env, run_dir, {"name": "exit3", "command": "exit 3"})
    (record,) = wait_for_accounting(slurm, job_id)
    assert record.state is RunState.FAILED
    assert (record.exit_code, record.exit_signal) == (3, 0)


def test_cancel_running_job_records_who(slurm, template_env, run_dir):
    job_id, _, _ = submit(slurm, template_env, run_dir, {"name": "long", "command": "sleep 300"})
    wait_for(
        lambda: any(s.state is RunState.RUNNING for s in slurm.status([job_id])),
        what=f"job {job_id} to start",
    )
    slurm.cancel(job_id)
    (record,) = wait_for_accounting(slurm, job_id)
    assert record.state is RunState.CANCELLED
    assert record.cancelled_by_uid == slurm.admin_uid
    slurm.cancel(job_id)  # cancelling an ended job again is not an error


def test_cancel_pending_job(slurm, template_env, run_dir):
    # Hold the job so it certainly waits (root's hold is an admin hold).
    spec_job, _, _ = submit(slurm, template_env, run_dir, {"name": "later", "command": "true"})
    LocalRunner().run(["scontrol", "hold", spec_job])
    (status,) = slurm.status([spec_job])
    assert status.state is RunState.HELD and status.reason == "JobHeldAdmin"
    slurm.cancel(spec_job)
    (record,) = wait_for_accounting(slurm, spec_job)
    assert record.state is RunState.CANCELLED and record.start_time is None


def test_gpu_job_gets_its_gpus(slurm, template_env, run_dir):
    job_id, directory, _ = submit(
        slurm,
        template_env,
        run_dir,
        {
            "name": "gpu2",
            "queue": "gpu",
            "command": 'echo "gpus=${CUDA_VISIBLE_DEVICES:-none} job_gpus=${SLURM_JOB_GPUS:-none}"',
            "resources": {"gpus_per_node": 2, "gpu_type": "fake"},
        },
    )
    (record,) = wait_for_accounting(slurm, job_id)
    assert record.state is RunState.SUCCEEDED
    assert record.alloc_gpus == 2
    assert record.alloc_tres.get("gres/gpu") == "2"
    line = read_stdout(directory, job_id).strip()
    visible = line.split()[0].removeprefix("gpus=").split(",")
    assert len(visible) == 2, line
    assert record.node_list in {"g1", "g2"}


def test_array_sweep_each_task_reads_its_params(slurm, template_env, run_dir):
    job_id, directory, _ = submit(
        slurm,
        template_env,
        run_dir,
        {
            "name": "sweep5",
            "command": 'cat "$GW_PARAMS_FILE"',
            "params": {"epochs": 1},
            "sweep": {"params": [{"lr": 10**-i} for i in range(5)]},
            "resources": {"mem_gb": 0.25},
        },
    )
    records = wait_for_accounting(slurm, job_id, count=5)
    assert sorted(int(r.array_task_id) for r in records) == [0, 1, 2, 3, 4]
    assert {r.array_job_id for r in records} == {job_id}
    assert all(r.state is RunState.SUCCEEDED for r in records)
    for task in range(5):
        seen = json.loads((directory / f"stdout-{job_id}_{task}.log").read_text())
        assert seen == {"epochs": 1, "lr": 10**-task}


def test_status_of_many_jobs_in_one_call(slurm, template_env, run_dir):
    jobs = [
        submit(slurm, template_env, run_dir, {"name": f"many{i}", "command": "sleep 20"})[0] for i in range(3)
    ]
    try:
        statuses = {s.job_id: s for s in slurm.status(jobs)}
        assert set(statuses) == set(jobs)
        for status in statuses.values():
            assert status.state in {RunState.QUEUED, RunState.RUNNING}
            assert status.partition == "cpu" and status.user == slurm.submit_user
            if status.state is RunState.RUNNING:
                assert status.node_list and status.start_time
    finally:
        for job in jobs:
            slurm.cancel(job)


def test_status_of_jobs_gone_from_queue_is_empty(slurm):
    assert slurm.status(["999999999"]) == []
    assert slurm.status([]) == [] and slurm.accounting([]) == []


def test_find_by_tag_live_and_finished(slurm, template_env, run_dir):
    job_id, _, tag = submit(slurm, template_env, run_dir, {"name": "tagged", "command": "true"})
    assert slurm.find_by_tag(tag) == [job_id]
    wait_for_accounting(slurm, job_id)
    assert slurm.find_by_tag(tag) == [job_id]
    assert slurm.find_by_tag(unique_tag()) == []


def test_cluster_facts(slurm):
    partitions = {p.name: p for p in slurm.partitions()}
    assert {"cpu", "gpu"} <= set(partitions)
    assert partitions["cpu"].is_default and not partitions["gpu"].is_default
    assert partitions["cpu"].total_nodes >= 2 and partitions["cpu"].max_time_min
    nodes = {n.name: n for n in slurm.nodes()}
    gpu_nodes = [n for n in nodes.values() if "gpu" in n.partitions]
    assert len(gpu_nodes) >= 2 and all(n.gpus == 4 and n.gpu_type == "fake" for n in gpu_nodes)
    assert all(n.cpus > 0 and n.real_memory_mb > 0 for n in nodes.values())


def test_submit_to_unknown_partition_is_rejected_with_slurms_message(slurm, template_env, run_dir):
    with pytest.raises(SubmitRejected) as info:
        submit(slurm, template_env, run_dir, {"name": "nowhere", "command": "true"}, partition="nosuch")
    assert "invalid partition" in str(info.value).lower()


def test_over_partition_time_limit_waits_with_slurms_reason(slurm, template_env, run_dir):
    # Slurm accepts the job (EnforcePartLimits=NO) and keeps it pending with a reason.
    job_id, _, _ = submit(
        slurm,
        template_env,
        run_dir,
        {"name": "toolong", "command": "true", "resources": {"walltime_min": 2000}},
    )
    try:
        # Slurm first says PartitionConfig, then its scheduler settles on PartitionTimeLimit.
        status = wait_for(
            lambda: [s for s in slurm.status([job_id]) if s.reason == "PartitionTimeLimit"],
            what="reason PartitionTimeLimit",
        )
        assert status[0].state is RunState.QUEUED
    finally:
        slurm.cancel(job_id)


def test_timeout_means_unavailable_not_failed(tmp_path, monkeypatch):
    """A controller that takes the connection and never answers: squeue hangs, the gateway gives up."""
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)  # the kernel completes the connections; nothing ever reads or answers them
        conf = tmp_path / "slurm.conf"
        conf.write_text(_aimed_at(Path(os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf")), hung))
        monkeypatch.setenv("SLURM_CONF", str(conf))
        impatient = SlurmCLI(LocalRunner(), query_timeout_s=1.5)
        started = time.monotonic()
        with pytest.raises(SlurmUnavailable, match="did not answer within 1.5 s"):
            impatient.status(["1"])
        assert time.monotonic() - started < 10  # squeue itself would wait MessageTimeout (10 s) and more


def _aimed_at(conf: Path, listener: socket.socket) -> str:
    """The cluster's slurm.conf with its controller moved to ``listener``'s address."""
    lines = [
        line
        for line in conf.read_text().splitlines()
        if line.split("=", 1)[0].strip().lower() not in ("slurmctldhost", "controlmachine", "slurmctldport")
    ]
    port = listener.getsockname()[1]
    return "\n".join(["SlurmctldHost=localhost(127.0.0.1)", f"SlurmctldPort={port}", *lines]) + "\n"


def test_bad_tag_and_job_ids_refused_before_slurm(slurm):
    with pytest.raises(SpecError):
        slurm.prepare_submit(tag="bad tag; rm").send("#!/bin/bash\ntrue\n")
    with pytest.raises(SpecError):
        slurm.status(["1;scancel 2"])


def test_hostile_values_stay_inert_under_slurm(slurm, template_env, run_dir):
    from tests.unit.test_render import HOSTILE

    canary_dir = Path(run_dir("canary"))
    canary = canary_dir / "pwned"
    values = [v.format(canary=canary) for v in HOSTILE]
    job_id, directory, _ = submit(
        slurm,
        template_env,
        run_dir,
        {
            "name": "hostile",
            "command": ["python3", "-c", "import json,os,sys; print(json.dumps(sys.argv[1:]))", *values[:4]],
            "workdir": str(canary_dir),
            "env": {f"V{i}": v for i, v in enumerate(values)},
            "params": {f"p{i}": v for i, v in enumerate(values)},
        },
    )
    (record,) = wait_for_accounting(slurm, job_id)
    assert record.state is RunState.SUCCEEDED, read_stdout(directory, job_id)
    time.sleep(0.2)
    assert not canary.exists(), "a hostile value was executed by the job"
    assert json.loads(read_stdout(directory, job_id)) == values[:4]
    assert json.loads((directory / "params.json").read_text()) == {f"p{i}": v for i, v in enumerate(values)}


def test_array_sweep_with_a_script_runs_every_task(slurm, template_env, run_dir):
    """Each task writes and runs its own copy of the script (no 'Text file busy' races)."""
    job_id, directory, _ = submit(
        slurm,
        template_env,
        run_dir,
        {
            "name": "sweepscript",
            "script": '#!/bin/bash\necho "task $SLURM_ARRAY_TASK_ID $1"\n',
            "script_args": ["arg"],
            "sweep": {"params": [{"i": i} for i in range(8)]},
            "resources": {"mem_gb": 0.1},
        },
    )
    records = wait_for_accounting(slurm, job_id, count=8)
    assert all(r.state is RunState.SUCCEEDED for r in records), [(r.job_id, r.exit_code) for r in records]
    for task in range(8):
        assert (directory / f"stdout-{job_id}_{task}.log").read_text() == f"task {task} arg\n"


def test_usage_holds_the_accounts_jobs_since_a_time(slurm, template_env, run_dir):
    job_id, _, tag = submit(slurm, template_env, run_dir, {"name": "used", "command": "true"})
    (record,) = wait_for_accounting(slurm, job_id, tag=tag)
    used = {r.job_id: r for r in slurm.usage([record.account], since=SESSION_START)}
    assert job_id in used and used[job_id].comment == tag and used[job_id].alloc_cpus >= 1
    # an id Slurm never gave (in this session): no record, and no error (dbv0.0.38 says "Nothing found")
    never = slurm.accounting(["999999999"])
    assert [r for r in never if r.submit_time and r.submit_time >= SESSION_START] == []


def test_a_prepared_submission_queues_nothing_until_sent_and_nothing_once_abandoned(
    slurm, template_env, run_dir
):
    spec = build_spec(
        {"project": "test", "queue": "cpu", "name": "prepared", "command": "true", "hold": True}
    )
    directory = run_dir(spec.name)
    script = render_sbatch(
        spec, template_env, run_id=Path(directory).name, run_dir=directory, target=SubmitTarget("cpu")
    ).text
    sent, abandoned = unique_tag(), unique_tag()
    prepared = slurm.prepare_submit(tag=sent)
    given_up = slurm.prepare_submit(tag=abandoned)
    time.sleep(0.5)  # the CLI backend's sbatch processes are up, waiting for their scripts
    assert slurm.find_by_tag(sent) == [] and slurm.find_by_tag(abandoned) == []
    job_id = prepared.send(script)
    given_up.abandon()
    try:
        assert slurm.find_by_tag(sent) == [job_id]
        time.sleep(0.5)
        assert slurm.find_by_tag(abandoned) == []
    finally:
        slurm.cancel(job_id)
    with pytest.raises(SpecError):
        slurm.prepare_submit(tag="not a tag")


def test_a_script_given_by_path_is_the_jobs_command_and_its_comments_are_listed(slurm, template_env, run_dir):
    """``script_path``: the CLI backend hands sbatch the file (Slurm records it as the Command); the
    REST backend sends the text. ``comments`` lists the job with its tag."""
    spec = build_spec({"project": "test", "queue": "cpu", "name": "bypath", "command": "true"})
    directory = run_dir(spec.name)
    rendered = render_sbatch(
        spec, template_env, run_id=Path(directory).name, run_dir=directory, target=SubmitTarget("cpu")
    )
    path = Path(directory, "job.sbatch")
    path.write_text(rendered.text)
    path.chmod(0o444)
    tag = unique_tag()
    job_id = slurm.prepare_submit(tag=tag, script_path=str(path)).send(rendered.text)
    assert (job_id, tag) in slurm.comments()
    if isinstance(slurm.inner, SlurmCLI):
        shown = LocalRunner().run(["scontrol", "show", "job", "-o", job_id]).stdout
        assert f" Command={path} " in shown
    with pytest.raises(SpecError, match="script_path"):
        slurm.prepare_submit(tag=tag, script_path="relative/job.sbatch")
    if isinstance(slurm.inner, SlurmCLI):
        with pytest.raises(SubmitRejected, match="Slurm refused the job"):
            slurm.prepare_submit(tag=unique_tag(), script_path=f"{directory}/missing.sbatch").send("")
