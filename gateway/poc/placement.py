"""Which Slurm cluster each of the POC's queues goes on, and whether those clusters answer.

A site that lists several clusters (docs/clusters.md) gives each queue one
cluster's partition. The POC's site file may put its cpu and its gpu queue on
clusters of its choice (``cpu_cluster``, ``gpu_cluster``), and may bring the
gateway site file entries of clusters the gateway does not list yet
(``clusters``): those are added for the run and the site's own list restored at
its end (``World.teardown``). Before the POC's project is made, every cluster a
queue goes on must be listed and must answer the gateway's health check; a
missing one fails the set-up naming it, with nothing of the POC's left behind.
"""

from __future__ import annotations

from typing import Any, Protocol

from gateway.client.api import ApiError
from gateway.poc.checks import StepFailed


class World(Protocol):
    """What placement reads of ``gateway.poc.world.World`` (named here: world imports this module)."""

    placed: dict[str, str | None]
    clusters: list[dict[str, Any]]
    client: Any

    def call(self, method: str, path: str, body: Any = None, params: dict | None = None) -> Any:
        """The gateway's answer to one API call."""
        ...

    def run(self, run_id: str) -> dict[str, Any]:
        """The run's view."""
        ...


OFF_HINT = (
    "on the local set-up the second cluster gwlocal2 is off where the playbook ran with "
    "slurm_second_cluster: false (docs/cluster.md); a POC site file that names no cluster, such as "
    "examples/poc-site.yaml, runs on one cluster (docs/poc.md)"
)


def merged(
    now: list[dict[str, Any]], brought: list[dict[str, Any]], placed: dict[str, str | None]
) -> list[dict[str, Any]]:
    """The clusters for the run: the gateway's own (``now``, in order: the first stays the default),
    then those the POC's site file brings that the gateway lacks; on a site that lists none, the POC's
    file's list as it is. StepFailed when a queue goes on a cluster neither lists."""
    names = {c["name"] for c in now}
    clusters = [*now, *(c for c in brought if c["name"] not in names)] if now else list(brought)
    known = [c["name"] for c in clusters]
    for queue, cluster in placed.items():
        if cluster is not None and cluster not in known:
            raise StepFailed(
                "setup: the POC's clusters",
                f"cluster {cluster} (the POC's {queue} queue goes on it) listed in the gateway's site "
                "file or in the POC site file's clusters",
                f"the gateway lists {', '.join(c['name'] for c in now) or 'no cluster (it has one)'}; "
                f"the POC site file brings {', '.join(c['name'] for c in brought) or 'none'}",
            )
    return clusters


def answering(world: World, placed: dict[str, str | None]) -> None:
    """Each cluster a POC queue goes on answers the gateway's health check (``GET /healthz``, one
    partition listing per listed cluster). StepFailed naming the one that does not, with what the
    gateway saw."""
    wanted = {c: q for q, c in placed.items() if c is not None}
    if not wanted:
        return
    try:
        health = world.call("GET", "/healthz")
    except ApiError as exc:  # 503: the database or every cluster is down
        health = exc.body if isinstance(exc.body, dict) else {"error": str(exc)}
    checks = health.get("clusters") or {}
    for cluster, queue in wanted.items():
        check = checks.get(cluster)
        if check and check.get("ok"):
            continue
        seen = (check or {}).get("error") or health.get("error") or "no check of it in GET /healthz"
        raise StepFailed(
            f"setup: cluster {cluster} answers",
            f"cluster {cluster} answering (the POC's {queue} queue goes on it)",
            f"cluster {cluster} does not answer: {seen}. ({OFF_HINT})",
        )


def run_clusters(world: World, run_ids: list[str]) -> dict[str, str | None]:
    """Each run's cluster (its latest attempt's, as ``GET /runs/{id}`` names it; None: the one cluster
    of a site that lists none, or a run with no attempt)."""
    return {run_id: world.run(run_id).get("cluster") for run_id in run_ids}


def cluster_of(world: World, queue: str) -> str | None:
    """The cluster of the POC's ``queue``: where it was placed, else the first the site lists (None on a
    site that lists none)."""
    return world.placed.get(queue) or (world.clusters[0]["name"] if world.clusters else None)


def partition_view(world: World, queue: str, partition: str) -> dict[str, Any]:
    """The admin's queue view (``GET /queue``, of the queue's cluster alone on a site that lists
    clusters) of ``partition``; StepFailed when it does not list it (a cluster that did not answer names
    its error)."""
    cluster = cluster_of(world, queue)
    view = world.client.queue(cluster=cluster)
    for part in view["partitions"]:
        if part["name"] == partition and part.get("cluster") in (None, cluster):
            return {**part, "projects": view["projects"]}
    errors = "; ".join(p["error"] for p in view["partitions"] if p.get("error"))
    raise StepFailed(
        f"the admin's queue view of {queue}",
        f"partition {partition}" + (f" of cluster {cluster}" if cluster else ""),
        errors or f"partitions {', '.join(p['name'] for p in view['partitions'])}",
    )
