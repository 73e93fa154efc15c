"""The tiny_lm example trains for real, reads the gateway's params, and is deterministic.

Runs examples/tiny_lm/train.py as a subprocess (with this interpreter), the
way a Slurm job would: params in a JSON file named by GW_PARAMS_FILE, outputs
in a directory. The training runs start together and take a few seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _train_script() -> Path:
    here = Path(__file__).resolve()
    for base in here.parents:
        candidate = base / "examples" / "tiny_lm" / "train.py"
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("examples/tiny_lm/train.py not found above " + str(here))


TRAIN = _train_script()
# The interpreter the jobs run with; set TINY_LM_PYTHON=/usr/bin/python3 to check a bare system Python.
PYTHON = os.environ.get("TINY_LM_PYTHON", sys.executable)
EPOCHS = 3


def _env(params: dict | None, tmp: Path, name: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GW_", "SLURM_"))}
    if params is not None:
        path = tmp / f"params-{name}.json"
        path.write_text(json.dumps(params) + "\n")
        env["GW_PARAMS_FILE"] = str(path)
        env["GW_PARAMS"] = json.dumps(params)
    env.update(extra)
    return env


def _start(
    tmp: Path, name: str, params: dict | None, *args: str, **extra: str
) -> tuple[subprocess.Popen, Path]:
    out = tmp / name
    proc = subprocess.Popen(
        [PYTHON, str(TRAIN), "--out", str(out), *args],
        env=_env(params, tmp, name, **extra),
        cwd=tmp,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, out


def _finish(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    stdout, stderr = proc.communicate(timeout=240)  # four trainings at once, beside the rest of the suite
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """Four training runs started at once; each name maps to (result, output dir)."""
    tmp = tmp_path_factory.mktemp("tiny_lm")
    base = {"lr": 0.3, "epochs": EPOCHS, "seed": 1, "order": 4}
    started = {
        "a": _start(tmp, "a", base),
        "a_again": _start(tmp, "a_again", base),
        "other_seed": _start(tmp, "other_seed", {**base, "seed": 2}),
        # The file says lr 0.3; the flag wins.
        "other_lr": _start(tmp, "other_lr", base, "--lr", "1.0"),
    }
    return {name: (_finish(proc), out) for name, (proc, out) in started.items()}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_training_succeeds_and_writes_outputs(runs):
    result, out = runs["a"]
    assert result.returncode == 0, result.stderr
    assert "epoch 3/3" in result.stdout
    assert (out / "model.json").stat().st_size > 0
    model = json.loads((out / "model.json").read_text())
    assert model["format"] == "tiny_lm/1"
    summary = json.loads((out / "metrics.json").read_text())
    assert summary["params"] == {
        "lr": 0.3,
        "lr_decay": 0.6,
        "epochs": EPOCHS,
        "seed": 1,
        "order": 4,
        "l2": 0.0,
    }
    assert summary["checkpoint"]["sha256"] == _sha(out / "model.json")
    data = TRAIN.parent / "data"
    manifest = "".join(f"{_sha(data / n)}  {n}\n" for n in ("train.txt", "valid.txt"))
    assert summary["data_digest"] == hashlib.sha256(manifest.encode()).hexdigest()


def test_metrics_improve(runs):
    _, out = runs["a"]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in rows] == list(range(1, EPOCHS + 1))
    assert all(b["step"] > a["step"] for a, b in zip(rows, rows[1:], strict=False))
    first, last = rows[0], rows[-1]
    assert last["val_loss"] < first["val_loss"]
    assert last["train_loss"] < first["train_loss"]
    assert last["val_perplexity"] < first["val_perplexity"]
    # Far better than guessing uniformly over ~40 characters (perplexity 40).
    assert last["val_perplexity"] < 3.0
    summary = json.loads((out / "metrics.json").read_text())
    assert summary["final"] == last


def test_same_seed_same_checkpoint(runs):
    (a, out_a), (b, out_b) = runs["a"], runs["a_again"]
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert _sha(out_a / "model.json") == _sha(out_b / "model.json")


@pytest.mark.parametrize("other", ["other_seed", "other_lr"])
def test_other_seed_or_lr_different_checkpoint(runs, other):
    result, out = runs[other]
    assert result.returncode == 0, result.stderr
    assert _sha(out / "model.json") != _sha(runs["a"][1] / "model.json")


def test_cli_flag_overrides_params_file(runs):
    _, out = runs["other_lr"]
    summary = json.loads((out / "metrics.json").read_text())
    assert summary["params"]["lr"] == 1.0
    assert summary["params"]["seed"] == 1
    assert summary["params_origin"]["lr"] == "cli"
    assert summary["params_origin"]["seed"] == "gateway"


def test_missing_data_dir_exits_2(tmp_path):
    missing = tmp_path / "no-such-data"
    proc, out = _start(tmp_path, "missing", None, "--data", str(missing))
    result = _finish(proc)
    assert result.returncode == 2
    assert "data directory" in result.stderr and str(missing) in result.stderr
    assert "does not exist" in result.stderr
    assert not (out / "model.json").exists()


def test_bad_params_file_exits_2(tmp_path):
    proc, _ = _start(tmp_path, "bad", {"lr": -1})
    result = _finish(proc)
    assert result.returncode == 2
    assert "lr" in result.stderr and "expected > 0" in result.stderr


def test_default_out_follows_gw_run_dir_and_array_task(tmp_path):
    run_dir = tmp_path / "run"
    env = _env({"epochs": 1, "order": 2}, tmp_path, "task", GW_RUN_DIR=str(run_dir), SLURM_ARRAY_TASK_ID="4")
    result = subprocess.run(
        [PYTHON, str(TRAIN)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert (run_dir / "outputs" / "task-4" / "model.json").is_file()
    assert (run_dir / "outputs" / "task-4" / "metrics.json").is_file()
