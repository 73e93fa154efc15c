"""Scenario 5, trace back from delivery: from the released model file alone (its bytes, hashed here),
reach the run, the data versions, the eval reports, the release record and the cost."""

from __future__ import annotations

import hashlib
from pathlib import Path

from gateway.poc import cost
from gateway.poc.checks import Scenario
from gateway.poc.words import money, say
from gateway.poc.world import World


def delivered(world: World) -> Path:
    """The delivered file: a copy of scenario 1's released model, as a customer would hold it."""
    source = Path(world.shared["strong"]["model_path"])
    target = world.out / "delivered" / "model.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(source.read_bytes())
    return target


def run(world: World, sc: Scenario) -> None:
    """Only the file's sha256 goes to the gateway; every expectation comes from scenario 1's records."""
    shared = world.shared
    file = delivered(world)
    sha = hashlib.sha256(file.read_bytes()).hexdigest()
    sc.made("artifact", sha)
    world.shared["delivered_sha"] = sha
    sc.did(f"Hashed the delivered file {file.name} (sha256 {sha}) and asked the gateway what it knows of it.")
    traced = world.client.trace_artifact(sha)
    # the same bytes may have other writers (the example trains deterministically): the trace is scoped to
    # this POC's own project, so another POC's or person's run with the same model is not counted here
    runs = {
        a["run"]["id"]: a["run"]
        for a in traced.get("artifacts", [])
        if a.get("run") and a["run"].get("project") == world.project
    }
    others = sorted({a["run"]["id"] for a in traced.get("artifacts", []) if a.get("run")} - set(runs))
    sc.check(
        "file -> run",
        shared["strong"]["id"] in runs,
        f"run {shared['strong']['id']} among this POC's runs that wrote it",
        f"this POC's runs: {', '.join(sorted(runs)) or 'none'}"
        + (f" ({len(others)} run(s) of other projects wrote the same bytes)" if others else ""),
    )
    ours = runs[shared["strong"]["id"]]
    digests = [d["version"]["digest"] for d in ours.get("datasets", []) if d.get("version")]
    sc.check(
        "file -> data version",
        shared["dataset"]["digest"] in digests,
        shared["dataset"]["digest"],
        ", ".join(digests) or "no dataset version",
    )
    sc.check(
        "file -> script and environment",
        bool(ours.get("script_sha256")),
        "the rendered script's sha256 on record",
        f"script sha256 {ours.get('script_sha256')}, environment {say(ours.get('environment'))}",
    )
    evals = world.call("GET", f"/lineage/artifacts/{sha}/evals")
    ours_evals = [e for e in evals.get("eval_runs", []) if e.get("project") in (None, world.project)]
    results = {e["result"]["id"] for e in ours_evals if e.get("result")}
    sc.check(
        "file -> eval report",
        shared["strong_result"] in results,
        shared["strong_result"],
        ", ".join(sorted(results)) or "no result",
    )
    # the gates decided on this file's results (a gate that used it as a baseline is another file's)
    gates = {
        g["id"]: g["verdict"]
        for g in evals.get("gates", [])
        if g.get("project") in (None, world.project) and g.get("candidate_id") in results
    }
    sc.check(
        "file -> gate decision",
        gates.get(shared["gate"]["id"]) == "pass",
        f"gate {shared['gate']['id']} pass",
        ", ".join(f"{g} {v}" for g, v in gates.items()) or "no gate",
    )
    releases = world.call("GET", f"/lineage/artifacts/{sha}/releases")
    refs = [r["ref"] for r in releases.get("releases", []) if r["ref"].startswith(f"{world.project}/")]
    sc.check(
        "file -> release record",
        shared["release"]["ref"] in refs,
        shared["release"]["ref"],
        ", ".join(refs) or "no release",
    )
    # the release record it names, with every alias move to or from it (an alias may have moved on since)
    ref = next((r for r in refs if r == shared["release"]["ref"]), refs[0] if refs else "")
    name, version = ref.rsplit("@", 1)
    record = world.call("GET", f"/models/{name}/releases/{version}")
    moves = [
        {k: m.get(k) for k in ("alias", "to_version", "gate_id", "override")}
        for m in record.get("alias_events", [])
        if m.get("to_version") == record["version"]
    ]
    sc.check(
        "release record -> its gate",
        # the gate a protected alias counted: the gateway's own, decided at scenario 1's move
        any(m.get("gate_id") == shared.get("move_gate_id") for m in moves if m.get("gate_id")),
        f"an alias move with gate_id {shared.get('move_gate_id')}",
        "; ".join(
            f"{m['alias']} -> v{m['to_version']} with gate {m.get('gate_id') or 'none'}"
            + (" (override)" if m.get("override") else "")
            for m in moves
        )
        or "no alias move to it",
    )
    priced = cost.run_cost(world, sc, shared["strong"]["id"], "file -> cost of its run", failed=False)
    dataset = shared["dataset"]
    spent = f", cost {money(priced.get('total'), priced.get('currency'))}" if priced else ""
    sc.showed(
        "the trace from the model file back to the data",
        f"file sha256 {sha[:12]} -> run {ours.get('name')} ({ours['id']}, script sha256 "
        f"{str(ours.get('script_sha256'))[:12]}{spent}) -> "
        f"data {dataset.get('dataset')}@{dataset.get('version')} "
        f"(digest {str(dataset.get('digest'))[:12]}); eval result {shared['strong_result']} -> gate "
        f"{shared['gate']['id']} {gates.get(shared['gate']['id'])} -> release {ref} -> "
        + ("; ".join(f"{m['alias']} (gate {m.get('gate_id')})" for m in moves) or "no alias"),
    )
