"""The environment pages in Debian's chromium against a real `gw serve`: the list, an environment's
versions and their diff, a version's page, the submit form's picker, and a run's page showing the
image it ran in (a podman job on the real cluster)."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest
from playwright.sync_api import expect

from gateway.services.envs.registry import EnvRegistration
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.conftest import JOB_ROOT
from tests.envs_world import busybox_image, lock_text, podman_rmi, wheel
from tests.web.conftest import api, choose, shot

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


def test_the_register_form_a_lock_file_a_module_list_an_image_refusals_csrf_and_the_sites_picker(
    signed_in, serve, tmp_path
):
    tag = uuid.uuid4().hex[:8]
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/projects/test")
    page.click("#project-environments")
    expect(page.locator("h1")).to_have_text("Environments of test")
    form = page.locator("#register-env")
    expect(form.locator("input[name=csrf]")).to_have_count(1)

    # a module list: recorded as given
    page.fill("#env-name", f"form-mods-{tag}")
    page.select_option("#env-kind", "modules")
    page.fill("#env-module-list", "gcc/12.2\ncuda/12.1")
    page.fill("#env-description", "compilers")
    page.click("#register-submit")
    page.wait_for_url(re.compile(rf"/ui/environments/test/form-mods-{tag}/1$"))
    expect(page.locator("#version")).to_contain_text("gcc/12.2 cuda/12.1")
    expect(page.locator("#status")).to_have_text("ready")

    # a lock file, uploaded: built by a Slurm job into a venv, its installed set on the version page
    lock = tmp_path / "requirements.lock"
    lock.write_text(lock_text(wheel("gwtoy", "1.0"), comment=tag))
    page.goto(f"{serve.url}/ui/environments?project=test")
    page.fill("#env-name", f"form-py-{tag}")
    page.select_option("#env-kind", "python")
    page.set_input_files("#env-lock-file", str(lock))
    page.fill("#env-build-queue", "cpu")
    page.click("#register-submit")
    page.wait_for_url(re.compile(rf"/ui/environments/test/form-py-{tag}/1$"))
    expect(page.locator("#status")).to_have_text("building")
    expect(page.locator("#lock")).to_contain_text("gwtoy==1.0")
    for _ in range(90):  # the build job runs on the cluster; the page settles it when it ended
        page.reload()
        if page.inner_text("#status") != "building":
            break
        page.wait_for_timeout(2000)
    expect(page.locator("#status")).to_have_text("ready")
    expect(page.locator("#packages")).to_contain_text("gwtoy")
    shot(page, "environment-registered-from-the-form")

    # the same lock pasted: the version that has it, not a new one
    page.goto(f"{serve.url}/ui/environments?project=test")
    page.fill("#env-name", f"form-py-{tag}")
    page.fill("#env-lock", lock.read_text())
    page.fill("#env-build-queue", "cpu")
    page.click("#register-submit")
    page.wait_for_url(re.compile(rf"/ui/environments/test/form-py-{tag}/1$"))

    # an image archive, read on the run host as the user's OS user
    archive, image_id = busybox_image(f"localhost/gw-form-{tag}:1", JOB_ROOT / f"form-image-{tag}.tar")
    page.goto(f"{serve.url}/ui/environments?project=test")
    page.fill("#env-name", f"form-img-{tag}")
    page.select_option("#env-kind", "image")
    page.fill("#env-archive", str(archive))
    page.click("#register-submit")
    page.wait_for_url(re.compile(rf"/ui/environments/test/form-img-{tag}/1$"))
    expect(page.locator("#version")).to_contain_text(image_id)
    archive.unlink()

    # refusals come back above the form in the service's words, with what was typed kept
    page.goto(f"{serve.url}/ui/environments?project=test")
    page.fill("#env-name", f"form-bad-{tag}")
    page.fill("#env-lock", "torch>=2\n")
    page.fill("#env-build-queue", "cpu")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.click("#register-submit")
    assert answer.value.status == 422
    expect(page.locator("#register-error")).to_contain_text("line 1")
    expect(page.locator("#env-lock")).to_have_value("torch>=2\n")
    expect(page.locator("#env-name")).to_have_value(f"form-bad-{tag}")
    page.fill("#env-name", "no such name!")
    page.select_option("#env-kind", "modules")
    page.fill("#env-module-list", "gcc/12.2")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.click("#register-submit")
    assert answer.value.status == 422
    expect(page.locator("#register-error")).to_contain_text("not a valid environment name")
    client = api(serve, "tester")
    assert client.get(f"/environments/test/form-bad-{tag}").status_code == 404  # nothing written

    # a viewer is not offered the form, and a post without the CSRF token is refused
    viewer = signed_in("watcher")
    viewer.goto(f"{serve.url}/ui/environments?project=test")
    expect(viewer.locator("#register-env")).to_have_count(0)
    cookies = {c["name"]: c["value"] for c in page.context.cookies()}
    refused = httpx.post(
        f"{serve.url}/ui/environments",
        data={"project": "test", "name": f"form-nocsrf-{tag}", "kind": "modules", "modules": "gcc/12"},
        cookies=cookies,
        timeout=10,
    )
    assert refused.status_code == 403 and "CSRF" in refused.text
    # the viewer's own post, with its token, is refused by the service (env.register: members)
    token = viewer.locator("input[name=csrf]").first.get_attribute("value")
    refused = httpx.post(
        f"{serve.url}/ui/environments",
        data={
            "csrf": token,
            "project": "test",
            "name": f"form-nocsrf-{tag}",
            "kind": "modules",
            "modules": "gcc/12",
        },
        cookies={c["name"]: c["value"] for c in viewer.context.cookies()},
        timeout=10,
    )
    assert refused.status_code == 403 and "env.register" in refused.text, refused.text
    assert client.get(f"/environments/test/form-nocsrf-{tag}").status_code == 404

    # the submit form's picker offers the site's environments after the project's own
    site = _serve_services(serve)
    admin = site.access.principal("admin", source="pytest")
    site.environments.register_site(
        EnvRegistration(project="site", name=f"form-site-{tag}", kind="modules", modules=["gcc/12.2"]),
        build_project="test",
        principal=admin,
    )
    page.goto(f"{serve.url}/ui/submit")
    choose(page, "#project", "test")
    offered = page.eval_on_selector_all("#environment option", "os => os.map(o => o.value)")
    assert f"form-py-{tag}@1" in offered and offered[-1] == f"site/form-site-{tag}@1", offered
    page.fill("#name", "in-site-env")
    page.fill("#command", "echo hi")
    page.select_option("#environment", f"site/form-site-{tag}@1")
    page.click("#preview")
    expect(page.locator("#preview-script")).to_contain_text("module load gcc/12.2")
    expect(page.locator("#spec-yaml")).to_contain_text(f"environment: site/form-site-{tag}@1")


def _serve_services(serve):
    """The services of the `gw serve` the pages are driven against (its database, its runs directory)."""
    settings = Settings(
        database_url=serve.env["GATEWAY_DATABASE_URL"],
        runs_dir=serve.env["GATEWAY_RUNS_DIR"],
        env_pip_find_links=serve.env["GATEWAY_ENV_PIP_FIND_LINKS"],
    )
    return build_services(settings, upgrade=False)
