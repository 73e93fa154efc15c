"""Scenario 2, waiting for resources: one run held by the project's GPU cap, one by busy nodes.

The user sees why each waits, in words and numbers (``GET /runs/{id}``'s
``waiting``); the admin sees the queue and the usage (``GET /queue``,
``GET /projects/{p}/usage``); once each starts, its attempt says how long it
waited for each reason. The busy nodes are the POC's own fillers: one run per
node of the gpu partition asking for all its CPUs (no GPU, so the cap does not
count them), cancelled as soon as the wait has been seen, so the partition is
full for seconds only.
"""

from __future__ import annotations

from typing import Any

from gateway.poc import placement
from gateway.poc.checks import Scenario
from gateway.poc.words import say
from gateway.poc.world import World

QUOTA_CODES = ("AssocGrpGRES", "QOSGrpGRES", "AssocGrpGRESRunMinutes")
BUSY_CODES = ("Resources", "Priority")


def gpu_spec(world: World, name: str, command: str, gpus: int, **resources: Any) -> dict[str, Any]:
    """A run of the POC's gpu queue asking for ``gpus`` GPUs of the site's type."""
    asked = {"gpus_per_node": gpus, "mem_gb": 0.1, "walltime_min": 5, **resources}
    if gpus and world.gpu_type:
        asked["gpu_type"] = world.gpu_type
    return world.spec(name, command, queue="gpu", resources=asked)


def waiting_with(world: World, run_id: str, codes: tuple[str, ...], step: str) -> dict[str, Any]:
    """Poll until the run waits with one of ``codes``; the run."""
    return world.wait_until(
        lambda: r if (r := world.run(run_id)).get("waiting") and r["waiting"]["code"] in codes else None,
        step,
        f"run {run_id} waiting with one of {', '.join(codes)}",
        lambda: say(world.run(run_id).get("waiting") or world.run(run_id)["state"]),
    )


ON_RECORD_S = 3.0  # how long a wait is on record before the POC frees what blocks it


def recorded(world: World, run_id: str, codes: tuple[str, ...], step: str) -> dict[str, float]:
    """Poll until the run's attempt has at least ``ON_RECORD_S`` on record for one of ``codes`` (the
    gateway records a reason at a refresh: a wait shorter than one refresh would leave none); its waits.

    While it waits the stretch runs to now; once it starts it ends at Slurm's start time, which has whole
    seconds: a start within a second of the reason's record would leave 0 s (seen under load)."""

    def probe() -> dict[str, float] | None:
        waits = waited(world.run(run_id))
        return waits if any(r in codes and s >= ON_RECORD_S for r, s in waits.items()) else None

    return world.wait_until(
        probe,
        step,
        f"seconds waited for one of {', '.join(codes)} in the attempt's waits",
        lambda: _waits(waited(world.run(run_id))),
    )


def waited(run: dict[str, Any]) -> dict[str, float]:
    """Seconds the run's latest attempt waited, per reason."""
    return {w["reason"]: w["seconds"] for w in run["attempts"][-1]["waits"]}


def cap(world: World, sc: Scenario) -> None:
    """A second GPU run over the project's cap waits, says so with the numbers, and starts after."""
    limit = world.site.gpu_cap
    holder = world.submit(gpu_spec(world, "holds-the-cap", "sleep 300", limit))
    sc.made("run", holder["id"])
    world.wait_run(holder["id"], {"running"}, step="cap: the first GPU run starts")
    blocked = world.submit(gpu_spec(world, "over-the-cap", "echo started after the cap freed", 1))
    sc.made("run", blocked["id"])
    world.shared["cap_run"] = blocked["id"]
    sc.did(
        f"Started {holder['id']} holding the project's GPU cap ({limit} GPU(s)), then submitted "
        f"{blocked['id']} asking for one more GPU."
    )
    seen = waiting_with(world, blocked["id"], QUOTA_CODES, "cap: the second run waits for the project's cap")
    why = seen["waiting"]
    words = " ".join([why["summary"], *why["details"]])
    sc.showed(f"why {blocked['id']} waits (Slurm's {why['code']})", _explained(why))
    sc.check(
        "cap: explained in words",
        why["category"] == "quota" and bool(why["actions"]),
        "category quota with actions",
        f"category {why['category']}; actions: {' / '.join(why['actions'])}",
    )
    sc.check(
        "cap: explained in numbers",
        f"{limit} of {limit}" in why["summary"],
        f"'{limit} of {limit}' in the summary",
        why["summary"],
    )
    blocking = why.get("blocking") or {}
    sc.check(
        "cap: the blocking cap",
        blocking.get("cap") == limit and blocking.get("used") == limit,
        f"blocking used {limit}, cap {limit}",
        f"{blocking.get('scope')}: {blocking.get('resource')} used {blocking.get('used')}, "
        f"cap {blocking.get('cap')}",
    )
    sc.check(
        "cap: names the job that holds it",
        str(holder.get("job_id") or world.run(holder["id"])["job_id"]) in words,
        "the holder's job id in the explanation",
        words,
    )
    usage = world.client.usage(world.project, cluster=placement.cluster_of(world, "gpu"))
    sc.check(
        "cap: usage view",
        usage["gpus"] == {"used": limit, "cap": limit},
        f"gpus used {limit} of cap {limit}",
        f"gpus used {say(usage['gpus'].get('used'))} of cap {say(usage['gpus'].get('cap'))}",
    )
    sc.check(
        "cap: usage lists the running GPU job",
        world.run(holder["id"])["job_id"] in usage["running_gpu_jobs"],
        "the holder's job in running_gpu_jobs",
        f"running GPU jobs: {say(usage['running_gpu_jobs'])}",
    )
    recorded(world, blocked["id"], QUOTA_CODES, "cap: the wait is on record while it waits")
    world.client.cancel(holder["id"])
    ended = world.wait_run(blocked["id"], step="cap: the second run ends once the cap frees")
    sc.check("cap: starts and succeeds", ended["state"] == "succeeded", "state succeeded", ended["state"])
    waits = waited(ended)
    quota_s = sum(s for r, s in waits.items() if r in QUOTA_CODES)
    sc.check("cap: time waited per reason", quota_s > 0, "seconds waited for the cap > 0", _waits(waits))
    sc.did(f"Cancelled {holder['id']}; {blocked['id']} started and succeeded after waiting {_waits(waits)}.")


def busy(world: World, sc: Scenario) -> None:
    """A GPU run behind nodes the POC's fillers keep busy waits for Resources, then starts."""
    partition = placement.partition_view(world, "gpu", _gpu_partition(world))
    fillers = _fill_nodes(world, sc, partition)
    blocked = world.submit(gpu_spec(world, "behind-busy-nodes", "echo started after the nodes freed", 1))
    sc.made("run", blocked["id"])
    on = placement.cluster_of(world, "gpu")
    where = f" of cluster {on}" if on else ""
    sc.did(
        f"Filled every node of the gpu partition{where} with runs asking for all its CPUs "
        f"({', '.join(fillers)}), "
        f"then submitted {blocked['id']} asking for one GPU."
    )
    try:
        seen = waiting_with(world, blocked["id"], BUSY_CODES, "busy: the run waits for busy nodes")
        why = seen["waiting"]
        sc.showed(f"why {blocked['id']} waits (Slurm's {why['code']})", _explained(why))
        sc.check(
            "busy: explained in words",
            why["category"] in ("resources", "priority"),
            "category resources (or priority)",
            f"category {why['category']}: {why['summary']}",
        )
        _explained_busy(sc, why, partition)
        _admin_sees_busy(world, sc, blocked["id"], fillers, partition["name"], on)
        recorded(world, blocked["id"], BUSY_CODES, "busy: the wait is on record while it waits")
    finally:
        for filler in fillers:
            world.client.cancel(filler)
    ended = world.wait_run(blocked["id"], step="busy: the run ends once the nodes free")
    sc.check("busy: starts and succeeds", ended["state"] == "succeeded", "state succeeded", ended["state"])
    waits = waited(ended)
    busy_s = sum(s for r, s in waits.items() if r in BUSY_CODES)
    sc.check("busy: time waited per reason", busy_s > 0, "seconds waited for Resources > 0", _waits(waits))
    sc.did(f"Cancelled the fillers; {blocked['id']} started and succeeded after waiting {_waits(waits)}.")
    world.shared["busy_run"] = blocked["id"]


def _fill_nodes(world: World, sc: Scenario, partition: dict[str, Any]) -> list[str]:
    """One filler run per node of ``partition``, asking for all its CPUs and no GPU; once all run,
    their ids."""
    fillers = []
    for node in partition["nodes"]:
        filler = world.submit(
            gpu_spec(world, f"fills-{node['name']}", "sleep 300", 0, cpus_per_task=node["cpus"])
        )
        fillers.append(filler["id"])
    sc.made("run", *fillers)
    for filler in fillers:
        world.wait_run(filler, {"running"}, step="busy: the fillers start")
    return fillers


def _admin_sees_busy(
    world: World, sc: Scenario, blocked_id: str, fillers: list[str], partition_name: str, on: str | None
) -> None:
    """The admin's queue view of the partition: the blocked run pending, every node full, the
    fillers running, and the project's usage."""
    gpu = placement.partition_view(world, "gpu", partition_name)
    pending = {j["run_id"] for j in gpu["pending"]}
    sc.check(
        "busy: admin's queue lists it pending",
        blocked_id in pending,
        f"{blocked_id} among the partition's pending jobs",
        sorted(r for r in pending if r),
    )
    not_full = [
        n["name"] for n in gpu["nodes"] if n["alloc_cpus"] < n["cpus"] and n["state"] not in ("down", "drain")
    ]
    sc.check(
        "busy: admin's queue shows the nodes busy",
        not not_full,
        "every node of the partition with all its CPUs allocated",
        _nodes(gpu),
    )
    sc.showed(
        "the admin's queue view",
        f"partition {gpu['name']}{f' on {on}' if on else ''}: "
        + _nodes(gpu)
        + f"; {len(gpu['running'])} running, {len(gpu['pending'])} pending",
    )
    running = {j["run_id"] for j in gpu["running"]}
    sc.check(
        "busy: admin's queue lists the fillers running",
        set(fillers) <= running,
        f"{', '.join(fillers)} running",
        sorted(r for r in running if r),
    )
    ours = [p for p in gpu["projects"] if p["project"] == world.project]
    sc.check(
        "busy: admin's usage per project",
        bool(ours),
        f"project {world.project} in the queue view's usage",
        [p["project"] for p in gpu["projects"]],
    )


def _nodes(partition: dict[str, Any]) -> str:
    """A partition's nodes as the admin's queue view shows them: name, state, allocated/all CPUs."""
    return "; ".join(
        f"{n['name']} {n['state']} {n['alloc_cpus']}/{n['cpus']} CPUs" for n in partition["nodes"]
    )


def _explained_busy(sc: Scenario, why: dict[str, Any], partition: dict[str, Any]) -> None:
    """Resources: the explanation names every node of the partition with what it has free. Priority
    (another job waits ahead, as on a shared cluster): it names the partition."""
    words = " ".join([why["summary"], *why["details"]])
    if why["code"] == "Resources":
        names = [n["name"] for n in partition["nodes"]]
        sc.check(
            "busy: names the nodes and their state",
            all(n in words for n in names) and "free" in words,
            f"nodes {', '.join(names)} and what they have free in the explanation",
            words,
        )
    else:
        sc.check(
            "busy: names the partition it waits in",
            partition["name"] in words,
            f"partition {partition['name']} in the explanation",
            words,
        )


def _explained(why: dict[str, Any]) -> str:
    """The gateway's explanation of a wait, as it says it: summary, details, what to do."""
    parts = [why["summary"], *why.get("details", [])]
    if why.get("actions"):
        parts.append("What to do: " + " / ".join(why["actions"]))
    return " ".join(parts)


def _waits(waits: dict[str, float]) -> str:
    """Seconds waited per reason, in words (``none`` is the time before Slurm gave a reason)."""
    return (
        ", ".join(f"{s:.1f} s for {'no reason yet' if r == 'none' else r}" for r, s in waits.items()) or "0 s"
    )


def _gpu_partition(world: World) -> str:
    project = world.call("GET", f"/projects/{world.project}")
    return next(q["partition"] for q in project["queues"] if q["name"] == "gpu")


def run(world: World, sc: Scenario) -> None:
    """Both waits, one after the other."""
    cap(world, sc)
    busy(world, sc)
