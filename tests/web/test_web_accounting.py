"""Cost and GPU telemetry on the run and project pages, in a real browser against a real `gw serve`
(fake NVML on the gpu partition's gres GPUs) and the real cluster: a GPU run's per-GPU table and
utilisation plots, its cost after an accounting ingest priced by the site's rate table (with the rate
version), a failed run's cost under "failed", the project's cost this month; text a job wrote into
its telemetry files shown as text."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from tests.service.gw_serve import Serve, gw_serve
from tests.web.conftest import api, shot
from tests.web.priced import apply_rates, ended, priced_costs, wait_until

pytestmark = pytest.mark.slurm
DONE_S = 240  # a GPU job on the shared cluster: queue, run, telemetry harvested
HOSTILE = "<script>window.pwned=1</script>"
# A line the job itself adds to its telemetry folder, as a node of its own: its reason is job text.
FORGED = '{"kind":"unavailable","status":"no_nvml","node":"<b>zz</b>","reason":"' + HOSTILE + '"}'


@pytest.fixture(scope="module")
def serve(tmp_path_factory) -> Iterator[Serve]:
    settings = {"GATEWAY_GPU_NVML": "fake", "GATEWAY_GPU_SAMPLE_INTERVAL_S": "1"}
    with gw_serve(
        tmp_path_factory.mktemp("webcost"), prefix="webcost", users=("tester", "admin"), settings=settings
    ) as s:
        yield s


@pytest.fixture(scope="module")
def runs(serve, tmp_path_factory) -> dict:
    """A GPU run (2 fake GPUs, 0 and 100 % busy ...) that succeeds, one on a node "without NVML" and
    a CPU run that fails, all ended, harvested, ingested and priced."""
    since = (datetime.now(UTC) - timedelta(minutes=2)).isoformat()
    client = api(serve, "tester")
    command = (
        f'mkdir -p "$GW_RUN_DIR/telemetry"; '
        f"echo '{FORGED}' > \"$GW_RUN_DIR/telemetry/gpu-$SLURM_JOB_ID-r0-zz.jsonl\"; sleep 6"
    )
    gpu = client.post("/runs", json=_gpu_run("gpu-costed", command, FAKE_NVML_UTIL="0:0;1:0,100;2:100;3:50"))
    assert gpu.status_code == 201, gpu.text
    # nvmlInit fails as on a node without the driver: the sampler records why, the job runs on
    no_nvml = client.post("/runs", json=_gpu_run("gpu-no-nvml", "sleep 2", FAKE_NVML_FAIL="init"))
    assert no_nvml.status_code == 201, no_nvml.text
    failed = client.post(
        "/runs",
        json={"name": "fails-costed", "project": "test", "queue": "cpu", "command": "sleep 3; exit 2"},
    )
    assert failed.status_code == 201, failed.text
    ids = {"gpu": gpu.json()["id"], "failed": failed.json()["id"], "no_nvml": no_nvml.json()["id"]}
    states = {"gpu": "succeeded", "failed": "failed", "no_nvml": "succeeded"}
    for key, run_id in ids.items():
        state = wait_until(f"{key} run to end", lambda r=run_id: ended(client, r), DONE_S)
        assert state == states[key], (key, state)
    for key in ("gpu", "no_nvml"):
        path = f"/runs/{ids[key]}/telemetry"
        wait_until(f"the {key} run's telemetry", lambda p=path: client.get(p).json()["attempts"], DONE_S)
    apply_rates(serve, tmp_path_factory.mktemp("rates"))
    costs = priced_costs(api(serve, "admin"), client, since, ids)
    return {"ids": ids, "costs": costs}


def _gpu_run(name: str, command: str, **env: str) -> dict:
    return {
        "name": name,
        "project": "test",
        "queue": "gpu",
        "command": command,
        "env": env,
        "resources": {"gpus_per_node": 2, "gpu_type": "fake", "mem_gb": 0.25, "walltime_min": 5},
    }


def test_a_gpu_runs_page_shows_its_telemetry_and_its_priced_cost(signed_in, serve, runs):
    page = signed_in("tester")
    run_id = runs["ids"]["gpu"]
    page.goto(f"{serve.url}/ui/runs/{run_id}")
    telemetry = api(serve, "tester").get(f"/runs/{run_id}/telemetry").json()["attempts"][0]
    rows = page.locator("#telemetry .telemetry-gpus tbody tr")
    expect(rows).to_have_count(2)
    for i, gpu in enumerate(telemetry["gpus"]):
        cells = rows.nth(i).locator("td").all_inner_texts()
        assert (
            cells[0] == gpu["node"] and cells[1] == str(gpu["gpu_index"]) and cells[3] == str(gpu["samples"])
        )
        assert cells[4] == f"{gpu['util_mean_pct']:.1f}" and cells[5] == f"{gpu['util_max_pct']:.1f}"
        assert cells[6].startswith(f"{gpu['mem_peak_mib']:.0f}") and cells[8] == f"{gpu['idle_fraction']:.2f}"
    plots = page.locator("#telemetry svg.plot")
    expect(plots).to_have_count(2)
    assert (
        plots.nth(0).locator("polyline").get_attribute("points").count(",") == telemetry["gpus"][0]["samples"]
    )
    expect(page.locator("#telemetry .telemetry-status")).to_contain_text("sampled")
    # what the job wrote into its telemetry folder is shown as text, and ran nowhere
    expect(page.locator("#telemetry .telemetry-status")).to_contain_text(f"<b>zz</b>: {HOSTILE}")
    assert page.evaluate("() => window.pwned") is None

    cost = runs["costs"]["gpu"]
    version = cost["attempts"][0]["rate_version"]
    assert cost["currency"] == "EUR" and cost["total"] > 0 and version is not None
    expect(page.locator("#cost-total")).to_have_text(f"{cost['total']:.6f} EUR")
    expect(page.locator("#cost-note")).to_contain_text(f"priced by rate version {version}")
    expect(page.locator("#cost-attempts tbody tr .rate-version")).to_have_text(str(version))
    expect(page.locator("#cost-attempts tbody tr .cost")).to_have_text(f"{cost['attempts'][0]['cost']:.6f}")
    expect(page.locator("#cost-failed")).to_have_text("0.000000 EUR")
    shot(page, "run-gpu-telemetry-cost")


def test_a_failed_runs_cost_shows_under_failed(signed_in, serve, runs):
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/runs/{runs['ids']['failed']}")
    cost = runs["costs"]["failed"]
    assert cost["failed_total"] == pytest.approx(cost["total"]) and cost["total"] > 0
    expect(page.locator("#cost-failed")).to_have_text(f"{cost['failed_total']:.6f} EUR")
    expect(page.locator("#cost-attempts tbody tr.failed")).to_contain_text("FAILED (failed)")
    expect(page.locator("#telemetry-none")).to_be_visible()  # a CPU run: no GPU telemetry
    shot(page, "run-failed-cost")
    # a rerun the spec refuses shows the page again with the error, and its cost still there
    page.fill("#changes", "resources.mem_gb=lots")
    page.click("#rerun")
    expect(page.locator("#rerun-error")).to_contain_text("mem_gb")
    expect(page.locator("#cost-failed")).to_have_text(f"{cost['failed_total']:.6f} EUR")


def test_a_node_without_nvml_is_said_in_words(signed_in, serve, runs):
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/runs/{runs['ids']['no_nvml']}")
    status = page.locator("#telemetry .telemetry-status")
    expect(status).to_contain_text("no NVML on the node")
    expect(status).to_contain_text("nvmlInit failed")  # the sampler's own reason, per node
    expect(page.locator("#telemetry .telemetry-gpus")).to_have_count(0)
    expect(page.locator("#cost-note")).to_contain_text("priced by rate version")  # it cost all the same
    shot(page, "run-gpu-no-nvml")


def test_the_project_page_shows_its_cost_this_month(signed_in, serve, runs):
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/projects/test")
    expect(page.locator("#usage-plots svg")).to_have_count(3)
    amount, currency = page.locator("#project-cost-total").inner_text().split()
    failed = page.locator("#project-cost-failed").inner_text().split()[0]
    # the project's Slurm account is this test's own: its records this month are these runs'
    assert currency == "EUR"
    assert float(amount) == pytest.approx(sum(c["total"] for c in runs["costs"].values()), abs=1.5e-6)
    assert float(failed) == pytest.approx(runs["costs"]["failed"]["failed_total"], abs=1.5e-6)
    shot(page, "project-cost")
