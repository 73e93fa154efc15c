"""Pre-flight steps: new spec fields, the steps file reader, and rendered scripts run with plain bash.

The scripts run here without Slurm (``bash -s``, a fake SLURM_JOB_ID): the
same checks run in real jobs in tests/slurm/test_failure_classes.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from gateway.core.runs.steps import (
    EXIT_DATA_ACCESS,
    EXIT_ENVIRONMENT,
    EXIT_OUTPUT,
    StepRecord,
    failed_step,
    parse_steps,
    steps_file_name,
)
from gateway.core.sbatch import preflight
from gateway.core.sbatch.context import SubmitTarget
from gateway.core.sbatch.render import render_sbatch
from gateway.core.sbatch.templates import build_template_env
from gateway.core.spec.run_spec import build_spec
from gateway.errors import SpecError

JOB_ID = "4242"
BASE = {"name": "pf", "project": "p", "queue": "cpu", "command": "echo ran"}

HOSTILE_PATHS = [  # under the test's tmp_path
    "gw pf/a'b; touch {canary}",
    'gw"pf/$(touch {canary})',
    "gwpf/`touch {canary}`\\n\\",
    "gwpf/ünïcødé ✓ 🚀 %s %n {}",
    'gwpf/"},{"step":"x',
]


@pytest.fixture(scope="module")
def env():
    return build_template_env()


def render(env, data: dict, run_dir: Path) -> str:
    spec = build_spec({**BASE, **data})
    target = SubmitTarget(partition=spec.queue)
    return render_sbatch(spec, env, run_id="r-pf", run_dir=str(run_dir), target=target).text


def run_script(text: str, *, extra_env: dict | None = None, task: str | None = None):
    job_env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    job_env["SLURM_JOB_ID"] = JOB_ID
    if task is not None:
        job_env["SLURM_ARRAY_TASK_ID"] = task
    job_env.update(extra_env or {})
    return subprocess.run(["bash", "-s"], input=text.encode(), capture_output=True, env=job_env, check=False)


def steps_in(run_dir: Path) -> list[StepRecord]:
    path = run_dir / steps_file_name(JOB_ID)
    text = path.read_text() if path.exists() else ""
    for line in text.splitlines():  # every line the job wrote is one whole JSON object
        assert isinstance(json.loads(line), dict), line
    return parse_steps(text)


def run_dir_at(tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    return run_dir


# ---- spec fields ---------------------------------------------------------------------------------


def test_new_fields_default_empty():
    spec = build_spec(BASE)
    assert (spec.dataset_digests, spec.modules, spec.venv) == ({}, [], None)


def test_digest_keys_must_be_listed_absolute_paths_and_values_sha256():
    good = build_spec({**BASE, "datasets": ["/d/a"], "dataset_digests": {"/d/a": "AB" * 32}})
    assert good.dataset_digests == {"/d/a": "ab" * 32}
    cases = [
        ({"datasets": ["/d/a"], "dataset_digests": {"/d/a": "xyz"}}, "64 hex"),
        ({"datasets": ["d@1"], "dataset_digests": {"d@1": "a" * 64}}, "absolute"),
        ({"datasets": ["/d/a"], "dataset_digests": {"/d/b": "a" * 64}}, "not in datasets"),
    ]
    for data, words in cases:
        with pytest.raises(SpecError, match=words):
            build_spec({**BASE, **data})


@pytest.mark.parametrize("name", ["cuda/12.4", "gcc+openmpi-4.1_x.y", "A" * 128])
def test_module_names_accepted(name):
    assert build_spec({**BASE, "modules": [name]}).modules == [name]


@pytest.mark.parametrize("name", ["", "cuda 12", "a;b", "$(id)", "x\ny", "A" * 129, "'q'"])
def test_module_names_refused(name):
    with pytest.raises(SpecError, match="module"):
        build_spec({**BASE, "modules": [name]})


@pytest.mark.parametrize("venv", ["relative/venv", "/opt/v\nx", "/opt/\x1bv", ""])
def test_venv_must_be_absolute_without_control_characters(venv):
    with pytest.raises(SpecError, match="venv"):
        build_spec({**BASE, "venv": venv})


def test_template_context_checks_only_absolute_paths():
    spec = build_spec({**BASE, "datasets": ["ds@3", '/d/ü"x'], "dataset_digests": {'/d/ü"x': "c" * 64}})
    ctx = preflight.template_context(spec)["preflight"]
    assert ctx["inputs"] == [
        {"path": '/d/ü"x', "json": '/d/\\u00fc\\"x', "sha256": "c" * 64, "manifest": None}
    ]
    assert (ctx["exit_data_access"], ctx["exit_environment"], ctx["exit_output"]) == (80, 81, 82)
    assert ctx["container_runtime"] is None and ctx["image_path"] is None


# ---- the steps file --------------------------------------------------------------------------------


def test_parse_steps_skips_garbage_and_a_truncated_last_line():
    text = (
        '{"step":"inputs","status":"ok","detail":"checked 1 dataset path(s)","at":1700000000}\n'
        "garbage line\n"
        "[1, 2]\n"
        '{"step":"nonsense","status":"ok","detail":"","at":1}\n'
        '{"step":"outputs","status":"weird","detail":"","at":1}\n'
        '{"step":"environment","status":"failed","detail":"module load failed: x","at":"soon"}\n'
        '{"step":"user_command","status":"started","det'
    )
    steps = parse_steps(text)
    assert steps == [
        StepRecord("inputs", "ok", "checked 1 dataset path(s)", 1700000000),
        StepRecord("environment", "failed", "module load failed: x", None),
    ]
    assert failed_step(steps) == steps[1]
    assert parse_steps("") == [] and failed_step([]) is None


def test_user_command_exit_code_from_its_detail():
    assert StepRecord("user_command", "failed", "exit 3", 1).exit_code == 3
    assert StepRecord("user_command", "failed", "killed by a signal while running", 1).exit_code is None
    assert StepRecord("inputs", "failed", "exit 3", 1).exit_code is None


# ---- rendered scripts under bash -------------------------------------------------------------------


def test_all_steps_ok_then_the_command_runs(env, tmp_path):
    data_file = tmp_path / "train.bin"
    data_file.write_bytes(b"tokens")
    data_dir = tmp_path / "shards"
    data_dir.mkdir()
    run_dir = run_dir_at(tmp_path)
    digest = hashlib.sha256(b"tokens").hexdigest()
    data = {
        "datasets": [str(data_file), str(data_dir), "wiki@2"],
        "dataset_digests": {str(data_file): digest},
    }
    proc = run_script(render(env, data, run_dir))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == "ran\n"
    steps = steps_in(run_dir)
    assert [(s.step, s.status) for s in steps] == [
        ("inputs", "ok"),
        ("environment", "ok"),
        ("outputs", "ok"),
        ("user_command", "started"),
        ("user_command", "ok"),
    ]
    assert steps[0].detail == "checked 2 dataset path(s)"
    assert steps[-1].detail == "exit 0"
    assert all(isinstance(s.at, int) and s.at > 1_600_000_000 for s in steps)
    assert not list(run_dir.glob(".gw-write-probe*")), "the write probe is removed"


def test_missing_dataset_stops_before_the_command(env, tmp_path):
    run_dir = run_dir_at(tmp_path)
    missing = str(tmp_path / "nope" / "train.bin")
    proc = run_script(render(env, {"datasets": [missing], "command": "touch ran"}, run_dir))
    assert proc.returncode == EXIT_DATA_ACCESS
    steps = steps_in(run_dir)
    assert [(s.step, s.status) for s in steps] == [("inputs", "failed")]
    assert steps[0].detail == f"dataset path missing: {missing}"
    assert f"dataset path does not exist: {missing}" in proc.stderr.decode()
    assert not (run_dir / "params.json").exists()


def test_digest_mismatch_names_both_digests(env, tmp_path):
    run_dir = run_dir_at(tmp_path)
    data_file = tmp_path / "train.bin"
    data_file.write_bytes(b"changed")
    expected = hashlib.sha256(b"original").hexdigest()
    data = {"datasets": [str(data_file)], "dataset_digests": {str(data_file): expected}}
    proc = run_script(render(env, data, run_dir))
    assert proc.returncode == EXIT_DATA_ACCESS
    (step,) = steps_in(run_dir)
    got = hashlib.sha256(b"changed").hexdigest()
    assert step.detail == f"dataset digest mismatch: {data_file} (expected {expected}, got {got})"


def test_digest_for_a_directory_is_refused_at_run_time(env, tmp_path):
    run_dir = run_dir_at(tmp_path)
    data = {"datasets": [str(tmp_path)], "dataset_digests": {str(tmp_path): "0" * 64}}
    proc = run_script(render(env, data, run_dir))
    assert proc.returncode == EXIT_DATA_ACCESS
    assert steps_in(run_dir)[0].detail.startswith("dataset digest given for a non-file")


@pytest.mark.parametrize("exists", [False, True])
def test_hostile_dataset_paths_stay_inert_and_keep_lines_whole(env, tmp_path, exists):
    canary = tmp_path / "pwned"
    paths = [f"{tmp_path}/{p.replace('{canary}', str(canary))}" for p in HOSTILE_PATHS]
    if exists:
        for path in paths:
            Path(path).mkdir(parents=True)
    run_dir = run_dir_at(tmp_path)
    proc = run_script(render(env, {"datasets": paths}, run_dir))
    steps = steps_in(run_dir)  # also asserts each line is one JSON object
    assert not canary.exists(), "a dataset path was executed"
    if exists:
        assert proc.returncode == 0, proc.stderr
        assert steps[0] == StepRecord("inputs", "ok", f"checked {len(paths)} dataset path(s)", steps[0].at)
    else:
        assert proc.returncode == EXIT_DATA_ACCESS
        assert [s.detail for s in steps] == [f"dataset path missing: {paths[0]}"]
        assert paths[0] in proc.stderr.decode()


def test_missing_container_image(env, tmp_path):
    run_dir = run_dir_at(tmp_path)
    image = str(tmp_path / "images" / "torch-2's.sif")
    proc = run_script(render(env, {"container_image": image}, run_dir))
    assert proc.returncode == EXIT_ENVIRONMENT
    steps = steps_in(run_dir)
    assert [(s.step, s.status, s.detail) for s in steps] == [
        ("inputs", "ok", "checked 0 dataset path(s)"),
        ("environment", "failed", f"container image missing: {image}"),
    ]


def test_container_runtime_must_be_on_path(env, tmp_path):
    run_dir = run_dir_at(tmp_path)
    image = tmp_path / "image.sif"
    image.write_bytes(b"sif")
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    data = {"container_image": str(image), "env": {"PATH": f"{empty_bin}:/usr/bin:/bin"}}
    if any((Path(d) / "apptainer").exists() for d in ("/usr/bin", "/bin")):
        pytest.skip("apptainer is installed in /usr/bin here")
    proc = run_script(render(env, data, run_dir))
    assert proc.returncode == EXIT_ENVIRONMENT
    assert steps_in(run_dir)[-1].detail == "container runtime not on PATH: apptainer"


def fake_module_command(tmp_path: Path) -> Path:
    """A stand-in for Lmod's `module` (named as a fake): loads "good/1.0", fails on anything else."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    script = bin_dir / "module"
    script.write_text('#!/bin/bash\n[ "$1" = load ] && [ "$2" = good/1.0 ] && echo "loaded $2"\n')
    script.chmod(0o755)
    return bin_dir


def test_modules_load_in_order_and_a_failed_load_stops_the_job(env, tmp_path):
    bin_dir = fake_module_command(tmp_path)
    path_env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    run_dir = run_dir_at(tmp_path)
    proc = run_script(render(env, {"modules": ["good/1.0"], "env": path_env}, run_dir))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == "loaded good/1.0\nran\n"
    run_dir2 = tmp_path / "run2"
    run_dir2.mkdir()
    proc = run_script(render(env, {"modules": ["good/1.0", "bad/2"], "env": path_env}, run_dir2))
    assert proc.returncode == EXIT_ENVIRONMENT
    assert steps_in(run_dir2)[-1] == StepRecord(
        "environment", "failed", "module load failed: bad/2", steps_in(run_dir2)[-1].at
    )


def test_no_module_command_is_an_environment_failure(env, tmp_path):
    run_dir = run_dir_at(tmp_path)
    proc = run_script(render(env, {"modules": ["cuda/12.4"], "env": {"PATH": "/usr/bin:/bin"}}, run_dir))
    assert proc.returncode == EXIT_ENVIRONMENT
    assert steps_in(run_dir)[-1].detail == "module command not found"


def test_venv_is_activated(env, tmp_path):
    venv = tmp_path / "my venv"
    (venv / "bin").mkdir(parents=True)
    # A minimal activate script (the real one also sets PATH): it must be sourced, not run.
    (venv / "bin" / "activate").write_text(
        'export VIRTUAL_ENV="$(cd "$(dirname "$BASH_SOURCE")/.." && pwd)"\n'
    )
    run_dir = run_dir_at(tmp_path)
    proc = run_script(render(env, {"venv": str(venv), "command": 'echo "$VIRTUAL_ENV"'}, run_dir))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == f"{venv}\n"


@pytest.mark.parametrize("activate", [None, "return 3\n"])
def test_missing_or_failing_venv(env, tmp_path, activate):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    if activate is not None:
        (venv / "bin" / "activate").write_text(activate)
    run_dir = run_dir_at(tmp_path)
    proc = run_script(render(env, {"venv": str(venv)}, run_dir))
    assert proc.returncode == EXIT_ENVIRONMENT
    detail = steps_in(run_dir)[-1].detail
    if activate is None:
        assert detail == f"venv has no readable bin/activate: {venv}"
    else:
        assert detail == f"venv activation failed: {venv}"


def test_unwritable_run_directory(env, tmp_path):
    run_dir = tmp_path / "gone"  # does not exist: nothing can be written there, not even by root
    proc = run_script(render(env, {}, run_dir))
    assert proc.returncode == EXIT_OUTPUT
    assert f"cannot write to the run directory {run_dir}" in proc.stderr.decode()


def test_command_exit_code_is_kept_and_recorded(env, tmp_path):
    run_dir = run_dir_at(tmp_path)
    proc = run_script(render(env, {"command": "echo out; exit 3"}, run_dir))
    assert proc.returncode == 3
    steps = steps_in(run_dir)
    assert [(s.step, s.status, s.detail) for s in steps[-2:]] == [
        ("user_command", "started", "running"),
        ("user_command", "failed", "exit 3"),
    ]
    assert failed_step(steps).exit_code == 3


def test_a_terminated_job_records_the_signal(env, tmp_path):
    run_dir = run_dir_at(tmp_path)
    text = render(env, {"command": "sleep 30"}, run_dir)
    job_env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")} | {"SLURM_JOB_ID": JOB_ID}
    proc = subprocess.Popen(["bash", "-s"], stdin=subprocess.PIPE, env=job_env, start_new_session=True)
    proc.stdin.write(text.encode())
    proc.stdin.close()
    deadline = time.monotonic() + 10
    while not any(s.step == "user_command" for s in steps_in(run_dir)) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    try:
        os.kill(proc.pid, signal.SIGTERM)  # as Slurm does on scancel: the batch shell only
        assert proc.wait(timeout=5) == -signal.SIGTERM, "the shell ends at once, without waiting for sleep"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # and later everything (KillWait)
    last = steps_in(run_dir)[-1]
    assert last.step == "user_command" and last.status == "failed"
    assert last.detail == "killed by a signal while running"


def test_array_task_runs_its_own_preflight(env, tmp_path):
    run_dir = run_dir_at(tmp_path)
    data = {"command": 'echo "task $SLURM_ARRAY_TASK_ID"', "sweep": {"params": [{"x": 1}, {"x": 2}]}}
    text = render(env, data, run_dir)
    proc = run_script(text, task="1")
    assert proc.returncode == 0, proc.stderr
    assert [s.step for s in steps_in(run_dir)] == ["inputs", "environment", "outputs", "user_command"] + [
        "user_command"
    ]
    missing = run_script(render(env, {**data, "datasets": ["/nonexistent/gw"]}, run_dir), task="0")
    assert missing.returncode == EXIT_DATA_ACCESS
    assert not (run_dir / "params-0.json").exists()


def test_torchrun_preflight_runs_before_srun(env, tmp_path):
    run_dir = run_dir_at(tmp_path)
    data = {"launcher": "torchrun", "command": ["python", "t.py"], "datasets": ["/nonexistent/gw"]}
    text = render(env, data, run_dir)
    assert (
        text.index("gw_input ") < text.index('gw_step user_command started "running"') < text.index("srun ")
    )
    assert text.rstrip().endswith("--no-python \\\npython t.py"), "the launch stays the last line"
    proc = run_script(text)  # fails in pre-flight, so no srun is needed
    assert proc.returncode == EXIT_DATA_ACCESS
    assert [s.step for s in steps_in(run_dir)] == ["inputs"]
