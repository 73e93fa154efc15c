"""Batches from the outside: `gw submit a.yaml b.yaml`, `--from-dir`, `gw sbatch --each`, and the
Python client (`Gateway`, its batch context, waiting on many runs, a batch's cut answer sent again,
and the example in docs/python-client.md), all against a real `gw serve` on a free port and real
Slurm."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.client import ApiError, Gateway, RunSummary, WaitProgress, WaitTimeout
from gateway.core.runs.values import Run
from gateway.core.slurm.states import RunState
from tests.service.gw_serve import GW, gw_serve
from tests.service.test_batch import slurm_jobs_by_run
from tests.service.test_idempotency import CuttingProxy

pytestmark = pytest.mark.slurm
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(tmp_path_factory, slurm) -> Iterator[dict[str, str]]:
    with gw_serve(tmp_path_factory.mktemp("serve"), prefix="batch") as serve:
        yield {
            "GW_URL": serve.url,
            "GW_TOKEN": serve.tokens["tester"],
            "GW_CONFIG": serve.config,
            "GW_PROJECT": "test",
        }


@pytest.fixture
def gateway(server) -> Iterator[Gateway]:
    with Gateway(server["GW_URL"], server["GW_TOKEN"]) as gw:
        yield gw


def gw(server, *args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **server, "COLUMNS": "200"}
    return subprocess.run([*GW, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def spec(tag: str, **fields) -> dict:
    base = {
        "name": "clibatch",
        "project": "test",
        "queue": "cpu",
        "command": "true",
        "hold": True,
        "tags": [tag],
        "resources": {"mem_gb": 0.1, "walltime_min": 2},
    }
    return {**base, **fields}


def cancel_tag(gateway: Gateway, tag: str) -> None:
    for run in gateway.runs(tag=tag, limit=100):
        if run.job_id and not run.ended:
            subprocess.run(["scancel", run.job_id], capture_output=True, check=False)


def test_gw_submit_several_files_and_a_directory_as_one_batch(server, gateway, tmp_path):
    tag = f"t{uuid.uuid4().hex[:10]}"
    files = []
    for i in range(3):
        path = tmp_path / f"s{i}.yaml"
        path.write_text(json.dumps(spec(tag, params={"i": i})))
        files.append(path)
    (tmp_path / "notes.txt").write_text("not a spec")
    try:
        out = gw(server, "submit", str(files[0]), str(files[1]), cwd=str(tmp_path))
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert [line.split(":")[0] for line in lines] == [str(files[0]), str(files[1])]
        assert all("Submitted batch job" in line for line in lines)
        assert "2 submitted, 0 replayed, 0 failed" in out.stderr
        from_dir = gw(server, "submit", "--from-dir", str(tmp_path), "--json", cwd=str(tmp_path))
        assert from_dir.returncode == 0, from_dir.stderr
        answer = json.loads(from_dir.stdout)
        assert answer["submitted"] == 3 and len(answer["items"]) == 3
        runs = gateway.runs(tag=tag, limit=20)
        assert len(runs) == 5 and all(r.state in (RunState.QUEUED, RunState.HELD) for r in runs)  # held jobs
        assert all(r.submitter == "tester" and r.job_id for r in runs)
    finally:
        cancel_tag(gateway, tag)


def test_gw_submit_batch_refusal_names_the_file_and_field(server, gateway, tmp_path):
    tag = f"t{uuid.uuid4().hex[:10]}"
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(json.dumps(spec(tag)))
    bad.write_text(json.dumps(spec(tag, queue="nosuch")))
    refused = gw(server, "submit", str(good), str(bad), cwd=str(tmp_path))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "batch_rejected" in refused.stderr and f"{bad}: error (invalid_request)" in refused.stderr
    assert "- queue: project test has no queue for it" in refused.stderr
    assert gateway.runs(tag=tag) == [], "all or none: nothing was submitted"
    partial = gw(server, "submit", "--partial", str(good), str(bad), cwd=str(tmp_path))
    try:
        assert partial.returncode == 2 and "1 submitted, 0 replayed, 1 failed" in partial.stderr
        assert len(gateway.runs(tag=tag)) == 1
    finally:
        cancel_tag(gateway, tag)


def test_gw_sbatch_each_submits_every_script_with_sbatch_lines(server, gateway, tmp_path):
    tag = f"t{uuid.uuid4().hex[:10]}"
    scripts = []
    for i in range(3):
        path = tmp_path / f"job{i}.sh"
        path.write_text(f"#!/bin/bash\n#SBATCH --job-name=each{i}\n#SBATCH --mem=100M\necho {i}\n")
        scripts.append(str(path))
    out = gw(
        server, "sbatch", "-A", "test", "-p", "cpu", "-t", "2", "-H", "--comment", tag, "--each", *scripts
    )
    try:
        assert out.returncode == 0, out.stderr
        jobs = [re.fullmatch(r"Submitted batch job (\d+)", line) for line in out.stdout.splitlines()]
        assert len(jobs) == 3 and all(jobs), out.stdout
        names = {r.job_id: r.name for r in gateway.runs(project="test", limit=50)}
        assert [names[m.group(1)] for m in jobs if m] == ["each0", "each1", "each2"]
        bad = tmp_path / "bad.sh"
        bad.write_text("#!/bin/bash\n#SBATCH --mem=lots\ntrue\n")
        refused = gw(server, "sbatch", "-A", "test", "-p", "cpu", "-t", "2", "--each", scripts[0], str(bad))
        assert refused.returncode == 2 and "sbatch: error" not in refused.stdout
        assert f"in {bad} (gw sbatch --each)" in refused.stderr, refused.stderr
        assert "#SBATCH line 2: --mem" in refused.stderr
        over = gw(server, "sbatch", "-A", "test", "-p", "cpu", "-t", "2", "--gpus=9", "--each", scripts[0])
        assert over.returncode == 2 and f"{scripts[0]}: error" in over.stderr, over.stderr
    finally:
        for m in jobs:
            if m:
                subprocess.run(["scancel", m.group(1)], capture_output=True, check=False)


def test_the_client_returns_domain_values_and_batches_on_exit(gateway):
    tag = f"t{uuid.uuid4().hex[:10]}"
    try:
        run = gateway.submit(spec(tag, params={"lr": 0.5}))
        assert isinstance(run, Run) and run.state is RunState.QUEUED and run.latest.job_id
        assert run.spec.params == {"lr": 0.5} and run.latest.events[0].to_state is RunState.SUBMITTING
        with gateway.batch() as batch:
            pending = [batch.submit(spec(tag, params={"lr": lr})) for lr in (0.1, 0.01)]
            with pytest.raises(RuntimeError, match="not sent yet"):
                _ = pending[0].run
        assert all(isinstance(p.run, RunSummary) and p.run.job_id for p in pending)
        assert {r.id for r in gateway.runs(tag=tag)} == {run.id, *(p.run.id for p in pending)}
        with pytest.raises(ApiError) as refused, gateway.batch() as batch:
            batch.submit(spec(tag))
            batch.submit(spec(tag, queue="nosuch"))
        assert refused.value.kind == "batch_rejected" and refused.value.body["items"][0]["index"] == 1
        with gateway.batch(partial=True) as batch:
            ok, bad = batch.submit(spec(tag)), batch.submit(spec(tag, project="nosuch"))
        assert ok.run.job_id and bad.error is not None and bad.error.status == 404
        with pytest.raises(ApiError):
            _ = bad.run
        with pytest.raises(ValueError), gateway.batch() as batch:  # the block raised: nothing is sent
            batch.submit(spec(tag))
            raise ValueError
        assert len(gateway.runs(tag=tag)) == 4  # 1, then 2, none refused all-or-none, 1 of partial
        cancelled = gateway.cancel(run)
        assert cancelled.id == run.id
    finally:
        cancel_tag(gateway, tag)


def python_cells(doc: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)


def test_the_python_client_example_runs(server, tmp_path):
    """docs/python-client.md's cells, run in order in one fresh interpreter, as a notebook would."""
    cells = python_cells(ROOT / "docs" / "python-client.md")
    assert len(cells) >= 3
    program = tmp_path / "notebook.py"
    program.write_text("\n".join(cells))
    env = {**os.environ, **server, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(program)], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("succeeded 0") and "lr=0.3" in done.stdout and "done" in lines
    assert "{0.1: 'succeeded', 0.01: 'succeeded', 0.001: 'succeeded'}" in done.stdout
    assert [line for line in lines if line.endswith(" ended")] == ["1/3 ended", "2/3 ended", "3/3 ended"]
    # the sweep's tasks, best (lowest loss) first: task 2 (lr 0.001), then 1, then 0
    ranked = [line for line in lines if line.split()[:1] in (["0"], ["1"], ["2"]) and "{'lr':" in line]
    assert ranked == [
        "2 {'lr': 0.001} succeeded 0.001",
        "1 {'lr': 0.01} succeeded 0.01",
        "0 {'lr': 0.1} succeeded 0.1",
    ]


def test_wait_all_polls_every_run_reports_progress_and_names_the_live_ones_at_a_timeout(gateway):
    """Two quick runs and a held one from one batch: wait_all gives the quick ones back as Run
    values in the order given, telling progress as each ends; with the held one it times out
    naming it, the ended ones in hand; as_completed yields the quick one, then times out."""
    tag = f"t{uuid.uuid4().hex[:10]}"
    quick = spec(tag, hold=False, workdir="/tmp")
    try:
        with gateway.batch() as batch:
            fast = [batch.submit({**quick, "params": {"i": i}}) for i in range(2)]
            held = batch.submit(spec(tag))
        seen: list[WaitProgress] = []
        ended = gateway.wait_all(fast, timeout_s=120, poll_s=0.5, progress=seen.append)
        assert [r.id for r in ended] == [p.run.id for p in fast]
        assert all(isinstance(r, Run) and r.state is RunState.SUCCEEDED for r in ended)
        assert [(s.ended, s.total) for s in seen] == [(1, 2), (2, 2)]
        assert {s.run.id for s in seen} == {p.run.id for p in fast} and seen[-1].elapsed_s > 0
        with pytest.raises(WaitTimeout) as late:
            gateway.wait_all([held, fast[0], held.run.id], timeout_s=1, poll_s=0.2)
        assert isinstance(late.value, TimeoutError)
        assert late.value.pending == [held.run.id] and [r.id for r in late.value.ended] == [fast[0].run.id]
        assert f"1 of 2 runs did not end within 1 s ({held.run.id})" in str(late.value)
        arriving = gateway.as_completed([held, fast[1]], timeout_s=1, poll_s=0.2)
        assert next(arriving).id == fast[1].run.id
        with pytest.raises(WaitTimeout):
            next(arriving)
        with pytest.raises(TimeoutError, match=held.run.id):
            gateway.wait(held, timeout_s=0.5, poll_s=0.2)
        with pytest.raises(ApiError) as missing:  # not waited through: said at once
            gateway.wait_all(["r-0000000000000000"], timeout_s=60)
        assert missing.value.status == 404
        (refused,) = gateway.submit_many([spec(tag, project="nosuch")], partial=True)
        with pytest.raises(ApiError) as item_error:  # an item without a run: its own error
            gateway.wait_all([refused])
        assert item_error.value.status == 404 and "nosuch" in str(item_error.value.detail)
        with pytest.raises(ValueError, match="poll_s"):
            gateway.wait_all([held], poll_s=-1)
    finally:
        cancel_tag(gateway, tag)


def test_a_batch_whose_answer_is_cut_is_sent_again_under_its_key_and_makes_each_run_once(server, gateway):
    """Gateway.batch() through a proxy that drops the first answer after gw serve made the runs:
    the client sends the batch again under the same Idempotency-Key and gets those runs back,
    replayed; each run has one Slurm job (the single path's cut-connection test, for a batch)."""
    tag = f"t{uuid.uuid4().hex[:10]}"
    proxy = CuttingProxy(int(server["GW_URL"].rsplit(":", 1)[1]), every=2)  # connections 1, 3 ... cut
    try:
        url = f"http://127.0.0.1:{proxy.port}"
        with Gateway(url, server["GW_TOKEN"], retry_pauses_s=(0.2, 1.0)) as cut, cut.batch() as batch:
            pending = [batch.submit(spec(tag, params={"i": i})) for i in range(2)]
            pending.append(batch.submit(spec(tag, params={"i": 2}), idempotency_key=f"{tag}-own"))
        assert proxy.cut == 1, "the first answer was dropped"
        assert all(p.entry.replayed for p in pending), "the retry got the first request's runs"
        runs = gateway.runs(tag=tag)
        assert sorted(r.id for r in runs) == sorted(p.run.id for p in pending)
        jobs = slurm_jobs_by_run()
        assert all(len(jobs[r.id]) == 1 for r in runs), {r.id: jobs.get(r.id) for r in runs}
        # an item's own key is that of a single submission: the same run either way
        again = gateway.submit(spec(tag, params={"i": 2}), idempotency_key=f"{tag}-own")
        assert again.id == pending[2].run.id
    finally:
        proxy.close()
        cancel_tag(gateway, tag)
