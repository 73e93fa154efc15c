"""gw sbatch as sbatch, where it touches the store and Slurm: --mem=0 per queue, no -t, --export,
--comment and --test-only (POST /runs/check), on the real cluster, on SQLite and PostgreSQL.

Every job a test makes is cancelled by its job id in the test's own ``finally``.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.core.runs.values import RunFilter
from gateway.core.sbatch.options import sbatch_to_spec
from gateway.core.site.schema import parse_site
from gateway.core.spec.run_spec import build_spec
from gateway.errors import SpecError, SubmitRejected
from tests.service.conftest import OPERATOR, SITE, refresh_until, unique_tag

pytestmark = pytest.mark.slurm

# project test's queues, plus one that allows --mem=0 and one shorter than the partitions' DefaultTime
EXTRA_QUEUES = (
    "      - {{name: cpu, partition: cpu, retry: {{backoff_s: 1}}}}\n"
    "      - {{name: bigmem, partition: cpu, whole_node_mem: true}}\n"
    "      - {{name: short, partition: cpu, max_walltime_min: 30}}\n"
)


@pytest.fixture
def queues(services) -> Iterator[str]:
    """Project test with queues bigmem (whole_node_mem) and short, applied as `gw admin apply` does;
    the site is put back afterwards. Yields the project's Slurm account."""
    account = services.access.project("test").slurm_account
    base = SITE.format(account=account)
    line = "      - {name: cpu, partition: cpu, retry: {backoff_s: 1}}\n"
    assert line in base
    services.site.apply(OPERATOR, parse_site(base.replace(line, EXTRA_QUEUES.format())), sync_slurm=False)
    try:
        yield account
    finally:
        services.site.apply(OPERATOR, parse_site(base), sync_slurm=False)


def sbatch_spec(directory: str, *argv: str, script: str = "#!/bin/bash\ntrue\n", environ=None):
    """The RunSpec gw sbatch would send for ``argv`` run in ``directory``."""
    env = {"GW_PROJECT": "test", **(environ or {})}
    request = sbatch_to_spec(list(argv), script, script_name="job.sh", cwd=directory, environ=env)
    return build_spec(request.spec)


def job_fields(job_id: str) -> dict[str, str]:
    out = subprocess.run(
        ["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, check=True
    )
    return dict(re.findall(r"(\S+?)=(.*?)(?= \S+?=|$)", out.stdout.splitlines()[0]))


def cancel(*job_ids: str | None) -> None:
    ids = [j for j in job_ids if j]
    if ids:
        subprocess.run(["scancel", *ids], check=False, capture_output=True)


def test_whole_node_mem_is_applied_stored_and_shown(services, queues, tester_token):
    queue = services.access.project("test").queue("bigmem")
    assert queue is not None and queue.whole_node_mem is True
    assert services.access.project("test").queue("cpu").whole_node_mem is False
    exported = services.site.export(OPERATOR)
    test = next(p for p in exported.projects if p.name == "test")
    assert {q.name: q.whole_node_mem for q in test.queues} == {
        "bigmem": True,
        "cpu": False,
        "gpu": True,  # the test site allows it there (the corpus has --mem=0 GPU scripts)
        "short": False,
    }
    with TestClient(create_app(services=services)) as api:
        got = api.get("/projects", headers={"Authorization": f"Bearer {tester_token}"})
    assert got.status_code == 200, got.text
    shown = next(p for p in got.json() if p["name"] == "test")
    assert {q["name"]: q["whole_node_mem"] for q in shown["queues"]}["bigmem"] is True


def test_mem_0_only_where_the_queue_allows_whole_node_memory(services, queues, principal, run_dir):
    where = run_dir("mem0")
    with pytest.raises(SpecError) as refused:
        services.runs.submit(sbatch_spec(where, "--hold", "-p", "cpu", "--mem=0"), principal=principal)
    issue = refused.value.issues[0]
    assert issue.path == "resources.mem_gb" and "bigmem" in issue.message and "queue cpu" in issue.message
    run = services.runs.submit(sbatch_spec(where, "--hold", "-p", "bigmem", "--mem=0"), principal=principal)
    try:
        assert job_fields(run.latest.job_id)["MinMemoryNode"] == "0"
    finally:
        cancel(run.latest.job_id)


def partition_default_time(partition: str) -> str:
    out = subprocess.run(["scontrol", "show", "partition", "-o", partition], capture_output=True, text=True)
    return re.search(r"DefaultTime=(\S+)", out.stdout)[1]


def test_no_time_is_the_partitions_default_time(services, queues, principal, run_dir):
    spec = sbatch_spec(run_dir("notime"), "--hold", "-p", "cpu")
    assert spec.resources.walltime_min is None
    run = services.runs.submit(spec, principal=principal)
    try:
        assert "--time" not in run.script
        assert job_fields(run.latest.job_id)["TimeLimit"] == partition_default_time("cpu")
    finally:
        cancel(run.latest.job_id)
    # the gateway reads that default for its own rules: the queue's limit, the GPU-hours of a quota
    with pytest.raises(SpecError) as refused:
        services.runs.submit(sbatch_spec(run_dir("short"), "--hold", "-p", "short"), principal=principal)
    assert "at most 30 minutes" in refused.value.issues[0].message
    assert "partition cpu's DefaultTime" in refused.value.issues[0].message
    checked = services.runs.check(
        sbatch_spec(run_dir("gpu"), "-p", "gpu", "--gres=gpu:2"), principal=principal
    )
    default_min = services.slurm.partitions()
    minutes = next(p.default_time_min for p in default_min if p.name == "gpu")
    assert checked.walltime_min == minutes and checked.gpu_hours == 2 * minutes / 60
    assert checked.walltime_source == "partition gpu's DefaultTime"


def test_comment_reaches_slurm_after_the_tag_and_the_run_is_still_followed(
    services, principal, run_dir, slurm
):
    spec = sbatch_spec(run_dir("comment"), "--hold", "--comment=baseline, seed 3")
    run = services.runs.submit(spec, principal=principal)
    try:
        tag = run.attempts[0].tag
        assert job_fields(run.latest.job_id)["Comment"].strip() == f"{tag} baseline, seed 3"
        assert slurm.find_by_tag(tag) == [run.latest.job_id]
        services.runs.cancel(run.id, principal=principal)
        ended = refresh_until(services, run.id)
        assert ended.state.value == "cancelled", ended.state
    finally:
        cancel(run.latest.job_id)


ENV_SCRIPT = '#!/bin/bash\nenv > "$SLURM_SUBMIT_DIR/env-$SLURM_JOB_ID.txt"\n'


def job_env(directory: str, job_id: str) -> dict[str, str]:
    text = (Path(directory) / f"env-{job_id}.txt").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def raw_sbatch_env(where: str, argv: list[str], caller: dict[str, str]) -> str:
    """Submit ENV_SCRIPT by raw sbatch with the caller's variables set; the job id."""
    script = Path(where) / "raw.sh"
    script.write_text(ENV_SCRIPT)
    done = subprocess.run(
        ["sbatch", "--parsable", "-t", "2", *argv, str(script)],
        cwd=where, env={**os.environ, **caller}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def wait_for_file(path: Path, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert path.exists(), path


def test_export_variants_reach_the_job_as_sbatch_gives_them(services, principal, run_dir):
    """Each --export form, by raw sbatch and by gw sbatch from the same caller environment: the
    job's own environment (what ``env`` prints in it) holds the same caller, named and login
    variables, but never the gw tokens (left out, docs/cli.md)."""
    caller = {
        "PATH": "/opt/gw-test/bin:/usr/bin:/bin",
        "FOO": "from the shell, with a comma",
        "GW_TOKEN": "gw_must_not_travel",
        "HF_TOKEN": "hf_must_not_travel",
    }
    where = run_dir("export")
    variants = {
        "all": [],
        "all+": ["--export=ALL,BAR=x"],
        "none": ["--export=NONE"],
        "named": ["--export=FOO,BAR=x"],
    }
    runs, raw = {}, {}
    try:
        for name, argv in variants.items():
            raw[name] = raw_sbatch_env(where, argv, caller)
            spec = sbatch_spec(where, "-t", "2", *argv, script=ENV_SCRIPT, environ=caller)
            runs[name] = services.runs.submit(spec, principal=principal)
        ours, theirs = {}, {}
        for name, run in runs.items():
            ended = refresh_until(services, run.id, timeout_s=120)
            assert ended.state.value == "succeeded", (name, ended.latest)
            ours[name] = job_env(where, ended.latest.job_id)
            wait_for_file(Path(where) / f"env-{raw[name]}.txt")
            theirs[name] = job_env(where, raw[name])
    finally:
        cancel(*[r.latest.job_id for r in runs.values()], *raw.values())
    for name in variants:
        # under ALL the job starts from the OS user's login environment, the caller's over it, so a
        # login variable the caller lacks (here USER, HOME) is there too; NONE and named load it in
        # Slurm itself (as get-user-env), for both
        login = () if name.startswith("all") else ("HOME", "USER")
        for key in ("FOO", "BAR", "PATH", *login):
            assert ours[name].get(key) == theirs[name].get(key), (name, key)
        assert "GW_TOKEN" not in ours[name] and "HF_TOKEN" not in ours[name], name
    assert ours["all"]["FOO"] == caller["FOO"] and ours["all"]["PATH"] == caller["PATH"]
    assert theirs["all"]["HF_TOKEN"] == caller["HF_TOKEN"]  # raw sbatch carries it; gw leaves it out
    assert "FOO" not in ours["none"] and ours["none"]["SLURM_EXPORT_ENV"] == "NONE"
    assert ours["named"]["FOO"] == caller["FOO"] and ours["named"]["BAR"] == "x"
    assert ours["named"]["SLURM_EXPORT_ENV"] == "BAR,FOO"  # srun steps export the same names
    # recorded in the spec, so a rerun sends the same environment
    assert services.runs.store.get_run(runs["named"].id).spec.export == "named"
    assert services.runs.store.get_run(runs["all"].id).spec.env["FOO"] == caller["FOO"]


def test_check_runs_admission_and_slurms_test_only_and_makes_nothing(
    services, principal, run_dir, tester_token
):
    tag = unique_tag()
    spec = build_spec({**sbatch_spec(run_dir("check"), "-t", "5").model_dump(mode="json"), "tags": [tag]})
    checked = services.runs.check(spec, principal=principal, slurm_test=True)
    assert re.search(
        r"Job \d+ to start at \S+ using \d+ processors on nodes \S+ in partition cpu", checked.slurm_test
    )
    assert checked.walltime_min == 5 and checked.os_user == "root" and "#SBATCH --time=5" in checked.script
    assert services.runs.store.list_runs(RunFilter(tag=tag)).items == []
    # sbatch --test-only queued nothing: no job carries the check's comment
    queued = subprocess.run(["squeue", "-h", "-o", "%k"], capture_output=True, text=True, check=True).stdout
    assert "gw-check" not in queued
    # a feature no node has: the gateway does not know features, Slurm's test refuses it
    too_big = build_spec({**spec.model_dump(mode="json"), "slurm_options": {"constraint": "nosuchfeature"}})
    with pytest.raises(SubmitRejected):
        services.runs.check(too_big, principal=principal, slurm_test=True)
    with TestClient(create_app(services=services)) as api:
        auth = {"Authorization": f"Bearer {tester_token}"}
        body = spec.model_dump(mode="json")
        got = api.post("/runs/check", json=body, params={"slurm_test": "true"}, headers=auth)
        assert got.status_code == 200, got.text
        assert "to start at" in got.json()["slurm_test"] and got.json()["queue"] == "cpu"
        plain = api.post("/runs/check", json=body, headers=auth)
        assert plain.status_code == 200 and plain.json()["slurm_test"] is None
        refused = api.post("/runs/check", json={**body, "queue": "nope"}, headers=auth)
        assert refused.status_code == 422, refused.text
    assert services.runs.store.list_runs(RunFilter(tag=tag)).items == []
