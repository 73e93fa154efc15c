"""The POC's own corner of a live gateway: its project, its files, and waiting on its runs.

Everything goes through the gateway's HTTP API with the CLI's client. The
project (``<prefix>-<8 hex>``) is made by a site apply through the admin API
(``POST /admin/site``, nothing pruned) from the queues of the site file's
project, with the POC's user as its lead and a GPU cap for scenario 2; the
clean-up cancels the project's runs that still go and removes the project
(and so its Slurm account) by a pruning apply of the current site less it.
Runs, datasets, evaluations and releases stay on record, as every record does.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from gateway.client.api import ApiError, GatewayClient
from gateway.core.slurm import states
from gateway.poc import placement
from gateway.poc.checks import StepFailed
from gateway.poc.site import PocSite

T = TypeVar("T")
TERMINAL = frozenset(s.value for s in states.TERMINAL)  # as the API writes them


class World:
    """The POC's namespace on one gateway (``setup`` makes it, ``teardown`` removes it)."""

    def __init__(self, client: GatewayClient, site: PocSite, out: Path) -> None:
        self.client, self.site, self.out = client, site, out
        self.tag = uuid.uuid4().hex[:8]
        self.project = f"{site.prefix}-{self.tag}"
        self.workdir = Path(site.workdir) / self.project if site.workdir else out / "work"
        self.user = ""
        self.gpu_type = site.gpu_type
        self.made_project = False
        self.placed: dict[str, str | None] = {}  # the POC's queue (cpu, gpu) -> its cluster (None: the one)
        self.clusters: list[dict[str, Any]] = []  # the gateway's clusters during the run (site entries)
        self.clusters_before: list[dict[str, Any]] | None = None  # the site's own, when the POC added some
        self.started_at = datetime.now(UTC)
        self.shared: dict[str, Any] = {}  # what a scenario leaves for the next (run ids, sha256s, refs)

    # -- HTTP ----------------------------------------------------------------------------

    def call(self, method: str, path: str, body: Any = None, params: dict | None = None) -> Any:
        """One API request; its JSON answer. ApiError when the gateway refuses."""
        return self.client.request(method, path, body=body, params=params)

    # -- the namespace -------------------------------------------------------------------

    def setup(self) -> dict[str, Any]:
        """Make the POC's project from the site file's project's queues; returns the new project.

        StepFailed when the base project lacks a cpu or a gpu queue, or the caller is no site admin.
        """
        tokens = self.call("GET", "/tokens")
        self.user = tokens[0]["user"] if tokens else ""
        base = self.call("GET", f"/projects/{self.site.project}")
        queues = {q["name"]: q for q in base.get("queues", [])}
        for wanted in (self.site.cpu_queue, self.site.gpu_queue):
            if wanted not in queues:
                raise StepFailed(
                    "setup: the site's queues",
                    f"project {self.site.project} with queues {self.site.cpu_queue}, {self.site.gpu_queue}",
                    f"queues {', '.join(sorted(queues))}",
                )
        gpu = queues[self.site.gpu_queue]
        self.gpu_type = self.gpu_type or (gpu.get("gpu_types") or [None])[0]
        exported = self.client.export_site()
        me = [u for u in exported["users"] if u["name"] == self.user]  # members must be users of the file
        site_base = {"allow_root_mapping": exported["allow_root_mapping"], "users": me}
        self._place_queues(site_base, exported, queues)
        project = {
            "name": self.project,
            "description": f"gw poc run {self.tag} (removed at its end)",
            "slurm_account": self.project,
            "quota": {"gpus": self.site.gpu_cap},
            "members": [{"user": self.user, "role": "lead"}],
            "queues": [
                _queue("cpu", queues[self.site.cpu_queue], self.placed["cpu"], retry={"backoff_s": 1}),
                _queue("gpu", gpu, self.placed["gpu"]),
            ],
        }
        config = {**site_base, "clusters": self.clusters, "projects": [project]}
        rates = self.site.cost.rate_table(self.site.base)
        if rates is not None:  # the site's rate table, applied with the project (docs/poc.md)
            config["accounting"] = rates
        self.made_project = True  # even if the answer is lost on the way: the teardown then removes it
        self.client.apply_site(config, dry_run=False, sync_slurm=True)
        self._copy_code()
        return self.call("GET", f"/projects/{self.project}")

    def _place_queues(self, site_base: dict, exported: dict, queues: dict[str, dict[str, Any]]) -> None:
        """Which cluster each of the POC's queues goes on; the clusters the POC's site file adds to the
        gateway's for the run (applied here, before anything else, and restored by ``teardown``); each
        cluster a queue goes on checked to answer. StepFailed naming the cluster that is not listed or
        does not answer."""
        base = {"cpu": queues[self.site.cpu_queue], "gpu": queues[self.site.gpu_queue]}
        wanted = {"cpu": self.site.cpu_cluster, "gpu": self.site.gpu_cluster}
        self.placed = {q: wanted[q] or base[q].get("cluster") for q in ("cpu", "gpu")}
        now = list(exported.get("clusters") or [])
        self.clusters = placement.merged(now, [c.entry() for c in self.site.clusters], self.placed)
        if self.clusters != now:
            self.clusters_before = now
            self.client.apply_site(
                {**site_base, "clusters": self.clusters, "projects": []}, dry_run=False, sync_slurm=False
            )
        placement.answering(self, self.placed)

    def _copy_code(self) -> None:
        """The tiny_lm example and its data, copied where the jobs read them (``workdir``)."""
        source = self.site.code_root / "examples" / "tiny_lm"
        target = self.workdir / "code" / "examples" / "tiny_lm"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "outputs"))

    def teardown(self) -> list[str]:
        """Cancel the project's runs that still go, remove the project, give the site back its own clusters
        (when the POC added some); what was done, one line each."""
        done: list[str] = []
        if self.made_project:
            for run in self._going():
                try:
                    self.call("POST", f"/runs/{run['id']}/cancel")
                    done.append(f"cancelled run {run['id']}")
                except ApiError as exc:
                    done.append(f"could not cancel run {run['id']}: {exc}")
        if self.site.keep:
            kept = f"kept project {self.project} (keep: true)" if self.made_project else None
            if self.clusters_before is not None:
                kept = f"{kept or 'kept'}; kept clusters {', '.join(c['name'] for c in self.clusters)}"
            return [*done, *([kept] if kept else [])]
        if self.made_project:
            self._wait_drained()
            exported = self.client.export_site()
            exported["projects"] = [p for p in exported["projects"] if p["name"] != self.project]
            self.client.apply_site(exported, dry_run=False, sync_slurm=True, prune=True)
            self.made_project = False
            done.append(f"removed project {self.project} and its Slurm account")
        if self.clusters_before is not None:
            exported = self.client.export_site()
            exported["clusters"] = self.clusters_before
            self.client.apply_site(exported, dry_run=False, sync_slurm=False)
            named = ", ".join(c["name"] for c in self.clusters_before) or "none (the one cluster)"
            done.append(f"gave the site back its own clusters: {named}")
            self.clusters_before = None
        return done

    def _wait_drained(self, timeout_s: float = 60) -> None:
        """Wait (bounded) until no run of the project still goes, so that its Slurm account can go."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            left = self._going()
            if not left:
                return
            time.sleep(self.site.poll_s)

    def _going(self) -> list[dict[str, Any]]:
        """The project's runs that have not ended (the newest 500)."""
        page = self.call("GET", "/runs", params={"project": self.project, "limit": 500})
        return [r for r in page.get("items", []) if r["state"] not in TERMINAL]

    # -- runs ----------------------------------------------------------------------------

    def spec(self, name: str, command: str, *, queue: str = "cpu", **fields: Any) -> dict[str, Any]:
        """A run spec of the POC's project, run from its copy of the code, tagged with the POC's tag."""
        resources = {"mem_gb": 0.5, "walltime_min": 5, **fields.pop("resources", {})}
        return {
            "name": name,
            "project": self.project,
            "queue": queue,
            "command": command,
            "workdir": str(self.workdir / "code"),
            "tags": ["poc", self.tag],
            "resources": resources,
            **fields,
        }

    def submit(self, spec: dict[str, Any]) -> dict[str, Any]:
        """``POST /runs``: the new run."""
        return self.client.submit(spec)

    def run(self, run_id: str) -> dict[str, Any]:
        """``GET /runs/{id}``."""
        return self.client.run(run_id)

    def wait_run(
        self, run_id: str, states: frozenset[str] | set[str] = TERMINAL, step: str = ""
    ) -> dict[str, Any]:
        """Poll the run until its state is one of ``states``; StepFailed after ``wait_s``."""
        return self.wait_until(
            lambda: r if (r := self.run(run_id))["state"] in states else None,
            step or f"wait for run {run_id}",
            f"run {run_id} in one of {', '.join(sorted(states))}",
            lambda: f"state {self.run(run_id)['state']}",
        )

    def wait_until(
        self, probe: Callable[[], T | None], step: str, expected: str, seen: Callable[[], str] | None = None
    ) -> T:
        """``probe()`` until it returns something other than None (polled every ``poll_s``); StepFailed
        naming ``step`` after ``wait_s`` seconds, with what ``seen()`` says then."""
        deadline = time.monotonic() + self.site.wait_s
        while True:
            found = probe()
            if found is not None:
                return found
            if time.monotonic() > deadline:
                raise StepFailed(
                    step, expected, (seen() if seen else "nothing") + f" after {self.site.wait_s:.0f} s"
                )
            time.sleep(self.site.poll_s)

    def artifacts(self, run_id: str) -> dict[str, dict[str, Any]]:
        """The run's harvested artifacts by path, once the harvest has recorded any (waits ``wait_s``)."""
        found = self.wait_until(
            lambda: {a["path"]: a for a in self.client.run_outputs(run_id)["artifacts"]} or None,
            f"harvest of run {run_id}",
            "the run's outputs recorded as artifacts",
            lambda: "no artifact recorded",
        )
        return found

    # -- data ----------------------------------------------------------------------------

    def copy_data(self, name: str, source: Path) -> Path:
        """A copy of ``source`` in the work folder (the POC may change it)."""
        target = self.workdir / "data" / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source, target)
        return target

    def register(self, name: str, path: Path, **extra: Any) -> dict[str, Any]:
        """Register ``path``'s current content as a version of dataset ``name`` of the POC's project."""
        from gateway.adapters.files import scan  # reads local files only, as `gw dataset register` does

        found = scan(path)
        body = {
            "files": [e.to_dict() for e in found.entries],
            "kind": found.kind,
            "path": found.root,
            **extra,
        }
        return self.client.register_version(self.project, name, body)


def _queue(
    name: str, queue: dict[str, Any], cluster: str | None, retry: dict | None = None
) -> dict[str, Any]:
    """A queue of the POC's project named ``name`` on the same partition as ``queue``, on ``cluster``
    (None: the site's one cluster, or its first)."""
    made = {"name": name, "partition": queue["partition"]}
    if cluster:
        made["cluster"] = cluster
    for key in ("qos", "gpu_types", "max_walltime_min"):
        if queue.get(key):
            made[key] = queue[key]
    if retry is not None:
        made["retry"] = retry
    return made


def env_name(dataset: str) -> str:
    """The variable a job finds a dataset's path in: ``GW_DATASET_<NAME>``."""
    return "GW_DATASET_" + "".join(c if c.isalnum() else "_" for c in dataset.upper())
