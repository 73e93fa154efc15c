"""The environment pages in Debian's chromium against a real `gw serve`: the list, an environment's
versions and their diff, a version's page, the submit form's picker, and a run's page showing the
image it ran in (a podman job on the real cluster)."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from tests.conftest import JOB_ROOT
from tests.envs_world import busybox_image, podman_rmi
from tests.web.conftest import api, shot
from tests.web.test_web_ui import choose

pytestmark = pytest.mark.slurm


def test_environment_pages_the_forms_picker_and_a_run_in_an_image(signed_in, serve):
    client = api(serve, "tester")
    for modules in (["gcc/12.2", "cuda/12.1"], ["gcc/12.2", "cuda/12.4", "nccl/2.18"]):
        made = client.post(
            "/environments/test/web-mods/versions", json={"kind": "modules", "modules": modules}
        )
        assert made.status_code == 201, made.text
    tag = uuid.uuid4().hex[:8]
    archive, image_id = busybox_image(f"localhost/gw-web-{tag}:1", JOB_ROOT / f"web-image-{tag}.tar")
    made = client.post("/environments/test/web-img/versions", json={"kind": "image", "archive": str(archive)})
    assert made.status_code == 201, made.text

    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/environments")
    expect(page.locator("#environments")).to_contain_text("test/web-mods")
    expect(page.locator("#environments")).to_contain_text("test/web-img")
    page.click('a:text-is("test/web-mods")')
    page.click("#diff")
    diff = page.locator("#env-diff")
    expect(diff).to_contain_text("2 changed, 1 unchanged")
    expect(diff).to_contain_text("^ cuda 12.1 -> 12.4")
    expect(diff).to_contain_text("+ nccl 2.18")
    shot(page, "environment-diff")
    page.click('a:text-is("@2")')
    expect(page.locator("#parent-diff")).to_contain_text("+ nccl 2.18")
    page.goto(f"{serve.url}/ui/environments/test/web-img/1")
    expect(page.locator("#version")).to_contain_text(image_id)

    page.goto(f"{serve.url}/ui/submit")
    choose(page, "#project", "test")
    offered = page.eval_on_selector_all("#environment option", "os => os.map(o => o.value)")
    assert offered == ["", "web-img@latest", "web-img@1", "web-mods@latest", "web-mods@2", "web-mods@1"]
    page.fill("#name", "in-image")
    page.fill("#command", "echo hi")
    page.select_option("#environment", "web-mods@2")
    page.click("#preview")
    expect(page.locator("#preview-script")).to_contain_text("module load nccl/2.18")
    expect(page.locator("#spec-yaml")).to_contain_text("environment: web-mods@2")
    expect(page.locator("#sbatch-command")).to_contain_text("--environment=web-mods@2")

    spec = {
        "name": "web-in-image",
        "project": "test",
        "queue": "cpu",
        "command": ["sh", "-c", "echo hi"],
        "environment": "web-img@1",
    }
    run = client.post("/runs", json=spec)
    assert run.status_code == 201, run.text
    page.goto(f"{serve.url}/ui/runs/{run.json()['id']}")
    expect(page.locator("#run-state")).to_have_text("succeeded", timeout=120_000)
    page.reload()
    expect(page.locator("#run-environment")).to_contain_text("test/web-img@1")
    expect(page.locator("#run-environment")).to_contain_text(re.compile(r"job \d+: ran as recorded"))
    shot(page, "run-environment")
    podman_rmi(image_id)
    archive.unlink()
