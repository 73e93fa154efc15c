"""The hand-off outbox: what the gateway owes MLflow and the webhook receivers, worked until delivered.

``for_release`` and ``for_move`` give the items a new release or an alias
move makes, which the release and promotion services hand to the store with
the write itself, so the record and its hand-off commit together or not at
all (the outbox pattern): register the version in MLflow and a
``release.created`` event; set the MLflow alias (a protected alias's move)
and an ``alias.moved`` event, one item per webhook endpoint. Enqueuing never
talks to MLflow or a receiver, so it never fails a move on their account.
``process_due`` (the scheduler, every
``handoff_interval_s``, leader only) first enqueues every ended, harvested
run not yet logged to MLflow tracking, then works the due items: each try is
recorded; a failed one is due again after a doubling back-off, and after
``max_attempts`` it is dead until an admin replays it. MLflow down during a
promotion therefore costs nothing but time: the move succeeded, and the mirror
catches up on the first pass after MLflow is back.

``mirror_status`` compares MLflow with the gateway's records and reports
drift (the gateway is the source of truth; nothing is copied back).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from gateway.adapters.handoff import ModelRegistry
from gateway.core.access.policy import allowed, require, visible_projects
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.handoff.mirror import drift, registered_model_name
from gateway.core.handoff.outbox import NewOutboxItem, OutboxItem, attempt_dict, item_dict
from gateway.core.handoff.webhooks import backoff_s
from gateway.core.releases.domain import AliasEvent
from gateway.errors import Conflict, Forbidden, HandoffError, NotFound, StoreError
from gateway.services.handoff.config import HandoffConfig
from gateway.services.handoff.deliveries import WebhookDeliveries
from gateway.services.handoff.mlflow_jobs import MlflowJobs, links_of, unavailable
from gateway.store.handoff.handoff import HandoffStore
from gateway.store.releases.promotions import PromotionStore
from gateway.store.releases.releases import ReleaseStore
from gateway.store.runs.runs import RunStore

log = logging.getLogger(__name__)


@dataclass
class HandoffReport:
    enqueued_runs: int = 0
    done: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    dead: list[str] = field(default_factory=list)


class HandoffService:
    def __init__(
        self,
        store: HandoffStore,
        config: HandoffConfig,
        releases: ReleaseStore,
        promotions: PromotionStore,
        runs: RunStore,
        deliveries: WebhookDeliveries,
        mlflow: MlflowJobs | None,
        registry: ModelRegistry | None,
    ) -> None:
        self.store = store
        self.config = config
        self.releases = releases
        self.promotions = promotions
        self.runs = runs
        self.deliveries = deliveries
        self.mlflow = mlflow
        self.registry = registry

    # -- enqueue ----------------------------------------------------------------------------------

    def for_release(self, project: str) -> list[NewOutboxItem]:
        """The items a new release of ``project`` enqueues, in the release's own transaction (its id
        filled in by the store): its MLflow version and ``release.created`` events."""
        items = [NewOutboxItem("mlflow.release", "", project)] if self.mlflow is not None else []
        return items + self._events("release.created", project)

    def for_move(self, project: str, *, protected: bool) -> list[NewOutboxItem]:
        """The items an alias move enqueues, in the move's own transaction: the MLflow alias (protected
        aliases) and ``alias.moved`` events."""
        mirrored = self.mlflow is not None and (protected or not self.config.protected_only)
        items = [NewOutboxItem("mlflow.alias", "", project)] if mirrored else []
        return items + self._events("alias.moved", project)

    def _events(self, event_type: str, project: str) -> list[NewOutboxItem]:
        return [
            NewOutboxItem("webhook", "", project, target=e.name, event_type=event_type)
            for e in self.config.endpoints
            if e.wants(event_type, project)
        ]

    # -- work -------------------------------------------------------------------------------------

    def process_due(self) -> HandoffReport:
        """Enqueue ended runs for MLflow tracking, then try every due item once (see the module doc)."""
        report = HandoffReport()
        if self.mlflow is not None:
            runs = self.store.runs_to_track(since=self.config.track_runs_since, limit=self.config.batch)
            self.store.enqueue([NewOutboxItem("mlflow.run", rid, project) for rid, project in runs])
            report.enqueued_runs = len(runs)
        kinds = ["webhook"] + (["mlflow.release", "mlflow.alias", "mlflow.run"] if self.mlflow else [])
        for item in self.store.due(kinds=kinds, limit=self.config.batch):
            done = self.work(item)
            bucket = {"done": report.done, "dead": report.dead}.get(done.status, report.failed)
            bucket.append(done.id)
        return report

    def work(self, item: OutboxItem) -> OutboxItem:
        """One try at ``item``, recorded. Any failure of the item itself is a failed try (so one bad
        item ends dead and never blocks the others); only the gateway's database failing stops here."""
        if item.kind == "webhook":
            try:
                tried = self.deliveries.deliver(item)
            except StoreError:
                raise
            except Exception as exc:  # the event could not even be built: a failed try, kept with why
                log.exception("hand-off %s: the webhook event could not be built", item.id)
                return self._record(item, ok=False, error=unavailable(exc))
            return self._record(
                item,
                ok=tried.ok,
                error=tried.error,
                status_code=tried.status_code,
                duration_ms=tried.duration_ms,
                delivery_id=tried.delivery_id,
                body=tried.body,
            )
        started = datetime.now(UTC)
        try:
            if self.mlflow is None:
                raise HandoffError("no MLflow server is configured (GATEWAY_MLFLOW_TRACKING_URI)")
            if item.kind == "mlflow.release":
                result = self.mlflow.release(item.subject)
            elif item.kind == "mlflow.alias":
                result = self.mlflow.alias(item.subject)
            else:
                result = self.mlflow.run(item.subject)
        except StoreError:
            raise
        except Exception as exc:  # MLflow's refusal or silence (HandoffError), a record gone, a bug alike
            if not isinstance(exc, HandoffError | NotFound):
                log.exception("hand-off %s failed unexpectedly", item.id)
            took = int((datetime.now(UTC) - started).total_seconds() * 1000)
            return self._record(item, ok=False, error=unavailable(exc), duration_ms=took)
        took = int((datetime.now(UTC) - started).total_seconds() * 1000)
        return self._record(item, ok=True, result=result, duration_ms=took)

    def _record(self, item: OutboxItem, *, ok: bool, **fields: Any) -> OutboxItem:
        tries = item.attempts + 1
        dead = not ok and tries >= self.config.max_attempts
        wait = backoff_s(tries, base_s=self.config.backoff_s, cap_s=self.config.backoff_cap_s)
        next_at = None if ok or dead else datetime.now(UTC) + timedelta(seconds=wait)
        recorded = self.store.record(item.id, ok=ok, next_at=next_at, dead=dead, **fields)
        if not ok:
            why = fields.get("error", "")
            log.warning(
                "hand-off %s %s (%s) try %d failed: %s", item.kind, item.subject, item.target, tries, why
            )
        return recorded

    def resync_run(self, run_id: str, *, principal: Principal) -> dict[str, Any]:
        """Log a run to MLflow tracking now (what MLflow lacks only; a second sync logs nothing)."""
        run = self.runs.get_run(run_id)
        if not allowed(principal, "run.read", run.project):
            raise NotFound(f"no run {run_id!r}")
        require(principal, "release.create", run.project)
        if self.mlflow is None:
            raise Conflict("no MLflow server is configured (GATEWAY_MLFLOW_TRACKING_URI): nothing to sync to")
        (item,) = self.store.enqueue([NewOutboxItem("mlflow.run", run_id, run.project)])
        return item_dict(self.work(item))

    def replay(self, item_id: str, *, principal: Principal) -> dict[str, Any]:
        """Make a mirror job or delivery due again now, and try it (admins); audited."""
        if not principal.is_admin:
            raise Forbidden("replaying a hand-off is for site admins")
        item = self.store.item(item_id)
        again = self.store.replay(
            item_id,
            audit=AuditEntry(
                actor=principal.user,
                action="handoff.replay",
                target_type="handoff_item",
                target_id=item_id,
                project=item.project,
                source=principal.source,
                before={"status": item.status, "attempts": item.attempts},
                after={"kind": item.kind, "subject": item.subject, "target": item.target},
            ),
        )
        return item_dict(self.work(again))

    # -- status -----------------------------------------------------------------------------------

    def deliveries_of(
        self, subjects: list[str], *, principal: Principal, project: str
    ) -> list[dict[str, Any]]:
        """The hand-off items of these subjects (releases, moves, runs) with every try, oldest first."""
        if not allowed(principal, "release.read", project) and not allowed(principal, "run.read", project):
            raise NotFound(f"no project {project!r} that you may read")
        items = self.store.items(subjects=subjects, projects=[project])
        tries: dict[str, list[dict[str, Any]]] = {}
        for a in self.store.attempts([i.id for i in items]):
            tries.setdefault(a.item_id, []).append(attempt_dict(a))
        return [item_dict(i) | {"tries": tries.get(i.id, [])} for i in items]

    def items(
        self,
        *,
        principal: Principal,
        project: str | None = None,
        status: str | None = None,
        kind: str | None = None,
    ) -> list[dict[str, Any]]:
        """Hand-off items the caller may read (admins: all), filtered, oldest first."""
        projects = [project] if project else None
        if not principal.is_admin:
            readable = visible_projects(principal) or []
            projects = [p for p in (projects or readable) if p in readable]
        found = self.store.items(
            projects=projects,
            statuses=[status] if status else None,
            kinds=[kind] if kind else None,
        )
        return [item_dict(i) for i in found]

    def run_status(self, run_id: str, *, principal: Principal) -> dict[str, Any]:
        """A run's MLflow tracking link and hand-off items."""
        run = self.runs.get_run(run_id)
        if not allowed(principal, "run.read", run.project):
            raise NotFound(f"no run {run_id!r}")
        items = self.deliveries_of([run_id], principal=principal, project=run.project)
        tracked = next((i for i in items if i["kind"] == "mlflow.run" and i["status"] == "done"), None)
        return {
            "run_id": run_id,
            "mlflow": self.registry.base_url if self.registry else None,
            "run_url": tracked["result"].get("run_url") if tracked else None,
            "items": items,
        }

    def mirror_status(
        self, project: str, model: str, *, principal: Principal, check: bool = True
    ) -> dict[str, Any]:
        """Each release's MLflow version and each alias's mirror, the webhook deliveries, and the drift
        between MLflow and the gateway (reported, never copied back); ``check`` False: MLflow is not
        asked (the web page, which must not wait on MLflow), so drift is not checked."""
        if not allowed(principal, "release.read", project):
            raise NotFound(f"no model {project}/{model}")
        found = self.releases.model(project, model)
        releases = self.releases.releases(found.id)
        events = self.promotions.alias_events(found.id)
        items = self.deliveries_of(
            [r.id for r in releases] + [e.id for e in events], principal=principal, project=project
        )
        by_subject: dict[str, list[dict[str, Any]]] = {}
        for i in items:
            by_subject.setdefault(i["subject"], []).append(i)
        versions: dict[str, str] = {}
        rows = []
        for r in releases:
            mirror = next((i for i in by_subject.get(r.id, []) if i["kind"] == "mlflow.release"), None)
            if mirror and mirror["status"] == "done":
                versions[r.id] = str(mirror["result"].get("version"))
            rows.append(
                {
                    "version": r.version,
                    "release_id": r.id,
                    "mirror": mirror,
                    "mlflow_version": versions.get(r.id),
                    "version_url": mirror["result"].get("version_url") if mirror else None,
                    "links": vars(links_of(self.config, r)),
                    "webhooks": [i for i in by_subject.get(r.id, []) if i["kind"] == "webhook"],
                }
            )
        newest: dict[str, AliasEvent] = {}
        for e in events:
            newest[e.alias] = e  # alias_events is ordered by alias, then seq
        aliases, expected = [], {}
        for alias, e in sorted(newest.items()):
            mirror = next((i for i in by_subject.get(e.id, []) if i["kind"] == "mlflow.alias"), None)
            if mirror and mirror["status"] == "done" and (e.to_release is None or e.to_release in versions):
                expected[alias] = e.to_release
            aliases.append(
                {
                    "alias": alias,
                    "version": e.to_version,
                    "move_id": e.id,
                    "mirror": mirror,
                    "mlflow_version": versions.get(e.to_release) if e.to_release else None,
                    "webhooks": [i for i in by_subject.get(e.id, []) if i["kind"] == "webhook"],
                }
            )
        name = registered_model_name(project, model)
        out: dict[str, Any] = {
            "model": found.ref,
            "mlflow": self.registry.base_url if self.registry else None,
            "registered_model": name if self.registry else None,
            "releases": rows,
            "aliases": aliases,
            "drift": [],
            "checked": False,
            "problem": None,
        }
        if self.registry is None:
            out["problem"] = "no MLflow server is configured (GATEWAY_MLFLOW_TRACKING_URI)"
            return out
        if not check:
            return out
        try:
            observed = self.registry.observe(name)
        except HandoffError as exc:
            out["problem"] = f"drift not checked: {exc}"
            return out
        out["checked"] = True
        out["drift"] = drift(observed, expected_aliases=expected, expected_versions=versions)
        return out

    def counts(self) -> dict[str, int]:
        """Items by status (health)."""
        return self.store.counts()
