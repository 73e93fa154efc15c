"""The gw CLI end to end: a real `gw serve` on a free port, real jobs, real exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import wait_for, wait_for_accounting
from tests.service.gw_serve import GW, free_port, gw_serve

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def server(tmp_path_factory, slurm) -> Iterator[dict[str, str]]:
    with gw_serve(tmp_path_factory.mktemp("serve"), prefix="cli") as serve:
        assert "add project test" in serve.applied and f"slurm: add account {serve.account}" in serve.applied
        yield {"GW_URL": serve.url, "GW_TOKEN": serve.tokens["tester"], "GW_CONFIG": serve.config}


def gw(server, *args: str, cwd: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, **server, "COLUMNS": "200"}
    return subprocess.run(
        [*GW, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def write_spec(tmp_path: Path, **fields) -> Path:
    spec = {"name": "cli", "project": "test", "queue": "cpu", "resources": {"mem_gb": 0.25}, **fields}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def run_id_of(stdout: str) -> str:
    return next(w for line in stdout.splitlines() for w in line.split() if w.startswith("r-"))


def test_submit_wait_show_logs(server, tmp_path):
    spec = write_spec(tmp_path, command="pwd; echo hello from $GW_RUN_ID")
    submitted = gw(server, "submit", str(spec), cwd=str(tmp_path))
    assert submitted.returncode == 0, submitted.stderr
    assert submitted.stdout.startswith("Submitted batch job ")
    run_id = run_id_of(submitted.stdout)
    waited = gw(server, "wait", run_id, "--poll-s", "0.5")
    assert waited.returncode == 0, waited.stderr
    shown = json.loads(gw(server, "show", run_id, "--json").stdout)
    assert shown["state"] == "succeeded" and shown["submitter"] == "tester"
    assert shown["spec"]["workdir"] == str(tmp_path), "a spec without workdir runs where gw was called"
    logs = gw(server, "logs", run_id)
    assert logs.stdout.splitlines() == [str(tmp_path), f"hello from {run_id}"]
    table = gw(server, "show", run_id)
    assert "succeeded" in table.stdout and "sacct" in table.stdout
    listed = json.loads(gw(server, "runs", "--project", shown["project"], "--json").stdout)
    assert run_id in [r["id"] for r in listed["items"]]


def test_wait_exit_status_follows_the_end_state(server, tmp_path):
    failed = run_id_of(gw(server, "submit", str(write_spec(tmp_path, command="exit 5"))).stdout)
    assert gw(server, "wait", failed, "--poll-s", "0.5").returncode == 1
    long = run_id_of(gw(server, "submit", str(write_spec(tmp_path, command="sleep 300"))).stdout)
    timed_out = gw(server, "wait", long, "--timeout", "1", "--poll-s", "0.3")
    assert timed_out.returncode == 124
    time.sleep(1)  # give the job a moment to have a job id in squeue
    cancelled = gw(server, "cancel", long)
    assert cancelled.returncode == 0, cancelled.stderr
    assert gw(server, "wait", long, "--poll-s", "0.5").returncode == 3
    # a cancellation is its own outcome, named with the gateway user who asked (not Slurm's uid 0)
    shown = wait_for(
        lambda: [o for o in [gw(server, "show", long).stdout] if "Cancelled by" in o], what="the cancellation"
    )[0]
    assert "cancelled Cancelled by tester." in shown and "failure:" not in shown, shown


def test_gw_sbatch_keeps_sbatch_habits(server, tmp_path, slurm):
    out = tmp_path / "custom-%j.out"
    script = tmp_path / "train.sh"
    script.write_text(
        "#!/bin/bash\n"
        "#SBATCH -J habit\n"
        "#SBATCH --cpus-per-task=2\n"
        "#SBATCH --mem=300M\n"
        "#SBATCH -t 7\n"
        f"#SBATCH -o {out}\n"
        'echo "args: $*"\n'
        'echo "cpus: $SLURM_CPUS_PER_TASK"\n'
    )
    submitted = gw(server, "sbatch", "-A", "test", "-p", "cpu", str(script), "one", "two words")
    assert submitted.returncode == 0, submitted.stderr
    (first,) = submitted.stdout.splitlines()  # exactly sbatch's one line; the run id goes to stderr
    assert first.startswith("Submitted batch job ")
    job_id = first.split()[-1]
    run_id = run_id_of(submitted.stderr)
    assert gw(server, "wait", run_id, "--poll-s", "0.5").returncode == 0
    # Quirk: right after a job ends, slurmdbd may still hold the placeholder name "allocation".
    (record,) = wait_for(
        lambda: [r for r in wait_for_accounting(slurm, job_id) if r.name == "habit"], what="job name in sacct"
    )
    assert record.alloc_cpus == 2 and record.alloc_mem_mb == 300
    assert record.timelimit_min == 7
    assert record.account == "gwtcli" + server["GW_URL"].rsplit(":", 1)[1], "the project's Slurm account"
    text = Path(str(out).replace("%j", job_id)).read_text()
    assert text.splitlines() == ["args: one two words", "cpus: 2"]
    parsable = gw(server, "sbatch", "--parsable", "-A", "test", str(script))
    assert parsable.returncode == 0 and parsable.stdout.strip().isdigit()


def test_gw_sbatch_refuses_unsupported_options_by_name(server, tmp_path):
    script = tmp_path / "x.sh"
    script.write_text("#!/bin/bash\n#SBATCH --uid=0\ntrue\n")
    refused = gw(server, "sbatch", "-A", "test", "--priority=100", str(script))
    assert refused.returncode == 2
    assert "#SBATCH line 2: --uid" in refused.stderr and "option --priority" in refused.stderr


def test_bad_spec_and_unknown_run(server, tmp_path):
    bad = tmp_path / "bad.yaml"
    # resources.gpu is no field (resources.gpus is: sbatch's --gpus, for the whole job)
    bad.write_text("name: x\nproject: p\nqueue: cpu\ncommand: true\nresources: {gpu: 2}\n")
    result = gw(server, "submit", str(bad))
    assert result.returncode == 2 and "resources.gpu" in result.stderr and "command" in result.stderr
    missing = gw(server, "show", "r-0000000000000000")
    assert missing.returncode == 4 and "not_found" in missing.stderr


def test_no_token_is_refused(server):
    result = gw({**server, "GW_TOKEN": ""}, "runs")
    assert result.returncode == 77 and "no token" in result.stderr


def test_server_down_is_a_clear_message(tmp_path):
    down = {"GW_URL": f"http://127.0.0.1:{free_port()}", "GW_CONFIG": str(tmp_path / "none.toml")}
    result = gw(down, "runs")
    assert result.returncode == 69
    assert "cannot reach the gateway" in result.stderr and "gw serve" in result.stderr


def test_gw_rerun_fixes_and_links_back(server, tmp_path):
    data = tmp_path / "input.txt"
    data.write_text("fixed\n")
    tmp_path.chmod(0o755)
    failed = run_id_of(
        gw(
            server,
            "submit",
            str(
                write_spec(
                    tmp_path,
                    command='cat "$GW_RUN_DIR/../x" 2>/dev/null; echo ok',
                    datasets=["/no/such/input.txt"],
                )
            ),
        ).stdout
    )
    assert gw(server, "wait", failed, "--poll-s", "0.5").returncode == 1
    shown = json.loads(gw(server, "show", failed, "--json").stdout)
    assert shown["attempts"][0]["failure"]["class"] == "data_access"
    rerun = gw(server, "rerun", failed, "--set", f"datasets=[{data}]")
    assert rerun.returncode == 0, rerun.stderr
    assert f"changed datasets: ['/no/such/input.txt'] -> ['{data}']" in rerun.stdout
    child = run_id_of(rerun.stdout)
    assert gw(server, "wait", child, "--poll-s", "0.5").returncode == 0
    parent = json.loads(gw(server, "show", failed, "--json").stdout)
    assert parent["children"] == [child]
    assert json.loads(gw(server, "show", child, "--json").stdout)["parent_run_id"] == failed


def test_an_array_run_is_shown_task_by_task_and_its_logs_name_the_task(server, tmp_path):
    spec = write_spec(
        tmp_path,
        name="cli-array",
        command="sleep 3; echo task $SLURM_ARRAY_TASK_ID of $GW_PARAM_I",
        sweep={"params": [{"i": 0}, {"i": 1}, {"i": 2}]},
    )
    run_id = run_id_of(gw(server, "submit", str(spec), cwd=str(tmp_path)).stdout)
    assert gw(server, "wait", run_id, "--poll-s", "0.5").returncode == 0
    shown = json.loads(gw(server, "show", run_id, "--json").stdout)
    (attempt,) = shown["attempts"]
    tasks = attempt["tasks"]
    assert sorted(tasks) == ["0", "1", "2"] and all(t["state"] == "succeeded" for t in tasks.values())
    assert all(t["exit_code"] == 0 and t["node_list"] and t["elapsed_s"] >= 3 for t in tasks.values())
    # the attempt's elapsed time is the array's span, not the sum of its tasks' (they ran side by side)
    assert attempt["elapsed_s"] < sum(t["elapsed_s"] for t in tasks.values())
    text = gw(server, "show", run_id).stdout
    assert "array of 3 tasks: 3 succeeded; exit codes 0" in text and "0:None" not in text, text
    rows = [line.split() for line in text.splitlines() if line.split()[:1] in (["0"], ["1"], ["2"])]
    assert [r[:3] for r in rows] == [
        ["0", "succeeded", "0"],
        ["1", "succeeded", "0"],
        ["2", "succeeded", "0"],
    ]
    assert {r[4] for r in rows} <= {"c1", "c2"}
    first = gw(server, "logs", run_id)
    assert first.stdout.strip() == "task 0 of 0" and "array task 0 of tasks 0-2" in first.stderr, first
    second = gw(server, "logs", run_id, "--task", "2")
    assert second.stdout.strip() == "task 2 of 2" and "array task 2 of tasks 0-2" in second.stderr
    missing = gw(server, "logs", run_id, "--task", "7")
    said = " ".join(missing.stderr.split())
    assert missing.returncode == 4 and "has no array task 7; its tasks are 0-2" in said, missing.stderr
    assert missing.stdout == ""
    plain = run_id_of(gw(server, "submit", str(write_spec(tmp_path, command="true"))).stdout)
    refused = gw(server, "logs", plain, "--task", "1")
    assert refused.returncode == 4 and "is not an array job" in refused.stderr
