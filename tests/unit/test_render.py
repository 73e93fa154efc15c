"""sbatch rendering: golden files, provenance, and hostile values kept inert."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from gateway.core.accounting.telemetry import TelemetryLaunch
from gateway.core.sbatch.context import SubmitTarget
from gateway.core.sbatch.preflight import InputCheck
from gateway.core.sbatch.render import render_sbatch
from gateway.core.sbatch.templates import build_template_env, shq, slurm_field, template_for
from gateway.core.spec.run_spec import build_spec
from gateway.errors import SpecError, TemplateError

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
UPDATE = os.environ.get("GW_UPDATE_GOLDEN") == "1"

SPECS = {
    "single": {
        "name": "train-small",
        "project": "vision",
        "queue": "cpu",
        "command": "python train.py --epochs 3",
        "workdir": "/srv/projects/vision",
        "env": {"HF_HOME": "/data/hf", "OMP_NUM_THREADS": "2"},
        "params": {"lr": 0.001, "batch_size": 32, "optimizer": "adamw", "schedule": {"warmup": 100}},
        "datasets": [{"ref": "imagenet-mini@3", "verify": "digest"}],
        "tags": ["baseline", "team=vision"],
        "resources": {"cpus_per_task": 4, "mem_gb": 8, "walltime_min": 90},
    },
    "gpu-argv": {
        "name": "finetune",
        "project": "nlp",
        "queue": "gpu",
        "command": ["python", "-m", "nlp.finetune", "--config", "configs/base.yaml"],
        "resources": {"gpus_per_node": 2, "gpu_type": "fake", "mem_gb": 16},
    },
    "torchrun": {
        "name": "ddp",
        "project": "nlp",
        "queue": "gpu",
        "launcher": "torchrun",
        "command": ["python", "train_ddp.py", "--steps", "10"],
        "resources": {"nodes": 2, "gpus_per_node": 4, "walltime_min": 30},
    },
    "array": {
        "name": "sweep",
        "project": "vision",
        "queue": "cpu",
        "command": "python train.py",
        "params": {"epochs": 1},
        "sweep": {"grid": {"lr": [0.1, 0.01], "seed": [1, 2]}, "max_parallel": 2},
    },
    "script": {
        "name": "scripted",
        "project": "vision",
        "queue": "cpu",
        "script": '#!/bin/bash\necho "run $GW_RUN_ID"\nexit 0\n',
        "container_image": "/images/pytorch-24.03.sif",
    },
}


# What the gateway resolves "imagenet-mini@3" to at submission (gateway/services/runs/inputs.py).
INPUTS = {
    "single": [
        InputCheck(
            name="imagenet-mini",
            ref="vision/imagenet-mini@3",
            digest="ab" * 32,
            path="/data/imagenet-mini",
            env_var="GW_DATASET_IMAGENET_MINI",
            kind="directory",
            file_count=3,
            manifest="/var/lib/gateway/runs/r-golden/inputs/imagenet-mini@3.sha256",
        )
    ]
}


@pytest.fixture(scope="module")
def env():
    return build_template_env()


def render(env, data, run_id="r-golden", run_dir="/var/lib/gateway/runs/r-golden", **kw):
    target = kw.pop("target", SubmitTarget(partition=data["queue"], account=data["project"]))
    return render_sbatch(build_spec(data), env, run_id=run_id, run_dir=run_dir, target=target, **kw)


@pytest.mark.parametrize("case", sorted(SPECS))
def test_golden(env, case):
    rendered = render(env, SPECS[case], inputs=INPUTS.get(case, ()))
    golden = GOLDEN / f"{case}.sbatch"
    if UPDATE or not golden.exists():
        golden.write_text(rendered.text)
    assert rendered.text == golden.read_text(), f"regenerate with GW_UPDATE_GOLDEN=1 if intended ({golden})"


SAMPLER = TelemetryLaunch(
    sampler_path="/opt/gateway/accounting/telemetry/gpu_sampler.py",
    python="/usr/bin/python3",
    interval_s=10.0,
    nvml="real",
)


def test_golden_gpu_telemetry(env):
    """A GPU job starts the sampler on each node before the user's command (docs/telemetry.md)."""
    rendered = render(env, SPECS["gpu-argv"], telemetry=SAMPLER)
    golden = GOLDEN / "gpu-telemetry.sbatch"
    if UPDATE or not golden.exists():
        golden.write_text(rendered.text)
    assert rendered.text == golden.read_text(), f"regenerate with GW_UPDATE_GOLDEN=1 if intended ({golden})"
    lines = rendered.text.splitlines()
    launch = next(i for i, line in enumerate(lines) if "gpu_sampler.py" in line)
    assert launch < lines.index('gw_step user_command started "running"')
    proc = subprocess.run(["bash", "-n"], input=rendered.text, text=True, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("case", ["single", "array", "script"])
def test_a_job_without_gpus_gets_no_sampler(env, case):
    assert "gpu_sampler" not in render(env, SPECS[case], telemetry=SAMPLER).text


def test_the_sampler_words_are_quoted(env):
    hostile = TelemetryLaunch(
        sampler_path="/x/a'; rm -rf ~; '.py", python="python3", interval_s=1, nvml="fake"
    )
    text = render(env, SPECS["gpu-argv"], telemetry=hostile).text
    assert "'/x/a'\"'\"'; rm -rf ~; '\"'\"'.py'" in text


@pytest.mark.parametrize("case", sorted(SPECS))
def test_rendered_scripts_are_valid_bash(env, case):
    text = render(env, SPECS[case]).text
    proc = subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_provenance_header_and_hash(env):
    rendered = render(env, SPECS["single"])
    lines = rendered.text.splitlines()
    assert lines[0] == "#!/bin/bash"
    assert "# gw-run-id: r-golden" in lines
    assert f"# gw-spec-sha256: {build_spec(SPECS['single']).spec_hash()}" in lines
    assert "# gw-template: single.sbatch.j2" in lines
    assert f"# gw-template-version: {rendered.template_version}" in lines
    assert rendered.sha256 == hashlib.sha256(rendered.text.encode()).hexdigest()
    assert rendered.template_name == "single.sbatch.j2"


def test_sbatch_directives_come_before_any_command(env):
    for case in SPECS:
        # the user's own script rides in the body as a quoted string (its copy has #SBATCH lines)
        lines = render(env, SPECS[case]).text.split("\nprintf '%s' ")[0].splitlines()
        last_directive = max(i for i, ln in enumerate(lines) if ln.startswith("#SBATCH"))
        first_command = min(i for i, ln in enumerate(lines) if ln.strip() and not ln.startswith("#"))
        assert last_directive < first_command, case


def test_directives_carry_resources_and_target(env):
    text = render(env, SPECS["gpu-argv"], target=SubmitTarget("gpu", account="nlp", qos="normal")).text
    for line in [
        "#SBATCH --partition=gpu",
        "#SBATCH --account=nlp",
        "#SBATCH --qos=normal",
        "#SBATCH --gres=gpu:fake:2",
        "#SBATCH --mem=16384M",
        "#SBATCH --time=60",
    ]:
        assert line in text.splitlines()


def test_template_choice():
    assert template_for(build_spec(SPECS["single"])) == "single.sbatch.j2"
    assert template_for(build_spec(SPECS["torchrun"])) == "torchrun.sbatch.j2"
    assert template_for(build_spec(SPECS["array"])) == "array.sbatch.j2"


def test_array_has_one_case_per_task_and_limit(env):
    text = render(env, SPECS["array"]).text
    assert "#SBATCH --array=0-3%2" in text
    assert '{"epochs": 1, "lr": 0.01, "seed": 2}' in text
    assert text.count(";;") == 4 + 1  # one per task, and the catch-all


def test_render_is_deterministic(env):
    assert render(env, SPECS["array"]).sha256 == render(env, SPECS["array"]).sha256


def test_site_template_overrides_builtin(tmp_path):
    (tmp_path / "single.sbatch.j2").write_text(
        '{% import "_common.sbatch.j2" as gw %}{{ gw.header(run) }}\n# site template\n'
    )
    site_env = build_template_env(tmp_path)
    rendered = render(site_env, SPECS["single"])
    assert "# site template" in rendered.text
    assert rendered.template_version != render(build_template_env(), SPECS["single"]).template_version
    # the torchrun template still comes from the built-in directory
    assert "torchrun" in render(site_env, SPECS["torchrun"]).text


def test_missing_template_is_a_clear_error(env):
    with pytest.raises(TemplateError, match="nope.sbatch.j2.*not found"):
        render(env, SPECS["single"], template="nope.sbatch.j2")


@pytest.mark.parametrize("bad", ["/tmp/a b", "relative", "/tmp/$(id)", "/tmp/a\n#SBATCH --x"])
def test_run_dir_must_be_a_safe_path(env, bad):
    with pytest.raises(SpecError, match="run_dir"):
        render(env, SPECS["single"], run_dir=bad)


def test_filters():
    assert shq("a'b") == "'a'\"'\"'b'"
    assert shq({"a": 1}) == "'{\"a\": 1}'"
    with pytest.raises(SpecError, match="NUL"):
        shq("a\x00b")
    assert slurm_field("gpu") == "gpu"
    with pytest.raises(SpecError):
        slurm_field("gpu\n#SBATCH --uid=0")


HOSTILE = [
    "a'; touch {canary}; echo '",
    "$(touch {canary})",
    "`touch {canary}`",
    "x\ntouch {canary}\n",
    '"; touch {canary}; "',
    "\\'; touch {canary} #",
    "ünïcødé ✓ 🚀 $(touch {canary})",
    "${{IFS}}touch${{IFS}}{canary}",
    "y" * 60_000 + "; touch {canary}",
]


def hostile_spec(canary: str, tmp_path: Path) -> dict:
    values = [v.format(canary=canary) for v in HOSTILE]
    return {
        "name": "hostile",
        "project": "p",
        "queue": "cpu",
        "command": ["printf", "%s\\n", *values[:3]],
        "workdir": str(tmp_path),
        "env": {f"V{i}": v for i, v in enumerate(values)},
        "params": {f"p{i}": v for i, v in enumerate(values)} | {"nested": {"deep": values[:-1]}},
        # (hostile dataset paths: tests/unit/test_preflight.py, which checks them as paths)
    }


def test_hostile_values_render_inert_under_bash(env, tmp_path):
    """Run the rendered body with plain bash: every value arrives intact, nothing executes."""
    canary = tmp_path / "pwned"
    data = hostile_spec(str(canary), tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    text = render(env, data, run_dir=str(run_dir)).text
    check = "\n".join(f'printf "%s\\0" "$V{i}" >> "$GW_RUN_DIR/seen"' for i in range(len(HOSTILE)))
    user_env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    proc = subprocess.run(
        ["bash", "-s"],
        input=(text + "\n" + check).encode(),
        capture_output=True,
        env=user_env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert not canary.exists(), "a hostile value was executed"
    seen = (run_dir / "seen").read_bytes().split(b"\0")[:-1]
    assert [s.decode() for s in seen] == [v.format(canary=canary) for v in HOSTILE]
    assert proc.stdout.decode().splitlines()[:3] == [v.format(canary=canary) for v in HOSTILE[:3]]
    import json

    params = json.loads((run_dir / "params.json").read_text())
    assert params["p1"] == f"$(touch {canary})"


def test_script_args_and_output_patterns(env):
    data = dict(
        SPECS["script"], script_args=["a b", "$(id)"], stdout="/logs/%x-%j.out", stderr="/logs/%x-%j.err"
    )
    text = render(env, data).text
    assert "#SBATCH --output=/logs/%x-%j.out" in text and "#SBATCH --error=/logs/%x-%j.err" in text
    assert text.rstrip().endswith("\"$GW_USER_SCRIPT\" 'a b' '$(id)'")


def test_array_with_explicit_indices(env):
    data = dict(SPECS["array"], sweep={"params": [{"x": 1}, {"x": 2}, {"x": 3}], "indices": [1, 2, 9]})
    text = render(env, data).text
    assert "#SBATCH --array=1-2,9" in text.splitlines()
    assert "  9)" in text.splitlines()
