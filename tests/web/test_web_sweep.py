"""The submit form's sweep in a real browser: every point of the grid a run of its own, submitted
as one batch (POST /runs/batch's service, all or none), then the run list of the sweep's tag."""

from __future__ import annotations

import re
import subprocess

import pytest
from playwright.sync_api import expect

from tests.web.conftest import api, fill_run

pytestmark = pytest.mark.slurm


def test_a_sweep_from_the_form_is_one_batch_of_runs(signed_in, serve):
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/submit")
    fill_run(page, project="test", queue="cpu", name="web-sweep", command="echo lr=$GW_PARAM_LR")
    page.fill("#workdir", "/tmp")
    page.select_option("#walltime_min", "5")
    page.fill("#sweep", "lr = 0.1, 0.01\nseed = 1, 2")
    page.click("#preview")
    expect(page.locator("#preview-out h2").first).to_have_text("The sweep: 4 runs, one batch")
    expect(page.locator("#sweep-points li")).to_have_count(4)
    expect(page.locator("#sweep-points li").first).to_have_text("lr=0.1, seed=1")
    expect(page.locator("#preview-script")).to_contain_text("#SBATCH")
    page.fill("#sweep", "lr = 0.1\nnonsense")
    page.click("#preview")
    expect(page.locator("#submit-form")).to_contain_text("write one param a line as name = value")
    page.fill("#sweep", "lr = 0.1, 0.01\nseed = 1, 2")
    page.click("#submit")
    page.wait_for_url(re.compile(r".*/ui/runs\?tag=sweep-[0-9a-f]{8}$"))
    tag = page.url.rsplit("=", 1)[1]
    client = api(serve, "tester")
    runs = client.get("/runs", params={"tag": tag}).json()["items"]
    try:
        assert len(runs) == 4 and {r["name"] for r in runs} == {"web-sweep"}
        specs = [client.get(f"/runs/{r['id']}").json()["spec"]["params"] for r in runs]
        assert sorted((p["lr"], p["seed"]) for p in specs) == [(0.01, 1), (0.01, 2), (0.1, 1), (0.1, 2)]
        for run in runs:
            expect(page.locator(f"a[href$='/ui/runs/{run['id']}']").first).to_be_visible()
    finally:
        jobs = [r["job_id"] for r in runs if r["job_id"]]
        if jobs:
            subprocess.run(["scancel", *jobs], capture_output=True, check=False)


def test_a_sweep_refused_all_or_none_names_the_run_and_field(signed_in, serve):
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/submit")
    fill_run(page, project="test", queue="cpu", name="web-sweep-bad", command="true")
    page.select_option("#walltime_min", "5")
    page.fill("#sweep", 'lr = 0.1, {"nan": 1e999}')
    page.click("#submit")
    expect(page.locator("#submit-form")).to_contain_text("run 2 (lr=")
    client = api(serve, "tester")
    listed = client.get("/runs", params={"submitter": "tester"}).json()["items"]
    assert not [r for r in listed if r["name"] == "web-sweep-bad"], "all or none: nothing was submitted"
