"""The gateway installed from its wheel renders a job that runs on the cluster from the installed files.

The wheel is built from a copy of this checkout and installed into a folder of its own
(``tests/wheel.py``); a Python with ``PYTHONPATH`` there imports that copy, not the checkout. It
renders a GPU job (gpu partition, one ``gpu:fake`` device) with the built-in single template and
the sampler launch its settings give (fake NVML); the job's command runs the installed eval
program (``eval/jobs/run_eval.py``, native harness) with ``python3 -I``, so neither the gateway
nor the checkout is on its path. The job must complete, leave the eval files and the sampler's
file, and every path in the script must be inside the install folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.core.slurm.states import RunState
from tests.conftest import unique_tag, wait_for_accounting
from tests.wheel import ROOT, build_wheel, install, run_installed

pytestmark = pytest.mark.slurm

RENDER = """
import json, sys
from gateway import resources
from gateway.core.sbatch.context import SubmitTarget
from gateway.core.sbatch.render import render_sbatch
from gateway.core.sbatch.templates import build_template_env
from gateway.core.spec.run_spec import build_spec
from gateway.services.accounting.telemetry import telemetry_launch
from gateway.settings import Settings

run_dir, model, data = sys.argv[1:4]
ev = resources.builtin_dir(resources.EVAL)
command = (
    f"python3 -I {ev}/jobs/run_eval.py --harness native --model {model} --task-dir {ev}/tasks/tiny_lm "
    f"--tasks tiny_lm_spelling,tiny_lm_word_order --data {data} "
    f'--prompt-template {ev}/prompts/tiny_lm_cloze.txt --out "$GW_RUN_DIR/eval"'
)
spec = build_spec({
    "name": "wheel-check", "project": "test", "queue": "gpu", "command": command,
    "env": {"FAKE_NVML_UTIL": "0:50"},
    "resources": {"gpus_per_node": 1, "gpu_type": "fake", "mem_gb": 0.25, "walltime_min": 5},
})
launch = telemetry_launch(Settings(gpu_nvml="fake", gpu_sample_interval_s=1.0))
rendered = render_sbatch(
    spec, build_template_env(), run_id="wheel-check", run_dir=run_dir,
    target=SubmitTarget("gpu", gpu_type="fake"), telemetry=launch,
)
print(json.dumps({
    "dirs": [str(resources.builtin_dir(w)) for w in resources.ALL],
    "template_dir": build_template_env().loader.searchpath,
    "sampler": launch.sampler_path,
    "script": rendered.text,
}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    scratch = tmp_path_factory.mktemp("wheel")
    return install(build_wheel(scratch), scratch / "site")


def test_a_job_rendered_by_the_installed_wheel_runs_its_eval_program_and_sampler(
    installed, slurm, run_dir, tmp_path
):
    directory = Path(run_dir("wheel"))
    model = directory / "model"
    train = [sys.executable, str(ROOT / "examples" / "tiny_lm" / "train.py"), "--out", str(model)]
    subprocess.run([*train, "--order", "2", "--epochs", "1"], check=True, capture_output=True, timeout=240)
    data = ROOT / "examples" / "tiny_lm" / "eval_data"

    code = f"import sys; sys.argv = ['render', *{[str(directory), str(model / 'model.json'), str(data)]!r}]\n"
    done = run_installed(installed, code + RENDER, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    package = installed / "gateway" / "_builtin"
    assert out["dirs"] == [str(package / "sbatch"), str(package / "eval"), str(package / "accounting")]
    assert out["template_dir"] == [str(package / "sbatch")]
    assert out["sampler"] == str(package / "accounting" / "telemetry" / "gpu_sampler.py")
    assert str(ROOT / "eval") not in out["script"] and str(ROOT / "accounting") not in out["script"]

    job_id = slurm.prepare_submit(tag=unique_tag()).send(out["script"])
    (record,) = wait_for_accounting(slurm, job_id, timeout_s=180)
    stdout = directory / f"stdout-{job_id}.log"
    stderr = directory / f"stderr-{job_id}.log"
    logs = "".join(p.read_text()[-2000:] for p in (stdout, stderr) if p.exists())
    assert record.state is RunState.SUCCEEDED, (record, logs)

    eval_out = directory / "eval"
    manifest = json.loads((eval_out / "eval_manifest.json").read_text())
    assert manifest["harness"] == "native" and (eval_out / "native.jsonl").stat().st_size > 0, logs
    (samples,) = (directory / "telemetry").glob(f"gpu-{job_id}-r0-*.jsonl")
    start = json.loads(samples.read_text().splitlines()[0])
    assert start["kind"] == "start" and start["nvml"] == "fake", start
