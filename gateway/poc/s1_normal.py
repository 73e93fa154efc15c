"""Scenario 1, a normal run: register a dataset version, train the example on it, evaluate the model
with the suite, release it; then check that every record points at the others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gateway.poc.checks import Scenario
from gateway.poc.words import say
from gateway.poc.world import World, env_name

STRONG = "--order 4 --epochs 3"  # examples/tiny_lm: the model scenario 4's weaker one is compared with
SUITE_FILE = Path("eval") / "suites" / "tiny_lm.yaml"


def suite_definition(world: World, dataset: str) -> dict[str, Any]:
    """The example suite (eval/suites/tiny_lm.yaml) for the POC project, its prompt inline, its data ours."""
    path = world.site.code_root / SUITE_FILE
    data = yaml.safe_load(path.read_text())
    data["prompt_template"] = (path.parents[1] / data.pop("prompt_template_file")).read_text()
    data.update(project=world.project, name="cloze", datasets=[f"{dataset}@latest"], queue="cpu")
    return data


def train(world: World, sc: Scenario, name: str, flags: str, dataset: str) -> dict[str, Any]:
    """Submit a tiny_lm training run on ``dataset`` (latest), wait for it and its model; the ended run
    with ``sha256`` (of outputs/model.json) added."""
    command = f'python3 examples/tiny_lm/train.py {flags} --data "${env_name(dataset)}"'
    spec = world.spec(name, command, datasets=[f"{dataset}@latest"], outputs=["outputs/*"])
    run = world.submit(spec)
    sc.made("run", run["id"])
    ended = world.wait_run(run["id"], step=f"{name}: the training run ends")
    sc.check(f"{name}: training succeeds", ended["state"] == "succeeded", "state succeeded", ended["state"])
    model = world.artifacts(run["id"]).get("outputs/model.json")
    sc.check(
        f"{name}: model harvested",
        model is not None,
        "outputs/model.json recorded as an artifact",
        model and f"{model['path']}, {model['size']} bytes, sha256 {model['sha256']}",
    )
    assert model is not None  # the fatal check above raised otherwise
    sc.made("artifact", model["sha256"])
    sc.did(
        f"Trained {name} ({run['id']}, `{flags}`) on {dataset}@latest; it wrote outputs/model.json "
        f"(sha256 {model['sha256'][:12]})."
    )
    return {**ended, "sha256": model["sha256"], "model_path": model["abs_path"]}


def evaluate(world: World, sc: Scenario, suite_ref: str, run_id: str, label: str) -> dict[str, Any]:
    """Run the suite on the run's model (by run and path: the same bytes may have other writers), wait
    until its result is ingested; the eval run."""
    body = {"suite": suite_ref, "run_id": run_id, "artifact_path": "outputs/model.json"}
    started = world.call("POST", "/eval/runs", body=body)
    sc.made("eval_run", started["id"])
    sc.made("run", started["run_id"])
    done = world.wait_until(
        lambda: e if (e := world.call("GET", f"/eval/runs/{started['id']}"))["status"] != "pending" else None,
        f"{label}: eval run settles",
        "the eval run ingested",
        lambda: world.call("GET", f"/eval/runs/{started['id']}")["status"],
    )
    sc.check(
        f"{label}: eval ingested",
        done["status"] == "ingested",
        "status ingested",
        f"status {done['status']}" + (f" ({done['note']})" if done.get("note") else ""),
    )
    sc.made("eval_result", done["result_id"])
    sc.did(
        f"Evaluated {label}'s model with {suite_ref} as eval job {done['id']}: result {done['result_id']}."
    )
    return done


def run(world: World, sc: Scenario) -> None:
    """The scenario; leaves the strong model, its result and its release in ``world.shared``."""
    _data_and_suite(world, sc)
    _train_and_gate(world, sc)
    _release(world, sc)


def _data_and_suite(world: World, sc: Scenario) -> None:
    """The two dataset versions (text, cloze) and the suite on the cloze data."""
    code = world.workdir / "code" / "examples" / "tiny_lm"
    version = world.register("text", world.copy_data("text", code / "data"), description="tiny_lm text")
    sc.check(
        "register dataset version",
        version.get("digest", "").startswith("sha256:") or bool(version.get("digest")),
        "a version with a digest",
        f"{version.get('dataset')} version {version.get('version')} ({version.get('id')}), "
        f"{version.get('file_count')} file(s), digest {version.get('digest')}",
    )
    sc.made("dataset_version", f"{world.project}/text@{version['version']}")
    cloze = world.register("cloze", world.copy_data("cloze", code / "eval_data"), description="tiny_lm cloze")
    sc.made("dataset_version", f"{world.project}/cloze@{cloze['version']}")
    suite = world.call("POST", "/eval/suites", body=suite_definition(world, "cloze"))
    sc.made("suite_version", suite["ref"])
    # the poc acts as one person, who reviews results of runs they submitted: its suite says so
    world.call("PUT", f"/eval/suites/{world.project}/cloze/settings", body={"count_self_reviews": True})
    world.shared.update(suite=suite, dataset=version)
    sc.did(
        f"Registered dataset versions text@{version['version']} (digest {version['digest'][:12]}) and "
        f"cloze@{cloze['version']}, and the suite {suite['ref']} on the cloze data."
    )


def _train_and_gate(world: World, sc: Scenario) -> None:
    """Train on the text version, evaluate, review and gate."""
    version, suite = world.shared["dataset"], world.shared["suite"]
    trained = train(world, sc, "train-strong", STRONG, "text")
    world.shared["strong"] = trained
    lineage = world.client.trace_run(trained["id"])
    digests = [d.get("version", {}).get("digest") for d in lineage.get("datasets", []) if d.get("version")]
    sc.check(
        "run -> dataset version",
        version["digest"] in digests,
        f"the run's lineage lists {version['digest']}",
        digests,
    )

    evaluated = evaluate(world, sc, suite["ref"], trained["id"], "strong")
    result = world.shared["strong_result"] = evaluated["result_id"]
    world.call(
        "POST",
        "/eval/reviews",
        body={"target": result, "verdict": "approve", "notes": "gw poc: read the endings"},
    )
    gate = world.call("POST", f"/eval/results/{result}/gate", body={"baseline": None})
    sc.made("gate", gate["id"])
    world.shared["gate"] = gate
    sc.check(
        "gate passes",
        gate["verdict"] == "pass",
        "verdict pass",
        f"verdict {gate['verdict']}; " + (_thresholds(gate) or "no threshold"),
    )
    sc.showed("the gate's decision", f"{gate['verdict']}: {_thresholds(gate)}; {_notes(gate)}")
    traced = world.client.trace_eval_result(result)
    sc.check(
        "eval result -> training run",
        trained["id"] in repr(traced),
        f"the result's lineage names {trained['id']}",
        f"lineage of {result} names {', '.join(_run_ids(traced)) or 'no run'}",
    )


def _release(world: World, sc: Scenario) -> None:
    """The model, its staging policy (the suite's gate), the release and its promotion; the links."""
    trained, gate, version = world.shared["strong"], world.shared["gate"], world.shared["dataset"]
    result = world.shared["strong_result"]
    model = f"{world.project}/tiny-lm"
    world.call("POST", "/models", body={"project": world.project, "name": "tiny-lm", "description": "gw poc"})
    policy = {"roles": ["lead"], "approvals": 0, "gate_suite": f"{world.project}/cloze"}
    world.call("PUT", f"/models/{model}/policies/staging", body=policy)
    release = world.call(
        "POST",
        f"/models/{model}/releases",
        body={"artifact_sha256": trained["sha256"], "run_id": trained["id"], "notes": "gw poc scenario 1"},
    )
    sc.made("release", release["ref"])
    world.shared.update(model=model, release=release)
    sc.check(
        "release -> run", release["run_id"] == trained["id"], f"run_id {trained['id']}", release["run_id"]
    )
    moved = world.call(
        "POST",
        f"/models/{model}/aliases/staging",
        body={"version": release["version"], "reason": "gw poc: gate passed"},
    )
    # the gate a protected alias counts is the gateway's own, decided at the move on the policy's terms
    counted = world.call("GET", f"/eval/gates/{moved.get('gate_id')}") if moved.get("gate_id") else {}
    world.shared["move_gate_id"] = moved.get("gate_id")  # scenario 5 finds it from the model file
    sc.check(
        "promotion records the gate",
        counted.get("verdict") == "pass"
        and counted.get("candidate_id") == gate["candidate_id"]
        and (counted.get("made_for") or {}).get("alias") == "staging"
        and not moved.get("override"),
        "the gateway's passing gate for staging on the release's result, no override",
        f"gate {moved.get('gate_id')} {counted.get('verdict')} on {counted.get('candidate_id')}, made for "
        f"{(counted.get('made_for') or {}).get('alias')}; override {say(moved.get('override'))}",
    )
    sc.did(
        f"Released the model as {release['ref']} and moved staging to it: the staging policy asks for a "
        f"passing gate of {world.project}/cloze, and the gateway decided gate {moved.get('gate_id')} "
        "at the move."
    )
    detail = world.call("GET", f"/models/{model}/releases/{release['version']}")
    snap = repr(detail.get("snapshot"))
    sc.check(
        "release record -> eval result",
        result in snap,
        f"the release's snapshot names {result}",
        _snapshot(detail.get("snapshot"), result),
    )
    sc.check(
        "release record -> dataset digest",
        version["digest"] in snap,
        f"the release's snapshot names {version['digest']}",
        _snapshot(detail.get("snapshot"), version["digest"]),
    )


def _thresholds(gate: dict[str, Any]) -> str:
    """The gate's threshold checks in words: ``task metric value op bound (pass)``."""
    return "; ".join(
        f"{t['task']} {t['metric']} {t['value']:.4g} {t['op']} {t['bound']} "
        f"({'pass' if t['passed'] else 'fail'})"
        for t in gate["decision"].get("thresholds", [])
    )


def _notes(gate: dict[str, Any]) -> str:
    return "; ".join(gate["decision"].get("reasons", []) + gate["decision"].get("notes", []))


def _run_ids(traced: Any) -> list[str]:
    """The run ids a lineage answer names (wherever they sit in it)."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and value.startswith("r-") and value not in found:
            found.append(value)

    walk(traced)
    return found


def _snapshot(snapshot: Any, wanted: str) -> str:
    """Whether the release's snapshot names ``wanted``, with the run and results it names."""
    if not isinstance(snapshot, dict):
        return "no snapshot"
    run = snapshot.get("run") or {}
    named = "names" if wanted in repr(snapshot) else "does not name"
    return f"snapshot of run {run.get('id')} ({run.get('name')}) {named} {wanted}"
