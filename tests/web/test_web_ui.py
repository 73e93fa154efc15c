"""The web UI in a real browser (Debian's chromium through Playwright) against a real `gw serve` and
the real Slurm cluster: the submit form and its limits, a run submitted through it and released, datasets,
the project and admin pages, and every page kind's layout. Signing in, escaping, CSRF and roles:
test_web_sessions.py; waiting, array and failed runs' pages: test_web_run_pages.py."""

from __future__ import annotations

import re
import subprocess
import time

import httpx
import pytest
from playwright.sync_api import expect

from tests.service.gw_serve import GW
from tests.web.conftest import REPO, RUN_DONE_S, api, choose, fill_run, own_runs, shot

pytestmark = pytest.mark.slurm


def _gpus_per_node(partition: str) -> list[int]:
    """GPUs of each node of ``partition``, from Slurm itself (sinfo's GRES column)."""
    out = subprocess.run(
        ["sinfo", "-h", "-N", "-p", partition, "-o", "%N %G"], capture_output=True, text=True, check=True
    ).stdout
    counts = []
    for line in out.splitlines():
        match = re.search(r"gpu(?::[^:(\s]+)?:(\d+)", line)
        counts.append(int(match.group(1)) if match else 0)
    return counts


def test_the_form_offers_only_gpu_counts_the_queues_nodes_have(signed_in):
    page = signed_in("tester")
    page.goto(page.url.split("/ui/")[0] + "/ui/submit")
    choose(page, "#project", "test")
    choose(page, "#queue", "gpu")
    offered = [
        int(v) for v in page.eval_on_selector_all("#gpus_per_node option", "os => os.map(o => o.value)")
    ]
    most = max(_gpus_per_node("gpu"))
    assert most > 0 and offered == list(range(most + 1))
    shot(page, "submit-form-gpu-queue")
    choose(page, "#queue", "cpu")
    offered = [
        int(v) for v in page.eval_on_selector_all("#gpus_per_node option", "os => os.map(o => o.value)")
    ]
    assert offered == [0] and max(_gpus_per_node("cpu")) == 0
    # a queue with no GPU nodes says so, and no GPU quota hint next to it (issue 29: "has no GPU nodes
    # · 4 GPUs free now of a cap of 4")
    hints = page.locator("#gpus_per_node ~ .quota-hint")
    assert hints.count() == 0, hints.all_inner_texts()


def test_a_4_gpu_run_against_a_2_gpu_cap_is_refused_next_to_the_field(signed_in, serve):
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/submit")
    fill_run(page, project="capped", queue="gpu", name="too-many-gpus", command="nvidia-smi")
    expect(page.locator("#quota-left")).to_contain_text("of 2")
    page.select_option("#gpus_per_node", "4")
    page.click("#submit")
    error = page.locator(".field-error[data-field=gpus_per_node]")
    expect(error).to_contain_text("the cap of project capped is 2")
    shot(page, "submit-refused-over-cap")
    assert not [r for r in own_runs(serve, "tester") if r["name"] == "too-many-gpus"]


def test_a_preview_of_more_memory_than_a_node_has_is_refused_next_to_the_field(signed_in, serve):
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/submit")
    fill_run(page, project="test", queue="cpu", name="too-much-memory", command="true")
    page.fill("#mem_gb", "64")
    page.click("#preview")
    error = page.locator(".field-error[data-field=mem_gb]")
    expect(error).to_contain_text("nodes of queue cpu have at most 4000 MB")
    assert not page.locator("#preview-script").count()
    assert not [r for r in own_runs(serve, "tester") if r["name"] == "too-much-memory"]


def test_submit_tiny_lm_through_the_form_and_watch_it_succeed(signed_in, serve):
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/submit")
    fill_run(
        page,
        project="test",
        queue="cpu",
        name="tiny-lm-web",
        command="python3 examples/tiny_lm/train.py --epochs 2",
    )
    page.fill("#workdir", str(REPO))
    page.select_option("#walltime_min", "5")
    page.fill("input[name=param_key_0]", "lr")
    page.fill("input[name=param_value_0]", "0.3")
    page.fill("#outputs", "outputs/*")
    page.fill("#metrics", "outputs/metrics.json\noutputs/metrics.jsonl")
    page.fill("#tags", "web-ui")
    page.click("#preview")
    expect(page.locator("#preview-script")).to_contain_text("#SBATCH")
    expect(page.locator("#preview-script")).to_contain_text("examples/tiny_lm/train.py")
    # the whole script shows, its command lines (last) included: the box does not cut it off
    assert page.locator("#preview-script").evaluate("e => e.scrollHeight <= e.clientHeight + 1")
    expect(page.locator("#spec-yaml")).to_contain_text("name: tiny-lm-web")
    expect(page.locator("#sbatch-command")).to_contain_text("gw sbatch -A test -p cpu")
    assert not own_runs(serve, "tester", tag="web-ui")  # a preview submits nothing
    shot(page, "submit-preview")
    page.click("#submit")
    page.wait_for_url(re.compile(r".*/ui/runs/r-[0-9a-f]{16}$"))
    expect(page.locator("#run-state")).to_have_text("succeeded", timeout=RUN_DONE_S * 1000)
    elapsed = page.locator("#attempts td.elapsed").first
    deadline = time.monotonic() + 60
    while elapsed.inner_text().strip() == "-" and time.monotonic() < deadline:  # sacct's record comes in
        time.sleep(2)
        page.reload()
    assert elapsed.inner_text().strip().isdigit()
    expect(page.locator("#attempts td.tres").first).to_contain_text("cpu=")
    expect(page.locator("#artifacts")).to_contain_text("model.json")
    # the metrics as grouped charts (losses together, no step counters), each a drawn image
    groups = page.locator("figure.metric-chart").evaluate_all("fs => fs.map(f => f.dataset.group)")
    assert groups and groups[0] == "loss" and "epoch" not in groups and "step" not in groups, groups
    assert page.locator("figure.metric-chart img").evaluate_all("is => is.every(i => i.naturalWidth > 0)")
    expect(page.locator("svg.timeline")).to_be_visible()
    shot(page, "run-succeeded")
    _release(page, serve, page.url.rsplit("/", 1)[1])


def _release(page, serve, run_id: str) -> None:
    """Release the run's checkpoint and move an alias to it: the model page shows the alias history,
    the run page the release below the artifact."""
    sha = page.locator("#artifacts tr:has-text('model.json') code").inner_text()
    client = api(serve, "tester")
    assert client.post("/models", json={"project": "test", "name": "web-lm"}).status_code == 201
    made = client.post("/models/test/web-lm/releases", json={"artifact_sha256": sha, "run_id": run_id})
    assert made.status_code == 201, made.text
    moved = client.post("/models/test/web-lm/aliases/candidate", json={"version": 1, "reason": "web test"})
    assert moved.status_code == 200, moved.text
    page.reload()
    expect(page.locator("main")).to_contain_text("release web-lm v1")
    page.click("text=web-lm v1")
    expect(page.locator("#alias-history")).to_contain_text("candidate")
    expect(page.locator("#alias-history")).to_contain_text("web test")
    shot(page, "model-releases")


def _register(serve, path, description: str) -> None:
    env = {**serve.env, "GW_URL": serve.url, "GW_CONFIG": serve.config, "GW_TOKEN": serve.tokens["tester"]}
    argv = [*GW, "dataset", "register", str(path), "--project", "test", "--name", "web-text"]
    done = subprocess.run([*argv, "--description", description], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_datasets_their_diff_and_the_forms_dataset_versions(signed_in, serve, tmp_path):
    data = tmp_path / "web-text"
    data.mkdir()
    (data / "train.txt").write_text("one\n")
    _register(serve, data, "<b>first</b> version")
    (data / "train.txt").write_text("one\ntwo\n")
    (data / "extra.txt").write_text("new\n")
    _register(serve, data, "second")
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/datasets")
    expect(page.locator("main")).to_contain_text("test/web-text")
    headers = page.locator("main table th").all_inner_texts()
    described = [t for t in page.locator("main td.desc").all_inner_texts() if t.strip() not in ("", "-")]
    assert ("Description" in headers) == bool(described)  # no column that is empty for every dataset
    page.click('a:text-is("test/web-text")')
    expect(page.locator("main")).to_contain_text("<b>first</b> version")  # a description is text
    page.click("#diff")
    diff = page.locator("#dataset-diff")
    expect(diff).to_contain_text("1 added, 0 removed, 1 changed")
    expect(diff).to_contain_text("+ extra.txt")
    shot(page, "dataset-diff")
    page.goto(f"{serve.url}/ui/submit")
    fill_run(page, project="test", queue="cpu", name="with-data", command='ls "$GW_DATASET_WEB_TEXT"')
    offered = page.eval_on_selector_all("#datasets option", "os => os.map(o => o.value)")
    assert offered == ["web-text@latest", "web-text@2", "web-text@1"]
    page.select_option("#datasets", "web-text@1")
    page.click("#preview")
    expect(page.locator("#preview-script")).to_contain_text("GW_DATASET_WEB_TEXT")
    expect(page.locator("#spec-yaml")).to_contain_text("web-text@1")


def test_project_and_admin_pages(signed_in, serve):
    page = signed_in("admin")
    page.goto(f"{serve.url}/ui/projects/capped")
    expect(page.locator("#usage-plots svg.usebar").first).to_contain_text("GPU-hours this month")
    shot(page, "project")
    page.goto(f"{serve.url}/ui/queue")
    expect(page.locator("main")).to_contain_text("Partition gpu")
    shot(page, "admin-queue")
    tester = signed_in("tester")
    assert tester.request.get(f"{serve.url}/ui/queue").status == 403


# each list page, and the prefix of the records it links to (the first one is opened too)
PAGE_KINDS = {
    "runs": "/ui/runs/r-",
    "submit": None,
    "projects": "/ui/projects/",
    "datasets": "/ui/datasets/",
    "environments": "/ui/environments/",  # with the register form
    "evals": "/ui/evals/results/",
    "models": "/ui/models/",
    "reports": None,
    "queue": None,
}


def test_every_page_kind_fits_1366_px_with_no_console_error(browser, serve):
    """Each list page and the first record each one links to, signed in as the admin (who sees every
    page), at 1366 px: nothing wider than the window, no console error; and /favicon.ico answers."""
    from tests.service import page_checks

    assert httpx.get(f"{serve.url}/favicon.ico", timeout=10).status_code == 200
    page, errors = page_checks.open_page(browser, f"{serve.url}/ui/login")
    page.fill("#token", serve.tokens["admin"])
    page.click("#sign-in")
    page.wait_for_selector("#signed-in-as")
    seen = []
    for kind, records in PAGE_KINDS.items():
        page.goto(f"{serve.url}/ui/{kind}")
        page_checks.check_screen(page, errors, page_checks.SCREENSHOTS / f"kind-{kind}.png")
        seen.append(page.url)
        first = page.locator(f"main a[href^='{records}']").first if records else None
        if first is not None and first.count():
            href = first.get_attribute("href")
            page.goto(f"{serve.url}{href}")
            page_checks.check_screen(page, errors, page_checks.SCREENSHOTS / f"kind-{kind}-one.png")
            seen.append(page.url)
    assert len(seen) >= len(PAGE_KINDS) and not errors, (seen, errors)
    page.context.close()
