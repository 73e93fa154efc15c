"""One evaluation world per database backend, shared by the eval test modules (built once, ~1 min).

Real everything: the tiny_lm eval data registered as a dataset of project
``test``; the example suite (eval/suites/tiny_lm.yaml, in project ``test``),
a version of it with another prompt template, and a native-harness suite;
two tiny_lm models trained as gateway runs (strong: order 4, 3 epochs;
weak: order 2, 1 epoch); eval runs of the same suite version on both through
real lm-eval in Slurm jobs, one of the strong model on the changed prompt,
and two whose files are spoiled after their jobs end and before the harvest
(a results file that is not lm-eval's format, a native samples file with a
duplicate id), as a broken harness would leave them. Settled by the
background cycle, as `gw serve` does.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gateway.adapters.files import scan
from gateway.core.slurm.states import TERMINAL
from gateway.core.spec.run_spec import build_spec
from gateway.services import Services
from gateway.services.eval.runs import ArtifactChoice
from gateway.services.lineage.datasets import Registration
from tests.service.conftest import PROJECT, unique_tag

ROOT = Path(__file__).resolve().parents[2]
EVAL = ROOT / "eval"
DATA = ROOT / "examples" / "tiny_lm" / "eval_data"
TASKS = ("tiny_lm_spelling", "tiny_lm_word_order")
MODELS = {"strong": "--order 4 --epochs 3", "weak": "--order 2 --epochs 1"}
CHANGED_PROMPT = "Finish the sentence: {{context}}"


def suite_data(dataset: str, name: str, *, prompt: str | None = None, native: bool = False) -> dict[str, Any]:
    """The example suite as a mapping for project ``test``: its prompt inline, our dataset, our name."""
    data = yaml.safe_load((EVAL / "suites" / "tiny_lm.yaml").read_text())
    data["prompt_template"] = prompt or (EVAL / data.pop("prompt_template_file")).read_text()
    data.pop("prompt_template_file", None)
    data.update(project=PROJECT, name=name, datasets=[f"{dataset}@latest"])
    if native:
        data["harness"] = {"name": "native", "task_dir": "tasks/tiny_lm", "program": "jobs/tiny_lm_native.py"}
        data["gate"]["regression"][0]["method"] = "mcnemar"
    return data


@dataclass
class World:
    tag: str
    dataset: str
    suites: dict[str, Any]  # label -> SuiteVersionRecord: v1, v2 (changed prompt), native
    training: dict[str, str]  # model -> run id
    artifacts: dict[str, str]  # model -> sha256 of its model.json
    evals: dict[str, Any]  # label -> EvalRun, settled
    results: dict[str, str]  # label -> eval result id
    seconds: dict[str, float]


def cycle(services: Services) -> None:
    """One cycle of `gw serve`'s background work (its steps one by one if another process leads)."""
    services.background.cycle()
    if not services.background.leading:
        services.refresher.refresh()
        services.harvester.harvest_due()
        services.eval_ingest.ingest_due()


def settle(services: Services, run_ids: list[str], *, timeout_s: float = 240, cycles: bool) -> None:
    """Run whole background cycles (``cycles``), or refreshes only, until every run has ended."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cycles:
            cycle(services)
        else:
            services.refresher.refresh()
        runs = [services.runs.store.get_run(r) for r in run_ids]
        if all(r.state in TERMINAL for r in runs):
            return
        time.sleep(0.5)
    raise AssertionError(f"runs did not end within {timeout_s} s: {[(r.id, r.state) for r in runs]}")


def spoil(run_dir: str, name: str, change) -> None:
    """Rewrite ``eval/<name>`` of an ended eval job with ``change(bytes) -> bytes``, and its manifest entry,
    as a harness that wrote a bad file (and a manifest that agrees with it) would have left them."""
    out = Path(run_dir) / "eval"
    path = out / name
    data = change(path.read_bytes())
    path.write_bytes(data)
    manifest = json.loads((out / "eval_manifest.json").read_text())
    entries = [manifest["results"], *manifest.get("samples", {}).values()]
    (entry,) = [e for e in entries if e["path"] == name]
    entry.update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    (out / "eval_manifest.json").write_text(json.dumps(manifest))


def _duplicate_first_sample(data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    return b"".join([lines[0], lines[1], lines[1], *lines[2:]])  # the header, then sample 1 twice


def build_world(services: Services, principal) -> World:
    started = time.monotonic()
    tag = unique_tag()
    dataset = f"cloze-{tag}"
    files = [e.to_dict() for e in scan(DATA).entries]
    services.datasets.register(Registration(PROJECT, dataset, files, path=str(DATA)), principal=principal)
    register = services.eval_suites.register
    suites = {
        "v1": register(suite_data(dataset, f"cloze-{tag}"), principal=principal)[0],
        "v2": register(suite_data(dataset, f"cloze-{tag}", prompt=CHANGED_PROMPT), principal=principal)[0],
        "native": register(suite_data(dataset, f"native-{tag}", native=True), principal=principal)[0],
    }
    training = {}
    for model, flags in MODELS.items():
        spec = build_spec(
            {
                "name": f"tiny-lm-{model}",
                "project": PROJECT,
                "queue": "cpu",
                "command": f"python3 examples/tiny_lm/train.py {flags}",
                "workdir": str(ROOT),
                "outputs": ["outputs/*"],
                "tags": [tag],
                "resources": {"mem_gb": 0.5, "walltime_min": 5},
            }
        )
        training[model] = services.runs.submit(spec, principal=principal).id
    settle(services, list(training.values()), cycles=True)  # the cycle harvests model.json as an artifact
    artifacts = {}
    for model, run_id in training.items():
        outputs = {a.path: a.sha256 for a in services.lineage.store.artifacts(run_id)}
        assert "outputs/model.json" in outputs, (model, services.runs.store.get_run(run_id).latest)
        artifacts[model] = outputs["outputs/model.json"]
    trained_s = time.monotonic() - started
    plan = {
        "strong": ("v1", ArtifactChoice(sha256=artifacts["strong"])),
        "weak": ("v1", ArtifactChoice(run_id=training["weak"], path="outputs/model.json")),
        "strong-v2": ("v2", ArtifactChoice(sha256=artifacts["strong"])),
        "bad-format": ("v1", ArtifactChoice(sha256=artifacts["weak"])),
        "bad-duplicate": ("native", ArtifactChoice(sha256=artifacts["weak"])),
    }
    evals = {
        label: services.evals.start(suites[suite].ref, choice, principal=principal).eval_run
        for label, (suite, choice) in plan.items()
    }
    settle(services, [e.run_id for e in evals.values()], cycles=False)  # ended, not harvested yet
    run_dir = {label: services.runs.store.get_run(e.run_id).run_dir for label, e in evals.items()}
    spoil(run_dir["bad-format"], "results.json", lambda _: b'{"results": {"tiny_lm_spelling": {}}}\n')
    spoil(run_dir["bad-duplicate"], "native.jsonl", _duplicate_first_sample)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        cycle(services)
        settled = {label: services.evals.store.eval_run(e.id) for label, e in evals.items()}
        if all(e.status != "pending" for e in settled.values()):
            break
        time.sleep(0.5)
    results = {label: e.result_id for label, e in settled.items() if e.result_id}
    return World(
        tag=tag,
        dataset=dataset,
        suites=suites,
        training=training,
        artifacts=artifacts,
        evals=settled,
        results=results,
        seconds={"train": trained_s, "all": time.monotonic() - started},
    )
