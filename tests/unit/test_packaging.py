"""The package finds its sbatch templates, eval/ and accounting/ in a checkout and in an installed wheel.

The wheel is built from a copy of this checkout and installed into a folder of its own
(``tests/wheel.py``); a Python with ``PYTHONPATH`` at that folder imports the installed copy. The
job-side programs of the installed copy running on the cluster: tests/slurm/test_installed_wheel.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gateway import resources
from gateway.core.accounting.telemetry import SAMPLER_FILE
from tests.wheel import ROOT, build_wheel, copy_source, install, run_installed

FOUND = (
    "import json; from gateway import resources; "
    "print(json.dumps([str(resources.builtin_dir(w)) for w in resources.ALL]))"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("build"))


def test_wheel_contains_templates_migrations_eval_and_the_sampler(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for template in ("single", "torchrun", "array", "_common"):
        assert f"gateway/_builtin/sbatch/{template}.sbatch.j2" in names
    assert "gateway/store/migrations/env.py" in names
    assert any(n.startswith("gateway/store/migrations/versions/0001") for n in names)
    assert any(n.startswith("gateway/store/migrations/versions/0002") for n in names)
    assert "gateway/web/templates/base.html" in names and "gateway/resources.py" in names
    # eval/: the example suite, its task YAMLs and prompt, and the job-side programs.
    for path in (
        "README.md",
        "suites/tiny_lm.yaml",
        "prompts/tiny_lm_cloze.txt",
        "tasks/tiny_lm/spelling.yaml",
        "tasks/tiny_lm/word_order.yaml",
        "jobs/run_eval.py",
        "jobs/lm_eval_tiny_lm.py",
        "jobs/tiny_lm_scorer.py",
        "jobs/native_format.py",
        "jobs/tiny_lm_native.py",
        "environments/lm-eval.lock",  # the site's default eval environment, built on first need
    ):
        assert f"gateway/_builtin/eval/{path}" in names, path
    # accounting/: the GPU sampler and its fake NVML, run inside jobs from the installed copy.
    sampler = Path(SAMPLER_FILE)
    for path in (sampler, sampler.with_name("fake_nvml.py"), "README.md", "rates.example.yaml"):
        assert f"gateway/_builtin/accounting/{path}" in names, path
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    # what the wheel carries is exactly what the checkout's folders hold (nothing left out or extra)
    for which in resources.ALL:
        tracked = subprocess.run(
            ["git", "ls-files", "--", which.checkout], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
        expected = {f"gateway/{which.packaged}/{Path(p).relative_to(which.checkout)}" for p in tracked}
        carried = {n for n in names if n.startswith(f"gateway/{which.packaged}/")}
        assert carried == expected, carried ^ expected


def test_the_installed_wheel_finds_its_own_copies(wheel, tmp_path):
    target = install(wheel, tmp_path / "site")
    done = run_installed(target, FOUND, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = [Path(p) for p in json.loads(done.stdout)]
    assert found == [target / "gateway" / w.packaged for w in resources.ALL]
    assert (found[2] / SAMPLER_FILE).is_file() and (found[1] / "jobs" / "run_eval.py").is_file()

    # A broken copy (a plain file where the folder was, as a recovery once left it) stops the
    # installed gateway with the places it looked at, instead of failing every eval job later.
    shutil.rmtree(found[1])
    found[1].write_text("../eval")
    broken = run_installed(target, FOUND, cwd=tmp_path)
    assert broken.returncode == 1
    assert "the built-in eval/ folder (suites, task YAMLs, eval job programs) not found" in broken.stderr
    assert f"{found[1]}/jobs/run_eval.py" in broken.stderr and "reinstall the gateway" in broken.stderr


def test_the_checkout_finds_the_folders_at_its_top():
    assert [resources.builtin_dir(w) for w in resources.ALL] == [
        ROOT / "templates" / "sbatch",
        ROOT / "eval",
        ROOT / "accounting",
    ]
    assert (resources.builtin_dir(resources.EVAL) / "suites" / "tiny_lm.yaml").is_file()
    sampler = resources.builtin_dir(resources.ACCOUNTING) / SAMPLER_FILE
    assert sampler.is_file() and sampler.with_name("fake_nvml.py").is_file()


def test_no_symlinks_inside_the_package():
    links = [str(p) for p in (ROOT / "gateway").rglob("*") if p.is_symlink()]
    assert links == [], "gateway/ holds symlinks; gateway/resources.py finds the top-level folders"
    staged = subprocess.run(["git", "ls-files", "-s", "gateway"], cwd=ROOT, capture_output=True, text=True)
    assert not [line for line in staged.stdout.splitlines() if line.startswith("120000")]


def test_a_site_folder_comes_before_the_built_in_one(tmp_path):
    assert resources.chosen(tmp_path, resources.EVAL) == tmp_path
    assert resources.chosen(None, resources.EVAL) == ROOT / "eval"


def test_a_missing_folder_names_where_it_was_looked_for():
    missing = resources.Builtin("the built-in nothing", "nothing", "no/such/folder", "marker.txt")
    with pytest.raises(FileNotFoundError) as caught:
        resources.builtin_dir(missing)
    message = str(caught.value)
    assert message.startswith("the built-in nothing not found: no ")
    assert f"{ROOT / 'gateway' / '_builtin' / 'nothing' / 'marker.txt'}" in message
    assert f"{ROOT / 'no' / 'such' / 'folder' / 'marker.txt'}" in message


def test_an_editable_install_finds_the_folders_of_its_checkout(tmp_path):
    """setuptools' editable wheel (PEP 660) of a copy of this checkout, its finder on sys.path."""
    build = (
        "import sys; from setuptools import build_meta; "
        f"sys.stdout.write(build_meta.build_editable({str(tmp_path / 'editable')!r}))"
    )
    source = copy_source(tmp_path / "source")
    made = subprocess.run(
        [sys.executable, "-c", build], cwd=source, capture_output=True, text=True, timeout=300
    )
    assert made.returncode == 0, made.stderr[-3000:]
    site = tmp_path / "site"
    zipfile.ZipFile(tmp_path / "editable" / made.stdout.strip().splitlines()[-1]).extractall(site)
    # -S: not the shared environment's own editable install; its packages (jinja2 ...) on the path
    deps = [p for p in sys.path if p.endswith("site-packages")]
    code = f"import site, sys; site.addsitedir({str(site)!r}); sys.path += {deps!r}; {FOUND}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # not this checkout's gateway
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert [Path(p) for p in json.loads(done.stdout)] == [
        source / "templates" / "sbatch",
        source / "eval",
        source / "accounting",
    ]
