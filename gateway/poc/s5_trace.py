"""Scenario 5, trace back from delivery: from the released model file alone (its bytes, hashed here),
reach the run, the data versions, the eval reports, the release record and the cost."""

from __future__ import annotations

import hashlib
from pathlib import Path

from gateway.poc import cost
from gateway.poc.checks import Scenario
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
    traced = world.client.trace_artifact(sha)
    runs = {a["run"]["id"]: a["run"] for a in traced.get("artifacts", []) if a.get("run")}
    sc.check("file -> run", shared["strong"]["id"] in runs, f"run {shared['strong']['id']}", sorted(runs))
    ours = runs[shared["strong"]["id"]]
    digests = [d["version"]["digest"] for d in ours.get("datasets", []) if d.get("version")]
    sc.check(
        "file -> data version", shared["dataset"]["digest"] in digests, shared["dataset"]["digest"], digests
    )
    sc.check(
        "file -> script and environment",
        bool(ours.get("script_sha256") or repr(ours).count("script")),
        "the rendered script on record",
        sorted(ours),
    )
    evals = world.call("GET", f"/lineage/artifacts/{sha}/evals")
    results = {e["result"]["id"] for e in evals.get("eval_runs", []) if e.get("result")}
    sc.check(
        "file -> eval report", shared["strong_result"] in results, shared["strong_result"], sorted(results)
    )
    gates = {g["id"]: g["verdict"] for g in evals.get("gates", [])}
    sc.check(
        "file -> gate decision",
        gates.get(shared["gate"]["id"]) == "pass",
        f"gate {shared['gate']['id']} pass",
        gates,
    )
    releases = world.call("GET", f"/lineage/artifacts/{sha}/releases")
    refs = [r["ref"] for r in releases.get("releases", [])]
    sc.check("file -> release record", shared["release"]["ref"] in refs, shared["release"]["ref"], refs)
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
        moves,
    )
    cost.run_cost(world, sc, shared["strong"]["id"], "file -> cost of its run", failed=False)
