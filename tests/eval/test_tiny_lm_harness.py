"""The job-side pieces on their own: the tiny_lm scorer, its lm-eval model class, the native writer."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JOBS = ROOT / "eval" / "jobs"
TINY = ROOT / "examples" / "tiny_lm"
sys.path.insert(0, str(JOBS))
sys.path.insert(0, str(TINY))

import model as tiny_model  # noqa: E402  (examples/tiny_lm/model.py)
from lm_eval.api.instance import Instance  # noqa: E402
from lm_eval.api.registry import get_model  # noqa: E402
from native_format import NativeWriter  # noqa: E402
from tiny_lm_scorer import CheckpointError, TinyLM  # noqa: E402

from gateway.core.eval.read_native import parse_native  # noqa: E402


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiny")
    subprocess.run(
        [sys.executable, str(TINY / "train.py"), "--out", str(out), "--order", "3", "--epochs", "1"],
        check=True,
        capture_output=True,
    )
    return out / "model.json"


def test_scorer_equals_the_example_models_own_evaluation(checkpoint):
    # The scorer reads the checkpoint; model.evaluate computes with the same weights in
    # training's form. Both give the validation loss, so the scorer is the model, not a copy of it.
    data = json.loads(checkpoint.read_text())
    order = data["params"]["order"]
    names = list(data["weights"])
    features = {name: i for i, name in enumerate(names)}
    weights = [data["weights"][name] for name in names]
    lines = tiny_model.split_lines((TINY / "data" / "valid.txt").read_text())
    loss, _ = tiny_model.evaluate(weights, tiny_model.encode(lines, data["vocab"], features, order))
    scorer = TinyLM.load(checkpoint)
    total = sum(scorer.logprob("", line + "\n")[0] for line in lines)
    chars = sum(len(line) + 1 for line in lines)
    assert -total / chars == pytest.approx(loss, rel=1e-12)


def test_lm_eval_model_class_is_registered_and_scores(checkpoint):
    import lm_eval_tiny_lm  # noqa: F401  (registers "tiny_lm")

    cls = get_model("tiny_lm")
    lm = cls.create_from_arg_string(f"path={checkpoint}", {"batch_size": 1, "device": "cpu"})
    good = Instance("loglikelihood", {}, ("The miller walked to the", " mill."), 0)
    bad = Instance("loglikelihood", {}, ("The miller walked to the", " mlil."), 1)
    (ll_good, _), (ll_bad, _) = lm.loglikelihood([good, bad])
    assert ll_good > ll_bad and ll_good < 0
    (rolling,) = lm.loglikelihood_rolling([Instance("loglikelihood_rolling", {}, ("The mill.",), 0)])
    assert rolling == pytest.approx(TinyLM.load(checkpoint).logprob("", "The mill.")[0])
    gen = Instance("generate_until", {}, ("The miller walked to", {"until": ["."], "max_gen_toks": 40}), 0)
    (text,) = lm.generate_until([gen])
    assert 0 < len(text) <= 40 and "." not in text


def test_scorer_refuses_what_is_not_a_checkpoint(tmp_path):
    path = tmp_path / "model.json"
    path.write_text(json.dumps({"format": "something/else"}))
    with pytest.raises(CheckpointError, match="not a tiny_lm/1 checkpoint"):
        TinyLM.load(path)
    path.write_text("{not json")
    with pytest.raises(CheckpointError, match="not a JSON checkpoint"):
        TinyLM.load(path)


def test_native_writer_output_reads_back_and_refuses_mistakes(tmp_path):
    out = tmp_path / "native.jsonl"
    tasks = {"t": {"version": "2", "n_original": 3, "higher_is_better": {"acc": True}}}
    with NativeWriter(out, harness="demo", harness_version="1", tasks=tasks, seeds={"seed": 5}) as writer:
        writer.write("t", 0, {"acc": 1}, prompt_hash="ab12")
        writer.write("t", "x", {"acc": 0}, prompt_hash="cd34")
        with pytest.raises(ValueError, match="written twice"):
            writer.write("t", 0, {"acc": 1})
        with pytest.raises(ValueError, match="not declared"):
            writer.write("other", 1, {"acc": 1})
        with pytest.raises(ValueError, match="finite"):
            writer.write("t", 2, {"acc": math.nan})
        with pytest.raises(ValueError, match="every sample needs"):
            writer.write("t", 3, {"f1": 0.5})
    results = parse_native(out.open("rb"))
    task = results.tasks["t"]
    assert (task.n_original, task.n_effective, task.version) == (3, 2, "2")
    assert task.samples.ids == ("0", "x") and task.metrics["acc"].value == 0.5
    assert results.seeds == {"seed": 5}


def test_native_writer_leaves_nothing_under_the_real_name_when_the_job_fails(tmp_path):
    out = tmp_path / "native.jsonl"
    tasks = {"t": {"version": "1", "n_original": 1}}
    with pytest.raises(RuntimeError), NativeWriter(out, harness="h", harness_version="1", tasks=tasks) as w:
        w.write("t", 0, {"acc": 1})
        raise RuntimeError("the job died")
    assert not out.exists() and not (tmp_path / "native.jsonl.tmp").exists()


def test_runner_refuses_bad_arguments_with_status_2(tmp_path):
    argv = [
        sys.executable,
        str(JOBS / "run_eval.py"),
        "--harness",
        "native",
        "--model",
        str(tmp_path / "none"),
    ]
    argv += ["--task-dir", str(ROOT / "eval" / "tasks" / "tiny_lm"), "--tasks", "no_such_task"]
    argv += [
        "--data",
        str(TINY / "eval_data"),
        "--prompt-template",
        str(ROOT / "eval" / "prompts" / "tiny_lm_cloze.txt"),
    ]
    argv += ["--out", str(tmp_path / "out")]
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 2
    assert "no_such_task not found" in done.stderr and "tiny_lm_spelling" in done.stderr


def test_the_evaluation_data_is_what_its_generator_makes():
    done = subprocess.run(
        [sys.executable, str(TINY / "make_eval_data.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    docs = [json.loads(line) for line in (TINY / "eval_data" / "spelling.jsonl").read_text().splitlines()]
    assert len(docs) == 300 and len({d["id"] for d in docs}) == 300
    assert all(sorted(d["choices"][d["gold"]]) == sorted(d["choices"][0]) for d in docs)  # anagrams


def test_runner_refuses_an_lm_eval_other_than_the_pinned_one(tmp_path, checkpoint):
    argv = [sys.executable, str(JOBS / "run_eval.py"), "--harness", "lm-eval", "--lm-eval-version", "0.4.2"]
    argv += ["--model", str(checkpoint), "--task-dir", str(ROOT / "eval" / "tasks" / "tiny_lm")]
    argv += ["--tasks", "tiny_lm_spelling", "--data", str(TINY / "eval_data"), "--out", str(tmp_path / "out")]
    argv += ["--prompt-template", str(ROOT / "eval" / "prompts" / "tiny_lm_cloze.txt")]
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 2 and "lm_eval 0.4.13 is installed here; the suite pins 0.4.2" in done.stderr
    assert not (tmp_path / "out" / "results.json").exists()
