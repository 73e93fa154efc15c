#!/usr/bin/env python3
"""Run one evaluation inside a job and leave its results files in an output directory.

The gateway's eval job calls this with the model artifact, the suite's task
directory, its dataset directory, its prompt template and an output
directory::

    python3 eval/jobs/run_eval.py --harness lm-eval --model-type tiny_lm --model ART/model.json \
        --task-dir eval/tasks/tiny_lm --tasks tiny_lm_spelling,tiny_lm_word_order \
        --data "$GW_DATASET_TINY_CLOZE" --prompt-template eval/prompts/tiny_lm_cloze.txt --out OUT

``--harness lm-eval`` runs lm-evaluation-harness through its Python API with
``log_samples`` on, offline (``HF_DATASETS_OFFLINE=1``, ``HF_HUB_OFFLINE=1``,
a cache of its own under OUT), on the task YAMLs of ``--task-dir`` only (not
lm-eval's built-in catalogue), each overlaid so that its relative data files
are read from ``--data`` and its ``doc_to_text`` is the suite's prompt
template. It writes what lm-eval's command line writes, under stable names:
``OUT/results.json`` and ``OUT/samples_<task>.jsonl``, plus the overlays
under ``OUT/tasks/``. ``--harness native`` runs ``--program`` (default:
``tiny_lm_native.py`` here), which writes ``OUT/native.jsonl``.

Either way ``OUT/eval_manifest.json`` lists the harness, its version and
every results file with its sha256 and size, for the gateway to ingest.
Needs PyYAML (lm-eval brings it) and, for lm-eval, lm-eval; not the gateway.
Exit status: 0 done, 2 bad arguments or inputs, 1 anything else.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
MODEL_MODULES = {"tiny_lm": "lm_eval_tiny_lm"}  # lm-eval model name -> module here that registers it


class UsageError(Exception):
    """Bad arguments or inputs: exit status 2."""


class _TaskLoader(yaml.SafeLoader):
    """Safe YAML that keeps lm-eval's ``!function`` tags as text (only the task name and data are read)."""


_TaskLoader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


def find_tasks(task_dir: Path, names: list[str]) -> dict[str, tuple[Path, dict]]:
    """Each task name -> (its YAML file, the YAML as read) among the ``*.yaml`` files of ``task_dir``."""
    if not task_dir.is_dir():
        raise UsageError(f"task directory {task_dir} does not exist")
    found: dict[str, tuple[Path, dict]] = {}
    for path in sorted(task_dir.glob("**/*.yaml")):
        try:
            cfg = yaml.load(path.read_text(encoding="utf-8"), Loader=_TaskLoader)  # noqa: S506 (safe subclass)
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise UsageError(f"cannot read task file {path}: {exc}") from None
        if isinstance(cfg, dict) and isinstance(cfg.get("task"), str):
            found.setdefault(cfg["task"], (path, cfg))
    missing = [n for n in names if n not in found]
    if missing:
        raise UsageError(
            f"task(s) {', '.join(missing)} not found in {task_dir} (it has {', '.join(found) or 'none'})"
        )
    return {n: found[n] for n in names}


def data_files(cfg: dict, data_dir: Path, task: str) -> dict[str, str]:
    """The task's ``dataset_kwargs.data_files`` with relative paths read from ``data_dir``."""
    files = (cfg.get("dataset_kwargs") or {}).get("data_files")
    if isinstance(files, str):
        files = {cfg.get("test_split", "test"): files}
    if not isinstance(files, dict) or not files:
        raise UsageError(f"task {task}: dataset_kwargs.data_files names no local file")
    out = {}
    for split, rel in files.items():
        path = Path(rel) if Path(rel).is_absolute() else data_dir / rel
        if not path.is_file():
            raise UsageError(f"task {task}: data file {path} (split {split}) does not exist")
        out[str(split)] = str(path.resolve())
    return out


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(out: Path, harness: str, version: str | None, files: dict) -> None:
    def entry(name: str) -> dict:
        return {"path": name, "sha256": sha256_file(out / name), "bytes": (out / name).stat().st_size}

    manifest = {"harness": harness, "harness_version": version}
    manifest.update(
        {
            k: (entry(v) if isinstance(v, str) else {t: entry(p) for t, p in v.items()})
            for k, v in files.items()
        }
    )
    (out / "eval_manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def check_lm_eval(model_type: str, pinned: str | None) -> None:
    """lm-eval is importable here, at the version the suite pins, and knows the model type."""
    from importlib import metadata

    try:
        installed = metadata.version("lm_eval")
    except metadata.PackageNotFoundError:
        raise UsageError(
            f"the lm-eval harness needs lm_eval in this Python ({sys.executable}): "
            f"pip install lm_eval=={pinned or '0.4.13'}"
        ) from None
    if pinned is not None and installed != pinned:
        raise UsageError(f"lm_eval {installed} is installed here; the suite pins {pinned}")
    if model_type not in MODEL_MODULES:
        raise UsageError(f"unknown --model-type {model_type!r}; known: {', '.join(MODEL_MODULES)}")


def run_lm_eval(args: argparse.Namespace, tasks: dict[str, tuple[Path, dict]], template: str) -> None:
    check_lm_eval(args.model_type, args.lm_eval_version)
    overlay = args.out / "tasks"
    overlay.mkdir(parents=True, exist_ok=True)
    for name, (path, cfg) in tasks.items():
        kwargs = dict(cfg.get("dataset_kwargs") or {})
        kwargs["data_files"] = data_files(cfg, args.data, name)
        body = {"include": str(path.resolve()), "dataset_kwargs": kwargs, "doc_to_text": template}
        (overlay / f"{name}.yaml").write_text(yaml.safe_dump(body, sort_keys=True, allow_unicode=True))
    work = args.out / ".work"
    os.environ.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HOME=str(work / "hf"))
    sys.path.insert(0, str(HERE))
    __import__(MODEL_MODULES[args.model_type])  # registers the model with lm-eval

    import lm_eval
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    tracker = EvaluationTracker(output_path=str(work / "lm_eval"))
    results = lm_eval.simple_evaluate(
        model=args.model_type,
        model_args={"path": str(Path(args.model).resolve())},
        tasks=list(tasks),
        num_fewshot=args.num_fewshot,
        log_samples=True,
        evaluation_tracker=tracker,
        task_manager=TaskManager(include_path=str(overlay), include_defaults=False),
        random_seed=args.seed,
        numpy_random_seed=args.seed,
        torch_random_seed=args.seed,
        fewshot_random_seed=args.seed,
        limit=args.limit,
    )
    # As lm-eval's command line saves them (lm_eval/_cli/run.py): the aggregate with the task
    # hashes, then one samples file per task.
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for name in results["configs"]:
        tracker.save_results_samples(task_name=name, samples=samples[name])
    (written,) = (work / "lm_eval").glob("*/results_*.json")
    shutil.move(written, args.out / "results.json")
    names = {}
    for name in tasks:
        (path,) = written.parent.glob(f"samples_{name}_*.jsonl")
        shutil.move(path, args.out / f"samples_{name}.jsonl")
        names[name] = f"samples_{name}.jsonl"
    shutil.rmtree(work)
    write_manifest(
        args.out, "lm-eval", results.get("lm_eval_version"), {"results": "results.json", "samples": names}
    )


def run_native(args: argparse.Namespace, tasks: dict[str, tuple[Path, dict]]) -> None:
    program = Path(args.program) if args.program else HERE / "tiny_lm_native.py"
    argv = [sys.executable, str(program), "--model", str(args.model), "--out", str(args.out / "native.jsonl")]
    argv += ["--prompt-template", str(args.prompt_template)]
    for name, (_, cfg) in tasks.items():
        files = data_files(cfg, args.data, name)
        split = cfg.get("test_split", "test")
        if split not in files:
            raise UsageError(f"task {name}: no data file for its test split {split!r}")
        argv += ["--task", f"{name}={files[split]}"]
        version = (cfg.get("metadata") or {}).get("version")
        if version is not None:
            argv += ["--version", f"{name}={version}"]
    done = subprocess.run(argv, check=False)
    if done.returncode != 0:
        raise SystemExit(done.returncode)
    write_manifest(args.out, "native", None, {"results": "native.jsonl"})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run one evaluation and leave its results files in --out.")
    ap.add_argument("--harness", choices=["lm-eval", "native"], required=True)
    ap.add_argument("--model-type", default="tiny_lm", help="the lm-eval model name (default: tiny_lm)")
    ap.add_argument("--model", required=True, help="the model artifact (tiny_lm: its model.json)")
    ap.add_argument("--task-dir", type=Path, required=True, help="the suite's task YAMLs")
    ap.add_argument("--tasks", required=True, help="comma-separated task names")
    ap.add_argument(
        "--data", type=Path, required=True, help="the dataset directory relative data files are in"
    )
    ap.add_argument("--prompt-template", type=Path, required=True, help="the suite's prompt template file")
    ap.add_argument("--out", type=Path, required=True, help="where the results files go")
    ap.add_argument("--num-fewshot", type=int, default=0)
    ap.add_argument(
        "--seed", type=int, default=0, help="lm-eval's four seeds (python, numpy, torch, few-shot)"
    )
    ap.add_argument("--program", help="native harness: the program that writes native.jsonl")
    ap.add_argument(
        "--lm-eval-version", help="lm-eval: the version the suite pins; another one installed is refused"
    )
    ap.add_argument(
        "--limit", type=int, help="lm-eval: score only the first N documents (a quick look; never gateable)"
    )
    args = ap.parse_args(argv)
    try:
        names = [t for t in args.tasks.split(",") if t]
        if not names:
            raise UsageError("--tasks names no task")
        tasks = find_tasks(args.task_dir, names)
        try:
            template = args.prompt_template.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read the prompt template: {exc}") from None
        if not Path(args.model).is_file():
            raise UsageError(f"model artifact {args.model} does not exist")
        args.out.mkdir(parents=True, exist_ok=True)
        if args.harness == "lm-eval":
            run_lm_eval(args, tasks, template)
        else:
            run_native(args, tasks)
    except UsageError as exc:
        print(f"run_eval: error: {exc}", file=sys.stderr)
        return 2
    print(f"run_eval: {args.harness} results in {args.out} (eval_manifest.json lists them)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
